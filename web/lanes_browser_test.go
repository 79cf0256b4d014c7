package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestNewestColumnsStayVisibleInChromium: in a window too narrow for the
// seed-000 node's lanes, the newest column is on screen when the node is
// opened (the lanes are scrolled to their right end), by the elements'
// geometry: its marker lies inside the lanes' box and the window.
func TestNewestColumnsStayVisibleInChromium(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(700, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`button[data-node="`+churnNode+`"]`)),
		chromedp.Click(chromedp.CSS(`button[data-node="`+churnNode+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-node-page="`+churnNode+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#lanes tr[data-lane="applies"] button.m.apply`)),
	); err != nil {
		t.Fatal(err)
	}
	g, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => {
		const wrap = document.querySelector('#node .lanes-wrap');
		const cells = document.querySelectorAll('#lanes tr.times td');
		const newest = cells[cells.length - 1].getBoundingClientRect();
		const w = wrap.getBoundingClientRect();
		return {overflow: wrap.scrollWidth - wrap.clientWidth, wrapLeft: w.left, wrapRight: w.right,
			newestLeft: newest.left, newestRight: newest.right, window: document.documentElement.clientWidth};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("geometry: %v", g)
	if g["overflow"] <= 0 {
		t.Fatalf("the lanes fit the window (%v): the test proves nothing", g)
	}
	right := min(g["wrapRight"], g["window"])
	if g["newestRight"] > right+1 || g["newestLeft"] < g["wrapLeft"]-1 {
		t.Errorf("the newest column spans %.0f–%.0f px, off the lanes' visible %.0f–%.0f px", g["newestLeft"], g["newestRight"], g["wrapLeft"], right)
	}
}
