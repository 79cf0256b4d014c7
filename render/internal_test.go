package render

import (
	"testing"
	"time"

	"meshplane/projections"
)

// The health render adds held counts to is the status projection's word
// for it, as the API carries it.
func TestHealthWordIsTheProjections(t *testing.T) {
	if healthWaitingOnTake != projections.HealthWaitingOnTake {
		t.Errorf("render's waiting health %q, the projection's %q", healthWaitingOnTake, projections.HealthWaitingOnTake)
	}
	if modulePending != projections.ModulePending {
		t.Errorf("render's pending module state %q, the projection's %q", modulePending, projections.ModulePending)
	}
}

func TestSpan(t *testing.T) {
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		from, to time.Time
		want     string
	}{
		{day, day.Add(23*time.Hour + 55*time.Minute), "2026-11-30 00:00 to 23:55"},
		{day.Add(10 * time.Second), day.Add(50 * time.Second), "2026-11-30 00:00:10 to 00:00:50"},
		{day.Add(23 * time.Hour), day.Add(25 * time.Hour), "2026-11-30 23:00 to 2026-12-01 01:00"},
		{day.In(time.FixedZone("CET", 3600)), day.Add(time.Hour), "2026-11-30 00:00 to 01:00"},
	} {
		if got := span(c.from, c.to); got != c.want {
			t.Errorf("span(%v, %v) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:0123456789abcdef0123": "sha256:0123456789ab",
		"sha256:0123456789ab":         "sha256:0123456789ab",
		"sha256:01":                   "sha256:01",
		"no-colon-at-all-and-long":    "no-colon-at-all-and-long",
		"":                            "",
	} {
		if got := short(in); got != want {
			t.Errorf("short(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStamp(t *testing.T) {
	if got := stamp(time.Time{}); got != "-" {
		t.Errorf("stamp(zero) = %q, want -", got)
	}
	if got := stamp(time.Date(2026, 11, 30, 1, 2, 3, 4, time.FixedZone("X", -3600))); got != "2026-11-30 02:02:03" {
		t.Errorf("stamp = %q, want it in UTC", got)
	}
}
