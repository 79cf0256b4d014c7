// Package flagcheck checks flag values as they are parsed, so that a value
// that does not parse, or is out of range, is refused naming the flag before
// anything starts: pflag wraps a check's error as `invalid argument "V" for
// "--flag" flag: ...`. A command declares its flags as usual, then Installs
// the checks of those that take a value of a kind; flags of free text (a
// path, a name, an expression) are not checked here.
package flagcheck

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Check checks a flag's value, as given on the command line; its error
// says what was wanted (pflag names the flag and the value).
type Check func(string) error

// checked is a flag's value that refuses what its check refuses. It
// keeps the value's type, so the flag's help and Get* read it as before.
type checked struct {
	pflag.Value
	check Check
}

func (v checked) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	return v.Value.Set(s)
}

// Install makes each flag of fs named in checks refuse, as it is parsed,
// what its check refuses. A name fs does not declare is a bug (panic).
func Install(fs *pflag.FlagSet, checks map[string]Check) {
	for name, check := range checks {
		f := fs.Lookup(name)
		if f == nil {
			panic(fmt.Sprintf("flagcheck: no flag --%s", name))
		}
		f.Value = checked{f.Value, check}
	}
}

// Optional is check, or "" (a flag's way to say "none", as its default).
func Optional(check Check) Check {
	return func(s string) error {
		if s == "" {
			return nil
		}
		return check(s)
	}
}

// ListenAddr is an address to listen on, HOST:PORT: HOST empty (every
// interface), an IP address or a host name; PORT 1 to 65535, or 0 for a
// free port.
func ListenAddr(s string) error { return hostPort(s, true) }

// DialAddr is an address to reach or to serve at a port others are told
// (an artifact store's), HOST:PORT with PORT 1 to 65535.
func DialAddr(s string) error { return hostPort(s, false) }

func hostPort(s string, freePort bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want HOST:PORT (127.0.0.1:7480): %v", strings.TrimPrefix(err.Error(), "address "+s+": "))
	}
	if err := checkHost(host); err != nil {
		return err
	}
	return checkPort(port, freePort)
}

func checkPort(port string, freePort bool) error {
	n, err := strconv.Atoi(port)
	if err != nil || strings.HasPrefix(port, "+") {
		return fmt.Errorf("port %q is not a number", port)
	}
	switch {
	case n == 0 && freePort:
		return nil
	case n < 1 || n > 65535:
		if freePort {
			return fmt.Errorf("port %d is out of range: want 1 to 65535, or 0 for a free port", n)
		}
		return fmt.Errorf("port %d is out of range: want 1 to 65535", n)
	}
	return nil
}

// checkHost accepts "", an IP address, or a host name (DNS labels of
// letters, digits and '-', at most 253 bytes).
func checkHost(host string) error {
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if len(host) > 253 {
		return fmt.Errorf("host %.40q... is longer than 253 bytes", host)
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if last := labels[len(labels)-1]; last != "" && strings.Trim(last, "0123456789") == "" {
		// All digits at the end: a mistyped IP address, never a name.
		return fmt.Errorf("host %q is neither an IP address nor a host name", host)
	}
	for _, label := range labels {
		ok := label != "" && len(label) <= 63 && label[0] != '-' && label[len(label)-1] != '-'
		for _, c := range label {
			ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-')
		}
		if !ok {
			return fmt.Errorf("host %q is neither an IP address nor a host name", host)
		}
	}
	return nil
}

// URLOf is a URL with one of schemes and a host (its port, if any, 1 to
// 65535), as "scheme://host[:port][/path]".
func URLOf(schemes ...string) Check {
	var ws []string
	for _, s := range schemes {
		ws = append(ws, s+"://")
	}
	want := orList(ws)
	return func(s string) error {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("not a URL: %v", errors.Unwrap(err))
		}
		if !slices.Contains(schemes, u.Scheme) {
			return fmt.Errorf("want a URL starting %s", want)
		}
		if u.Hostname() == "" {
			return fmt.Errorf("the URL names no host")
		}
		if err := checkHost(u.Hostname()); err != nil {
			return err
		}
		if p := u.Port(); p != "" {
			return checkPort(p, false)
		} else if strings.HasSuffix(u.Host, ":") {
			return fmt.Errorf("the URL's port is empty")
		}
		return nil
	}
}

// ListOf checks each comma-separated item of a list flag's value (as
// pflag's string slices split it) with check.
func ListOf(check Check) Check {
	return func(s string) error {
		items := strings.Split(s, ",")
		for _, item := range items {
			err := check(strings.TrimSpace(item))
			if err != nil && len(items) > 1 {
				return fmt.Errorf("%q: %w", item, err)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// Positive is a duration above zero.
func Positive(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration (30s, 5m, 1h)")
	}
	if d <= 0 {
		return fmt.Errorf("want a duration above 0 (30s, 5m, 1h)")
	}
	return nil
}

// AtLeast is an integer of min or more.
func AtLeast(min int64) Check {
	return func(s string) error {
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return errors.New("want a whole number")
		}
		if n < min {
			return fmt.Errorf("want %d or more", min)
		}
		return nil
	}
}

// OneOf is one of values.
func OneOf(values ...string) Check {
	return func(s string) error {
		if !slices.Contains(values, s) {
			return fmt.Errorf("want %s", orList(values))
		}
		return nil
	}
}

// RFC3339 is a time in RFC 3339.
func RFC3339(s string) error {
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return errors.New("not an RFC 3339 time (2026-09-29T23:02:00Z)")
	}
	return nil
}

// Since is a time in RFC 3339, or a positive duration that stands for that
// long before now ("10m", "1h30m"), as kubectl's and journalctl's --since
// read one.
func Since(s string) error {
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return errors.New("a duration before now must be above 0 (10m, 2h)")
		}
		return nil
	}
	return errors.New("not an RFC 3339 time (2026-09-29T23:02:00Z) nor a duration before now (10m, 2h)")
}

// SinceTime is the time a flag Since checked stands for: the time given,
// or now less the duration given; the zero time for "".
func SinceTime(s string, now time.Time) time.Time {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d)
	}
	return Time(s)
}

// Time is the value of a flag RFC3339 checked; the zero time for "".
func Time(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s) // checked as it was parsed
	return t
}

// orList is "a, b or c".
func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// Installed reports whether f refuses what a check of Install refuses: how
// a test holds every flag that takes a value to a check.
func Installed(f *pflag.Flag) bool {
	_, ok := f.Value.(checked)
	return ok
}
