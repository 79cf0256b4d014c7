package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestOverviewAtScaleInChromium: the overview of a thousand nodes (sim's
// generated mesh after one pass: newScaleFixture) in a real headless
// Chromium. The status fragment is small and the page a screen or so
// tall, not the 805 KB and 42,193 px of one flat list; the failing node
// is the first row, not row 701; every node is counted by state at the
// top, and a count filters; the filter narrows by name and by module;
// the next page shows the next fifty; each row shows its modules and
// containers, the failed container in the failure colour. It saves
// docs/img/overview.png (-update rewrites it).
func TestOverviewAtScaleInChromium(t *testing.T) {
	exe := chromium(t)
	start := time.Now()
	f := newScaleFixture(t)
	built := time.Since(start)

	_, fragment := f.get(t, "/ui/status", testToken)
	t.Logf("the status fragment at %d nodes: %d bytes", scaleWorkload.Nodes+1, len(fragment))
	if len(fragment) > 100<<10 {
		t.Errorf("the status fragment is %d bytes, want at most 100 KiB (a page of nodes)", len(fragment))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1500, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	rows := func(step string) []string {
		t.Helper()
		rs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-status-node]')].map(tr => tr.dataset.statusNode)`))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return rs
	}
	text := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	// shown waits until the overview says it shows want ("Nodes 1–10 of
	// 10 matching"): the fragment of the last filter is in.
	shown := func(step, want string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
			`(document.getElementById('status-shown') || {textContent: ''}).textContent.includes(`+"`"+want+"`"+`)`,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("%s: the overview never said %q (it says %q): %v", step, want, text(step, "#status-shown"), err)
		}
	}

	do("log in",
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#state-counts`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node]`)),
	)
	// The first live refresh swaps the overview in again; read it after.
	head, err := f.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`Number(document.getElementById('live').dataset.rendered || 0) >= `+strconv.FormatUint(head, 10),
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the page did not render position %d: %v", head, err)
	}
	height, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page at %d nodes: %d px tall", scaleWorkload.Nodes+1, height)
	if height > 6000 {
		t.Errorf("the page is %d px tall, want at most 6,000 (a page of nodes)", height)
	}
	if rs := rows("the first page"); len(rs) != 50 || rs[0] != scaleFailing {
		t.Errorf("the first page has %d rows starting %v, want 50 starting with the failing %s", len(rs), rs[:min(3, len(rs))], scaleFailing)
	}
	counts := text("the counts", "#state-counts")
	for _, want := range []string{"1 failing", "1 unknown", "19 waiting-on-take", "980 converged", "1 with a module pending"} {
		if !strings.Contains(counts, want) {
			t.Errorf("the counts read %q, want %q among them", counts, want)
		}
	}
	failed := `tr[data-status-node="` + scaleFailing + `"] td.runs .st[data-state="failed"]`
	if got := text("the failed container", failed); got != "failed" {
		t.Errorf("the failing node's failed container reads %q", got)
	}
	colour, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+failed+`')).color`))
	if err != nil || colour != "rgb(185, 28, 28)" {
		t.Errorf("the failed container's state is %q (%v), want the failure colour rgb(185, 28, 28)", colour, err)
	}
	docShot(t, ctx, "overview.png")

	do("filter by a count", chromedp.Click(chromedp.CSS(`#state-counts button[data-status-state="failing"]`)))
	shown("the failing count", "Nodes 1–1 of 1 matching state failing")
	if rs := rows("failing"); len(rs) != 1 || rs[0] != scaleFailing {
		t.Errorf("filtered to failing: %v, want %s alone", rs, scaleFailing)
	}
	do("every node again, then by name",
		chromedp.Click(chromedp.CSS(`#state-counts button[data-status-state=""]`)),
		chromedp.SendKeys(chromedp.ID("filter-name"), "node-99"),
		chromedp.Click(chromedp.ID("filter-go")))
	shown("by name", "Nodes 1–10 of 10 matching name")
	for _, r := range rows("by name") {
		if !strings.HasPrefix(r, "node-99") {
			t.Errorf("filtered by name node-99: row %s", r)
		}
	}
	do("by module", chromedp.Click(chromedp.ID("filter-clear")))
	shown("cleared", "Nodes 1–50 of 1001, what is wrong first")
	do("by module", chromedp.SendKeys(chromedp.ID("filter-module"), "mod-039"), chromedp.Click(chromedp.ID("filter-go")))
	shown("by module", "matching module mod-039")
	rs := rows("by module")
	if len(rs) == 0 || rs[0] != scalePending {
		t.Errorf("filtered by mod-039: %v, want %s (its module pending) first", rs, scalePending)
	}
	for _, r := range rs {
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-status-node="`+r+`"] td.runs [data-module="mod-039"]').length`)); err != nil || n != 1 {
			t.Errorf("filtered by mod-039: %s shows it %d times (%v)", r, n, err)
		}
	}
	do("the next page", chromedp.Click(chromedp.ID("filter-clear")))
	shown("cleared again", "Nodes 1–50 of 1001")
	do("the next page", chromedp.Click(chromedp.CSS(`#status-paging button[data-status-page="2"]`)))
	shown("page 2", "Nodes 51–100 of 1001")
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil || !strings.Contains(link, "page=2") {
		t.Errorf("the link %q (%v) does not hold the page", link, err)
	}
	t.Logf("the mesh built in %s, the whole test %s", built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
