package docker

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Resolve sets how the runtime resolves host paths for the rest of t:
// "openat2" (where the kernel has it) or "walk" (the O_NOFOLLOW walk every
// kernel has). It reports whether openat2 is what runs.
func Resolve(t testing.TB, how string) bool {
	t.Helper()
	old := noOpenat2.Load()
	t.Cleanup(func() { noOpenat2.Store(old) })
	switch how {
	case "walk":
		noOpenat2.Store(true)
		return false
	case "openat2":
		fd, err := openat2Dir(unix.AT_FDCWD, ".")
		if err == nil {
			unix.Close(fd)
		}
		ok := !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM)
		noOpenat2.Store(!ok)
		return ok
	}
	t.Fatalf("resolve %q: want openat2 or walk", how)
	return false
}

// RosterMark divides a container's hosts file: the engine's lines, then
// the roster (hosts.go).
const RosterMark = rosterMark
