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
// brings the mesh of now back.
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
}
