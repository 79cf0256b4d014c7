package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive: $MESH_CHROMIUM, else Debian's
// chromium (scripts/ensure-chromium.sh installs it) or another on PATH.
// Without one the test is skipped, loudly; under CI=true it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MESH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (install Debian's chromium: sh scripts/ensure-chromium.sh, or set MESH_CHROMIUM): the page is not tested in a browser"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED LOUDLY: " + msg)
	return ""
}

// TestPageInChromium loads the page in a real headless Chromium against a
// controller that replayed seed 000's incident and seed 002's holds: it
// gives the token, sees every node's status and seed 002's held counts,
// opens the seed-000 node, sees its churn band and opens the evidence,
// compares two of its declarations, and follows a pass arriving live. It
// saves screenshots in the test's artifact directory (go test -artifacts
// keeps them; the log says where).
func TestPageInChromium(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in containers and CI
		chromedp.DisableGPU,
		chromedp.WindowSize(1500, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	// One bound for the whole walk: a loaded machine is slow, never stuck.
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	dir := t.ArtifactDir()
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	text := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return s
	}
	eval := func(step, expr string, v any) {
		t.Helper()
		var err error
		switch v := v.(type) {
		case *string:
			*v, err = chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		case *int:
			*v, err = chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		case *[]string:
			*v, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](expr))
		default:
			t.Fatalf("eval into %T", v)
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}

	do("load the page and give the token",
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="novox"]`)),
	)
	// The page refreshes what it shows on each position the event stream
	// announces; reading it while it swaps would race. waitRendered waits
	// until it has rendered pos, after which nothing swaps until the store
	// grows.
	waitRendered := func(step string, pos uint64) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
			`Number(document.getElementById('live').dataset.rendered || 0) >= `+strconv.FormatUint(pos, 10),
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("%s: the page did not render position %d: %v", step, pos, err)
		}
	}
	start, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitRendered("the first live refresh", start)

	var loginShown bool
	if loginShown, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('login').offsetParent !== null`)); err != nil {
		t.Fatal(err)
	}
	if loginShown {
		t.Error("the token form is still shown once the token is given")
	}
	var stored string
	eval("the token is kept in the tab's session", `sessionStorage.getItem('meshplane-token')`, &stored)
	if stored != testToken {
		t.Errorf("sessionStorage holds %q, want the token", stored)
	}

	if got := text("seed 002's holds in the status", `tr[data-status-node="novox"] td.held`); got != "route-proxy: 2" {
		t.Errorf("novox's held for take reads %q, want %q", got, "route-proxy: 2")
	}
	if got := text("novox's health", `tr[data-status-node="novox"] td.health`); got != "waiting-on-take" {
		t.Errorf("novox's health reads %q, want waiting-on-take", got)
	}
	for _, n := range []string{"g14", churnNode} {
		do("every node on one screen", chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="`+n+`"]`)))
	}

	// Seed 000: the churn band, and its evidence on click.
	do("open the seed-000 node",
		chromedp.Click(chromedp.CSS(`button[data-node="`+churnNode+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-node-page="`+churnNode+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#lanes tr.bands td.band button.band-button`)),
	)
	band := text("the churn band", `#lanes tr.bands td.band button.band-button`)
	if !strings.Contains(band, "churn loop and flip") {
		t.Errorf("the band reads %q, want a churn loop and flip", band)
	}
	var shaded int
	eval("shaded cells in the lanes", `document.querySelectorAll('#lanes tr.lane td.band').length`, &shaded)
	if shaded == 0 {
		t.Error("no lane cell is shaded by the band")
	}
	do("open the evidence",
		chromedp.Click(chromedp.CSS(`#lanes tr.bands td.band button.band-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .failed-reads`)),
	)
	evidence := text("the evidence", "#panel-body")
	for _, want := range []string{
		"node g14", "the database system is not yet accepting connections", // failed reads
		"hosts",                      // fields
		"control/101", "control/102", // declarations
		flipName, // the routed name that left and came back
	} {
		if !strings.Contains(evidence, want) {
			t.Errorf("the evidence does not mention %q:\n%s", want, evidence)
		}
	}
	shot("churn-evidence.png")

	do("compare the flip's declarations",
		chromedp.Click(chromedp.CSS(`#panel button[data-diff-from="control/101"][data-diff-to="control/102"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#diff .diff-result`)),
	)
	if got := text("the roster diff", "#diff .diff-result ul.removed"); !strings.Contains(got, flipName) {
		t.Errorf("the diff's removed names read %q, want %s", got, flipName)
	}
	do("compare any two declarations with the form",
		chromedp.SetValue(chromedp.ID("diff-from"), "control/101"),
		chromedp.SetValue(chromedp.ID("diff-to"), "control/103"),
		chromedp.Click(chromedp.CSS(`#diff-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#diff .diff-result[data-diff-to="control/103"]`)),
	)
	if got := text("the roster diff of the form", "#diff .diff-result"); !strings.Contains(got, "The same roster and resources.") {
		t.Errorf("control/101 → control/103 (the same digest) reads %q", got)
	}

	// Seed 002 in the lanes: the held counts of each apply, and the idle
	// passes as one span.
	do("open novox",
		chromedp.Click(chromedp.ID("panel-close")),
		chromedp.Click(chromedp.CSS(`button[data-node="novox"]`)),
		// The node's head and lanes are swapped in together; the lanes
		// of the node shown before are gone once the head is novox's.
		chromedp.WaitVisible(chromedp.CSS(`[data-node-page="novox"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#lanes tr[data-lane="applies"] button.m.apply`)),
	)
	var held []string
	eval("held counts of the applies",
		`[...document.querySelectorAll('#lanes tr[data-lane="applies"] button.m.apply')].map(b => b.dataset.held)`, &held)
	if len(held) != 2 || held[0] != "2" || held[1] != "2" {
		t.Errorf("novox's apply markers hold %v, want [2 2] (the first pass, then the idle span)", held)
	}
	if got := text("the idle span", `#lanes button.m.apply.span`); got != "nothing changed ×2 · held 2" {
		t.Errorf("the idle span reads %q", got)
	}

	// Live: a pass appended now reaches the page through the event stream.
	head, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.mesh.Pass(ctx, "novox"); err != nil {
		t.Fatal(err)
	}
	after, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after <= head {
		t.Fatalf("the pass appended nothing (head %d)", head)
	}
	waitRendered("the new pass", after)
	if got := text("the idle span after the pass", `#lanes button.m.apply.span`); got != "nothing changed ×3 · held 2" {
		t.Errorf("after one more quiet pass the span reads %q, want ×3", got)
	}
	shot("novox-held.png")
}
