package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageTimeControlInChromium: issue 21's time control in a real
// headless Chromium. Typing position 1 shows the mesh as it stood after
// the first event (opx registered, quiet not yet), says so, and puts the
// moment in the link; opening that link shows the same moment; "now"
// brings the mesh of now back. The moment says it is one (issue 33): the
// header's indicator, a banner with a way back to live, opx's head and
// its "What ran then".
func TestPageTimeControlInChromium(t *testing.T) {
	exe := chromium(t)
	f := newNowFixture(t)
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
	rows := func(step string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-status-node]').length`))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return n
	}
	visible := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	do("log in: the mesh now",
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="quiet"]`)),
	)
	if n := rows("now"); n != 2 {
		t.Fatalf("now: %d nodes, want opx and quiet", n)
	}
	do("move to position 1",
		chromedp.SendKeys(chromedp.ID("at"), "1"),
		chromedp.Click(chromedp.ID("at-go")),
		chromedp.WaitVisible(chromedp.ID("as-of")),
	)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("as-of"), chromedp.NodeVisible))
	if err != nil || !strings.HasPrefix(text, "as of position 1 (") {
		t.Errorf("the header says %q (%v), want as of position 1", text, err)
	}
	if n := rows("at 1"); n != 1 {
		t.Errorf("at position 1: %d nodes, want opx alone", n)
	}
	// A moment says it is one everywhere (issue 33): the header's live
	// indicator, a banner with the way back, the node's head, what ran.
	if got := visible("the header's indicator", "#live"); got != "as of 1 · not live" {
		t.Errorf("the header's indicator reads %q, want %q", got, "as of 1 · not live")
	}
	if got := visible("the banner", "#as-of-banner"); !strings.Contains(got, "a past moment") || !strings.Contains(got, "back to live") {
		t.Errorf("the banner reads %q, want the moment and the way back to live", got)
	}
	do("open opx at position 1",
		chromedp.Click(chromedp.CSS(`button[data-node="opx"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.now.then[data-now="opx"]`)))
	if got := visible("opx's head", `[data-node-page="opx"]`); !strings.Contains(got, "as of position 1 (") || strings.Contains(got, "live") {
		t.Errorf("opx's head reads %q, want the moment and not live", got)
	}
	if got := visible("what ran", `section.now h3`); !strings.HasPrefix(got, "What ran then") {
		t.Errorf("the panel's title reads %q, want What ran then", got)
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil || !strings.Contains(link, "at=1") {
		t.Fatalf("the link %q (%v) does not hold the moment", link, err)
	}
	do("open the link", chromedp.Navigate("about:blank"), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("as-of")))
	if n := rows("the link"); n != 1 {
		t.Errorf("the link: %d nodes, want opx alone", n)
	}
	do("back to now", chromedp.Click(chromedp.ID("at-now")), chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="quiet"]`)))
	if n := rows("now again"); n != 2 {
		t.Errorf("now again: %d nodes, want 2", n)
	}
	do("the banner's way back to live",
		chromedp.SetValue(chromedp.ID("at"), "1"),
		chromedp.Click(chromedp.ID("at-go")),
		chromedp.WaitVisible(chromedp.ID("back-to-live")),
		chromedp.Click(chromedp.ID("back-to-live")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="quiet"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.now:not(.then)[data-now="opx"]`)))
	if got := visible("the header once live", "#live"); !strings.HasPrefix(got, "live") {
		t.Errorf("back to live, the header's indicator reads %q", got)
	}
	if got := visible("what runs", `section.now h3`); got != "What runs now" {
		t.Errorf("back to live, the panel's title reads %q", got)
	}
}
