package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageShowsWhatRunsNowInChromium: issue 20's item 8 in a real headless
// Chromium. Opening opx, the page shows, as visible text (never only in a
// title attribute): every resource of the applied declaration with its
// state — proxy running, ca held and why, the failed container with its
// error, the other restarted as found stopped — the failed compose with
// its error, the pending module with its reason, and when opx was last
// heard of; the status table says quiet never reported, and shows its
// failed push's error. A heavy pass (the
// seed-000 marker's colour) and a failure never share a colour: the failed
// resource, the failed compose and a failing apply are one red, opx's
// first pass (heavy: it created every container) is not. It saves
// docs/img/node.png and why.png (-update rewrites them).
func TestPageShowsWhatRunsNowInChromium(t *testing.T) {
	exe := chromium(t)
	f := newNowFixture(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1500, 1000),
	)
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
	// text is what the browser renders in sel: visible text only.
	text := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}
	colour := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(`+"`"+sel+"`"+`)).color`))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return s
	}

	do("load the page, give the token, open opx",
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-status-node="opx"]`)),
		chromedp.Click(chromedp.CSS(`button[data-node="opx"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.now[data-now="opx"] #resources`)),
	)

	rows := map[string]string{
		"proxy":                   "proxy route-proxy container running unchanged",
		"ca":                      "ca route-proxy container held held would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken",
		f.failed:                  f.failed + " site container failed failed",
		f.restarted:               f.restarted + " site container restarted updated (running) found stopped behind the agent's back; started again by the last apply",
		"/var/lib/route-proxy/ca": "/var/lib/route-proxy/ca route-proxy directory held held found on this adopted node; not touched until route-proxy is taken",
	}
	for name, want := range rows {
		got := text("the row of "+name, `#resources tr[data-resource="`+name+`"]`)
		if !strings.HasPrefix(got, want) {
			t.Errorf("the row of %s reads %q, want it to start %q", name, got, want)
		}
	}
	if got := text("the failed row", `#resources tr[data-resource="`+f.failed+`"] td.reason-cell`); !strings.Contains(got, nowStartErr) {
		t.Errorf("the failed resource's why reads %q, want the error %q", got, nowStartErr)
	}
	if got := text("the counts", `section.now .now-head`); !strings.Contains(got, "1 failed 1 restarted 2 held 1 running") {
		t.Errorf("the head of what runs now reads %q", got)
	}
	head := text("opx's head", `[data-node-page="opx"]`)
	for _, want := range []string{
		"failing",
		"last compose failed", nowClash,
		"opxtypo2 pending: the latest compose failed: " + nowClash,
		"last report at 2026-",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("opx's head does not show %q:\n%s", want, head)
		}
	}
	if got := text("quiet's last seen", `tr[data-status-node="quiet"] td.seen`); got != "never reported" {
		t.Errorf("quiet's last seen reads %q, want never reported", got)
	}
	if got := text("quiet's health", `tr[data-status-node="quiet"] td.health`); !strings.HasPrefix(got, "unknown") {
		t.Errorf("quiet's health reads %q, want unknown", got)
	}
	if got := text("quiet's failed push", `tr[data-status-node="quiet"] .push-failed`); !strings.Contains(got, "bus cut") {
		t.Errorf("quiet's pushed cell reads %q, want its error shown", got)
	}
	if got := text("opx's compose in the status", `tr[data-status-node="opx"] .compose-failed`); !strings.Contains(got, nowClash) {
		t.Errorf("opx's composed cell reads %q, want the clash", got)
	}

	// Colours: a failure is red wherever it is; a heavy pass (opx's
	// first, which created every container) is another colour.
	heavy := colour("a heavy pass", `#lanes tr[data-lane="applies"] button.m.apply.heavy:not(.failing)`)
	failing := colour("a failing apply", `#lanes tr[data-lane="applies"] button.m.apply.failing`)
	for what, c := range map[string]string{
		"the failed resource's state": colour("failed state", `#resources tr.st-failed td.state`),
		"the failed compose":          colour("failed compose", `.node-head .compose-failed`),
		"a failing apply marker":      failing,
	} {
		if c == heavy {
			t.Errorf("%s and a heavy pass share the colour %s", what, c)
		}
		if c != failing {
			t.Errorf("%s is %s, a failing apply %s: a failure has one colour", what, c, failing)
		}
	}

	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.ArtifactDir(), "what-runs-now.png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)

	// The docs' screenshots (-update rewrites them): opx's page, and why
	// its restarted container is what it is.
	do("show opx's page", chromedp.ScrollIntoView(chromedp.CSS(`[data-node-page="opx"]`)))
	docShot(t, ctx, "node.png")
	do("ask why "+f.restarted,
		chromedp.Click(chromedp.CSS(`#resources button[data-why="`+f.restarted+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .why[data-why-resource="`+f.restarted+`"]`)))
	if got := text("the why panel", "#panel .why"); !strings.Contains(got, "updated (running) in opx/1") || !strings.Contains(got, "created in opx/1") {
		t.Errorf("the why panel of %s reads %q, want its update and its creation", f.restarted, got)
	}
	docShot(t, ctx, "why.png")
}
