package flagcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check Check
		good  []string
		bad   map[string]string // value → what the error says
	}{
		{"ListenAddr", ListenAddr,
			[]string{":7480", "127.0.0.1:0", "[::1]:80", "host-1.example:65535"},
			map[string]string{"127.0.0.1:99999": "out of range", "127.0.0.1": "want HOST:PORT", "300.1.1.1:80": "neither", "a_b:80": "neither", ":+1": "not a number"}},
		{"DialAddr", DialAddr,
			[]string{"10.0.0.1:5000"},
			map[string]string{"10.0.0.1:0": "out of range: want 1 to 65535"}},
		{"URLOf", URLOf("http", "https"),
			[]string{"https://ctl:7480", "http://127.0.0.1/x"},
			map[string]string{"nats://x:1": "want a URL starting http:// or https://", "https://": "names no host", "https://x:": "port is empty", "https://x:70000": "out of range"}},
		{"ListOf", ListOf(URLOf("nats")),
			[]string{"nats://a:1,nats://b:2"},
			map[string]string{"nats://a:1,http://b": `"http://b": want a URL starting nats://`}},
		{"Optional", Optional(Positive), []string{"", "5m"}, map[string]string{"0s": "above 0"}},
		{"Positive", Positive, []string{"1ns", "1h"}, map[string]string{"x": "want a duration", "-1s": "above 0"}},
		{"AtLeast", AtLeast(1), []string{"1", "0x10"}, map[string]string{"0": "want 1 or more", "one": "whole number"}},
		{"OneOf", OneOf("sim", "docker", "auto"), []string{"sim"}, map[string]string{"k8s": "want sim, docker or auto"}},
		{"RFC3339", RFC3339, []string{"2026-09-29T23:02:00Z"}, map[string]string{"23:02": "RFC 3339"}},
		{"Since", Since, []string{"2026-09-29T23:02:00Z", "10m", "1h30m", "90s"},
			map[string]string{"23:02": "nor a duration", "0s": "above 0", "-10m": "above 0", "10 min": "nor a duration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range tc.good {
				if err := tc.check(v); err != nil {
					t.Errorf("%q refused: %v", v, err)
				}
			}
			for v, want := range tc.bad {
				err := tc.check(v)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%q: got %v, want an error saying %q", v, err, want)
				}
			}
		})
	}
}

func TestInstallRefusesAsParsed(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("listen", ":7480", "")
	Install(fs, map[string]Check{"listen": ListenAddr})
	err := fs.Parse([]string{"--listen", "127.0.0.1:99999"})
	if err == nil || !strings.Contains(err.Error(), `invalid argument "127.0.0.1:99999" for "--listen" flag: port 99999 is out of range`) {
		t.Fatalf("got %v", err)
	}
	if err := fs.Parse([]string{"--listen", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.GetString("listen"); v != "127.0.0.1:1" {
		t.Fatalf("the checked flag reads %q", v)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a check of an undeclared flag did not panic")
		}
	}()
	Install(fs, map[string]Check{"nosuch": ListenAddr})
}

// TestTime: a checked RFC 3339 value is its time; "" is the zero time.
func TestTime(t *testing.T) {
	if got := Time("2026-09-29T23:02:00+02:00"); !got.Equal(time.Date(2026, 9, 29, 21, 2, 0, 0, time.UTC)) {
		t.Errorf("Time = %v", got)
	}
	if got := Time(""); !got.IsZero() {
		t.Errorf(`Time("") = %v, want zero`, got)
	}
}

// TestSinceTime: a duration stands for that long before now, a time for
// itself, and "" for none.
func TestSinceTime(t *testing.T) {
	now := time.Date(2026, 12, 7, 18, 53, 20, 0, time.UTC)
	for s, want := range map[string]time.Time{
		"10m":                  now.Add(-10 * time.Minute),
		"1h30m":                now.Add(-90 * time.Minute),
		"2026-09-29T23:02:00Z": time.Date(2026, 9, 29, 23, 2, 0, 0, time.UTC),
		"":                     {},
	} {
		if got := SinceTime(s, now); !got.Equal(want) {
			t.Errorf("SinceTime(%q): %v, want %v", s, got, want)
		}
	}
}
