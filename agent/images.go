package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"meshplane/declaration"
	"meshplane/internal/safego"
	"meshplane/wire"
)

// Images before anything stops (issue 34, "roll-outs that wait"). A
// runtime on a real engine pulls an image when it creates a container;
// replacing a container removes the old one first, so an image that could
// not be pulled used to leave the service down until a revert. An apply
// on a runtime that is an ImagePuller therefore pulls every image its
// plan's creates and replaces need before it stops, removes or creates
// anything (execute). A pull that fails:
//
//   - fails each container that needed the image, naming it; a container
//     it would have replaced is left running, untouched;
//   - holds back the removals of that module's containers that are no
//     longer declared (a renamed container keeps serving), each failed
//     naming the image;
//   - touches nothing of another module, or of the same module that needs
//     no missing image.
//
// A dry run (mesh plan) asks the same runtime whether each image a create
// or replace needs is present, or could be pulled, and says so in the
// Preview (Images), pulling nothing.
//
// A runtime that is not an ImagePuller (the simulated one) holds every
// image: nothing is pulled or checked, and the Preview has no Images.

// ImagePuller is the part of a Runtime on a real engine that makes sure of
// images ahead of a roll-out.
type ImagePuller interface {
	// PullImage makes sure the engine holds ref, pulling it when it does
	// not (bounded by the runtime's own pull timeout). An image that
	// cannot be had is an error naming it.
	PullImage(ctx context.Context, ref string) error
	// CheckImage says whether ref is present on the engine, or could be
	// pulled, without pulling it: State ImagePresent, ImagePullable or
	// ImageUnavailable (Detail says why). An error is a failure to look.
	CheckImage(ctx context.Context, ref string) (ImageCheck, error)
}

// The states of an ImageCheck (wire.ImageCheck).
const (
	ImagePresent     = wire.ImagePresent
	ImagePullable    = wire.ImagePullable
	ImageUnavailable = wire.ImageUnavailable
	ImageUnknown     = wire.ImageUnknown
)

// ErrImageUnavailable means an image a roll-out needs could not be pulled:
// nothing that depended on it was stopped.
var ErrImageUnavailable = errors.New("image unavailable")

// ImageCheck is what a dry run found of one image an apply would need
// (wire.ImageCheck, part of the Preview's wire format).
type ImageCheck = wire.ImageCheck

// MaxImageDetail bounds an ImageCheck's Detail.
const MaxImageDetail = wire.MaxImageDetail

// neededImages are the images the plan's creates and replaces of
// containers need, each with its containers, in order of first need. It is
// pure.
func neededImages(p Plan) ([]string, map[string][]string) {
	var order []string
	by := map[string][]string{}
	for _, s := range p.Steps {
		if s.Kind != declaration.KindContainer || s.Resource.Container == nil {
			continue
		}
		if s.Action != Create && s.Action != Replace {
			continue
		}
		img := s.Resource.Container.Image
		if _, ok := by[img]; !ok {
			order = append(order, img)
		}
		by[img] = append(by[img], s.Name)
	}
	return order, by
}

// pullFirst pulls every image plan's creates and replaces need, when rt is
// an ImagePuller, and returns what may not be carried out: each step
// (by name) that must not run, with its error. See the comment at the top
// of this file.
func pullFirst(ctx context.Context, rt Runtime, plan Plan) map[string]error {
	pu, ok := rt.(ImagePuller)
	if !ok {
		return nil
	}
	order, by := neededImages(plan)
	failed := map[string]error{}
	missing := map[string]string{} // module → an image of it that could not be pulled
	for _, img := range order {
		err := pu.PullImage(ctx, img)
		if err == nil {
			continue
		}
		for _, name := range by[img] {
			failed[name] = fmt.Errorf("image %s could not be pulled, so nothing was stopped or replaced: %w: %w", img, ErrImageUnavailable, err)
		}
		for _, s := range plan.Steps {
			if slices.Contains(by[img], s.Name) {
				if _, seen := missing[s.Module]; !seen {
					missing[s.Module] = img
				}
			}
		}
	}
	for _, s := range plan.Steps {
		if s.Action != Remove {
			continue
		}
		if img, ok := missing[s.Module]; ok && s.Module != "" {
			failed[s.Name] = fmt.Errorf("remove %s: kept running: module %s's new image %s could not be pulled: %w", s.Name, s.Module, img, ErrImageUnavailable)
		}
	}
	return failed
}

// ImageCheckBudget bounds how long a dry run waits for its images'
// checks, all asked at once: the controller waits for a dry run's answer
// only a few seconds (controller.DefaultDryRunTimeout), and an image whose
// registry did not answer in time is unknown, said so, rather than the
// whole plan unanswered.
const ImageCheckBudget = 3 * time.Second

// checkImages asks rt, when it is an ImagePuller, about every image plan's
// creates and replaces need (a dry run's Images), at once, within
// ImageCheckBudget.
func checkImages(ctx context.Context, rt Runtime, plan Plan) []ImageCheck {
	pu, ok := rt.(ImagePuller)
	if !ok {
		return nil
	}
	order, by := neededImages(plan)
	out := make([]ImageCheck, len(order))
	cctx, cancel := context.WithTimeout(ctx, ImageCheckBudget)
	defer cancel()
	var wg sync.WaitGroup
	for i, img := range order {
		out[i] = ImageCheck{Image: img, State: ImageUnknown, Detail: fmt.Sprintf("not checked within %v", ImageCheckBudget), Containers: slices.Sorted(slices.Values(by[img]))}
		done := make(chan ImageCheck, 1) // never blocks the checker left behind
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case ic := <-done:
				ic.Image, ic.Containers, ic.Detail = img, out[i].Containers, boundDetail(ic.Detail)
				out[i] = ic
			case <-cctx.Done():
			}
		}()
		go func() {
			var ic ImageCheck
			// A check that panics is that image's unknown, never the agent's end.
			err := safego.Call("agent.checkimage", nil, func() (err error) { // logged and counted
				ic, err = pu.CheckImage(cctx, img)
				return err
			})
			if err != nil {
				ic = ImageCheck{State: ImageUnknown, Detail: err.Error()}
			}
			done <- ic
		}()
	}
	wg.Wait()
	return out
}

func boundDetail(s string) string {
	if len(s) <= MaxImageDetail {
		return s
	}
	cut := MaxImageDetail
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}
