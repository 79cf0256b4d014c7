package main

// Flag values checked as they are parsed. A value that does not parse, or
// is out of range, is bad usage (exit 2) naming the flag, before anything
// starts: pflag wraps the check's error as `invalid argument "V" for
// "--flag" flag: ...`, and root's flag error func makes that a usageError.
// (`mesh up --listen 127.0.0.1:99999` used to start the store and the bus,
// fail at net.Listen and exit 1.)
//
// A verb declares its flags as usual and then names the checks of those
// that take a value of a kind (checkFlags); flags that take free text (a
// path, a name, an expression) are not checked here, and what a verb can
// only check once every flag is read (--big against --nodes) stays in the
// verb. TestFlagsChecked holds every verb's flags to one or the other.

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

	"meshplane/agent"
	"meshplane/controller"
)

// flagCheck checks a flag's value, as given on the command line; its error
// says what was wanted (pflag names the flag and the value).
type flagCheck func(string) error

// checkedValue is a flag's value that refuses what its check refuses. It
// keeps the value's type, so the flag's help and Get* read it as before.
type checkedValue struct {
	pflag.Value
	check flagCheck
}

func (v checkedValue) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	return v.Value.Set(s)
}

// checkFlags makes each flag of fs named in checks refuse, as it is parsed,
// what its check refuses. A name fs does not declare is a bug (panic).
func checkFlags(fs *pflag.FlagSet, checks map[string]flagCheck) {
	for name, check := range checks {
		f := fs.Lookup(name)
		if f == nil {
			panic(fmt.Sprintf("checkFlags: no flag --%s", name))
		}
		f.Value = checkedValue{f.Value, check}
	}
}

// optional is check, or "" (a flag's way to say "none", as its default).
func optional(check flagCheck) flagCheck {
	return func(s string) error {
		if s == "" {
			return nil
		}
		return check(s)
	}
}

// listenAddr is an address to listen on, HOST:PORT: HOST empty (every
// interface), an IP address or a host name; PORT 1 to 65535, or 0 for a
// free port.
func listenAddr(s string) error { return hostPort(s, true) }

// dialAddr is an address to reach or to serve at a port others are told
// (an artifact store's), HOST:PORT with PORT 1 to 65535.
func dialAddr(s string) error { return hostPort(s, false) }

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

// urlOf is a URL with one of schemes and a host (its port, if any, 1 to
// 65535), as "scheme://host[:port][/path]".
func urlOf(schemes ...string) flagCheck {
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

// listOf checks each comma-separated item of a list flag's value (as
// pflag's string slices split it) with check.
func listOf(check flagCheck) flagCheck {
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

// positive is a duration above zero.
func positive(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration (30s, 5m, 1h)")
	}
	if d <= 0 {
		return fmt.Errorf("want a duration above 0 (30s, 5m, 1h)")
	}
	return nil
}

// atLeast is an integer of min or more.
func atLeast(min int64) flagCheck {
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

// oneOf is one of values.
func oneOf(values ...string) flagCheck {
	return func(s string) error {
		if !slices.Contains(values, s) {
			return fmt.Errorf("want %s", orList(values))
		}
		return nil
	}
}

// rfc3339 is a time in RFC 3339.
func rfc3339(s string) error {
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return errors.New("not an RFC 3339 time (2026-09-29T23:02:00Z)")
	}
	return nil
}

// label is a Docker label the agent adds, KEY=VALUE: KEY not empty, no
// space in it, and none of the labels the runtime sets itself.
func label(s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
		return errors.New("want KEY=VALUE (meshplane.data=ID)")
	}
	switch k {
	case agent.LabelManaged, agent.LabelNode, agent.LabelResource, agent.LabelModule, agent.LabelDigest, agent.LabelSpec:
		return fmt.Errorf("%s is the runtime's own label", k)
	}
	return nil
}

// orList is "a, b or c".
func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// planAfter is one of mesh plan's --after commands (controller.ParseAfter).
func planAfter(s string) error {
	if _, err := controller.ParseAfter([]string{s}); err != nil {
		return errors.New("want a command: deploy MODULE [--digest D], assign|take|release MODULE NODE, or node adopt NODE")
	}
	return nil
}
