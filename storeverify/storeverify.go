// Package storeverify is mesh store verify without the CLI: it checks a
// local data directory, read-only, and reports what it found, each check
// done by the owner of the format it checks:
//
//   - the bolt event store, DATA/events.db (boltstore.Verify: bbolt's pages
//     and consistency, every record's checksum and position, the indexes,
//     the head);
//   - then, only if the store is sound (they are checked against it), the
//     cache files beside it, projections.snap and timeline.db
//     (snapstore.Verify);
//   - or, instead, an agent's outbox (agent.CheckOutbox).
//
// Beside damage, a sound store's history is read for what the door should
// have refused and the readers describe instead (Findings): an apply
// report whose held_since names no held list (written by an older build,
// issue 31), named by position, node and held_since. A finding is no
// damage: status, timeline and export read such a report with its holds
// unknown, and verify exits 0 for it.
//
// A Report says what was checked and what is damaged (WriteText, the text
// mesh store verify prints) and is an error when anything is (Err). It
// reads files and changes none.
package storeverify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/projections/snapstore"
)

// ErrStoreDamaged is a Report's error when the event store is damaged (the
// report says what).
var ErrStoreDamaged = errors.New("the store file is damaged")

// ErrCacheDamaged is a Report's error when the event store is sound but a
// cache file beside it is damaged (the report says which; nothing is lost,
// the next query rebuilds it).
var ErrCacheDamaged = errors.New("a cache file beside the store is damaged")

// ErrAgentDataDamaged is an AgentReport's error when a file of the agent's
// outbox is damaged.
var ErrAgentDataDamaged = errors.New("a file of the agent's outbox is damaged")

// Report is what Data found in a data directory.
type Report struct {
	Store *boltstore.Report
	// Caches are the cache files' reports; nil when they were not checked
	// (the store is damaged).
	Caches []snapstore.FileReport
	// Findings are the events the door should have refused, the first
	// maxFindings of them (MoreFindings: how many beyond).
	Findings     []Finding
	MoreFindings int
}

// Finding is an event of a sound store that the door should have refused:
// an apply report whose held_since names no held list.
type Finding struct {
	Position  uint64
	Node      string
	HeldSince string
	Err       error
}

func (f Finding) String() string {
	return fmt.Sprintf("position %d, node %s: apply report's held_since %s names no held list (its holds read as unknown)",
		f.Position, strconv.Quote(f.Node), strconv.Quote(f.HeldSince))
}

// maxFindings bounds the findings a Report names.
const maxFindings = 100

// Data checks the event store of the data directory dir and, if it is
// sound, the cache files beside it, read-only (it runs beside other reads,
// not beside a writer). A report is returned with any error that stopped
// the checks after the store's, so that what was checked is said.
func Data(ctx context.Context, dir string) (*Report, error) {
	path := storeurl.Path(dir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no event store at %s (run 'mesh up' first, or pass --data)", path)
	}
	st, err := boltstore.Verify(ctx, path)
	if err != nil {
		return nil, err
	}
	r := &Report{Store: st}
	if !st.OK() {
		return r, nil
	}
	store, err := storeurl.Open(ctx, string(storeurl.Bolt), storeurl.Options{Data: dir, ReadOnly: true})
	if err != nil {
		return r, err
	}
	defer store.Close()
	caches, err := snapstore.Verify(ctx, store, events.NewRegistry(), dir)
	if err != nil {
		return r, err
	}
	r.Caches = caches
	if err := r.findHeld(ctx, store); err != nil {
		return r, err
	}
	return r, nil
}

// findHeld reads every apply report of store that gives held_since and
// notes, as a Finding, each whose held_since names no held list
// (events.Public resolves it as export does: the last held list seen on
// the stream, else through the id index).
func (r *Report) findHeld(ctx context.Context, store events.Store) error {
	reg := events.NewRegistry()
	ir, _ := store.(events.IDReader)
	pub := events.NewPublic(reg, ir)
	head, err := store.Head(ctx)
	if err != nil {
		return fmt.Errorf("storeverify: head: %w", err)
	}
	for pos := uint64(0); pos < head; {
		page, err := store.ReadAll(ctx, pos, 4096)
		if err != nil {
			return fmt.Errorf("storeverify: read after %d: %w", pos, err)
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			pos = ev.Position
			if ev.Type != events.TypeApplyReported {
				continue
			}
			_, err := pub.Event(ctx, ev)
			switch {
			case errors.Is(err, events.ErrHeldUnresolved):
				if len(r.Findings) == maxFindings {
					r.MoreFindings++
					continue
				}
				f := Finding{Position: ev.Position, Node: strings.TrimPrefix(ev.Stream, "node-"), Err: err}
				if a, derr := events.DecodeAs[events.ApplyReported](reg, ev); derr == nil {
					f.HeldSince = a.HeldSince
					if a.Node != "" {
						f.Node = a.Node
					}
				}
				r.Findings = append(r.Findings, f)
			case err != nil:
				return fmt.Errorf("storeverify: %w", err)
			}
		}
	}
	return nil
}

// damage counts the event store's damage.
func (r *Report) damage() int { return len(r.Store.Damage) + r.Store.MoreDamage }

// Err is ErrStoreDamaged, ErrCacheDamaged naming the damaged files, or nil.
func (r *Report) Err() error {
	if !r.Store.OK() {
		return fmt.Errorf("%w: %d problem(s), listed above", ErrStoreDamaged, r.damage())
	}
	var damaged []string
	for _, c := range r.Caches {
		if c.Damage != "" {
			damaged = append(damaged, c.Name)
		}
	}
	if len(damaged) > 0 {
		return fmt.Errorf("%w: %s (the event store is sound: nothing is lost; mesh rebuild rebuilds it)", ErrCacheDamaged, strings.Join(damaged, ", "))
	}
	return nil
}

// WriteText writes the report as mesh store verify prints it.
func (r *Report) WriteText(w io.Writer) {
	rep := r.Store
	fmt.Fprintf(w, "store %s: %d bytes", rep.Path, rep.Size)
	if rep.Layout != 0 {
		fmt.Fprintf(w, ", layout %d, head %d", rep.Layout, rep.Head)
	}
	fmt.Fprintln(w)
	for _, c := range rep.Checked {
		fmt.Fprintf(w, "  %s\n", c)
	}
	if !rep.OK() {
		fmt.Fprintf(w, "\ndamaged (%d):\n", r.damage())
		for _, d := range rep.Damage {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if rep.MoreDamage > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", rep.MoreDamage)
		}
		fmt.Fprintln(w, "\ncache files: not checked (they are checked against the event store)")
		return
	}
	fmt.Fprintln(w, "no damage found")
	for _, c := range r.Caches {
		writeCache(w, c)
	}
	if n := len(r.Findings) + r.MoreFindings; n > 0 {
		fmt.Fprintf(w, "\nfindings (%d): history the report door now refuses, read as described\n", n)
		for _, f := range r.Findings {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if r.MoreFindings > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", r.MoreFindings)
		}
	}
}

// writeCache writes what was found of one cache file.
func writeCache(w io.Writer, r snapstore.FileReport) {
	fmt.Fprintf(w, "\ncache %s: ", r.Path)
	switch {
	case r.Missing && r.Name == snapstore.SnapshotFile:
		fmt.Fprintln(w, "none yet (local queries save one once they fold more than 1,024 new events)")
		return
	case r.Missing:
		fmt.Fprintln(w, "none yet (the next status, node show, timeline or churn makes it)")
		return
	case r.Damage == "" && r.Rebuild == "":
		fmt.Fprintf(w, "%d bytes, position %d\n", r.Size, r.Position)
	default:
		fmt.Fprintf(w, "%d bytes\n", r.Size)
	}
	for _, c := range r.Checked {
		fmt.Fprintf(w, "  %s\n", c)
	}
	switch {
	case r.Damage != "":
		fmt.Fprintf(w, "  DAMAGED: %s\n  the next query removes it and rebuilds it from the event store (mesh rebuild does it now)\n", r.Damage)
	case r.Rebuild != "":
		fmt.Fprintf(w, "  the next query rebuilds it: %s\n", r.Rebuild)
	case r.Position == 0:
		fmt.Fprintln(w, "  sound, and empty")
	default:
		fmt.Fprintln(w, "  sound: local queries resume from it")
	}
}

// AgentReport is what Agent found in an agent's outbox.
type AgentReport struct {
	Outbox string
	agent.OutboxCheck
}

// Agent checks the outbox directory of an agent's data directory (see
// agent.CheckOutbox), changing nothing.
func Agent(outbox string) (*AgentReport, error) {
	c, err := agent.CheckOutbox(outbox)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no agent outbox at %s (give the agent's --data)", outbox)
	}
	if err != nil {
		return nil, err
	}
	return &AgentReport{Outbox: outbox, OutboxCheck: c}, nil
}

// Err is ErrAgentDataDamaged when a file is damaged, else nil.
func (r *AgentReport) Err() error {
	if len(r.Damaged) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d file(s), listed above", ErrAgentDataDamaged, len(r.Damaged))
}

// WriteText writes the report as mesh store verify --agent-data prints it.
func (r *AgentReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "agent outbox %s\n", r.Outbox)
	fmt.Fprintf(w, "  reports kept: %d, each with a matching checksum", r.Reports)
	if r.Legacy > 0 {
		fmt.Fprintf(w, " (%d of version 1, without one to check)", r.Legacy)
	}
	fmt.Fprintf(w, "\n  state: %s\n", r.State)
	for _, a := range r.Aside {
		fmt.Fprintf(w, "  passed over before: %s (moved aside, never read)\n", a)
	}
	if len(r.Damaged) == 0 {
		fmt.Fprintln(w, "no damage found")
		return
	}
	fmt.Fprintf(w, "\ndamaged (%d): the agent moves each aside and logs it when it next reads its outbox\n", len(r.Damaged))
	for _, d := range r.Damaged {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

// ErrUnsupported is the refusal of a store that is not the bolt file:
// another store is checked by its server.
var ErrUnsupported = errors.New("store verify works on the bolt store only")

// Supported refuses a store URL (storeurl) that is not the bolt file.
func Supported(url string) error {
	if kind, _ := storeurl.KindOf(url); kind != storeurl.Bolt {
		return fmt.Errorf("%w: mesh store verify checks the bolt file's pages, records and indexes; "+
			"a %s store is checked by its server (PostgreSQL: its own checksums and amcheck; KurrentDB: its scavenge and verification tools). "+
			"Give --store bolt (or none) to verify DATA/events.db, or --anchor LINE (a line of mesh store head) to check this store's hash chain", ErrUnsupported, kind)
	}
	return nil
}

// DataText is Data, its report written to w as mesh store verify prints
// it: an error when a check could not run or anything is damaged.
func DataText(ctx context.Context, w io.Writer, dir string) error {
	rep, err := Data(ctx, dir)
	if rep != nil {
		rep.WriteText(w)
	}
	if err != nil {
		return err
	}
	return rep.Err()
}

// AgentText is Agent on the outbox of the agent data directory dir, its
// report written to w as mesh store verify --agent-data prints it.
func AgentText(w io.Writer, dir string) error {
	rep, err := Agent(filepath.Join(dir, agentd.OutboxDir))
	if err != nil {
		return err
	}
	rep.WriteText(w)
	return rep.Err()
}
