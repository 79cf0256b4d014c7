//go:build unix && !linux

package docker

import (
	"fmt"

	"golang.org/x/sys/unix"

	"meshplane/agent"
)

// openat2Dir: openat2 is Linux's; every path is walked.
func openat2Dir(int, string) (int, error) { return -1, unix.ENOSYS }

// pinned is what is at one name of a directory, looked at without following
// it and, for a directory or a regular file, opened for reading with
// O_NOFOLLOW; anything else is not opened.
type pinned struct {
	fd   int
	dir  int
	name string
	st   unix.Stat_t
}

// pin holds name in dir. Nothing there is ENOENT.
func pin(dir int, name string) (pinned, error) {
	h := pinned{fd: -1, dir: dir, name: name}
	if err := unix.Fstatat(dir, name, &h.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return pinned{fd: -1}, err
	}
	if m := uint32(h.st.Mode); !isDir(m) && !isReg(m) {
		return h, nil
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return pinned{fd: -1}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != h.st.Dev || st.Ino != h.st.Ino {
		unix.Close(fd)
		return pinned{fd: -1}, fmt.Errorf("%s changed while it was opened: %w", name, agent.ErrRuntime)
	}
	h.fd = fd
	return h, nil
}

func (h pinned) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

// reopen opens the file h holds again with flags, checking it is the inode
// held.
func (h pinned) reopen(flags int) (int, error) {
	if flags == unix.O_RDONLY {
		return unix.FcntlInt(uintptr(h.fd), unix.F_DUPFD_CLOEXEC, 0)
	}
	fd, err := unix.Openat(h.dir, h.name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != h.st.Dev || st.Ino != h.st.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("%s changed while it was opened: %w", h.name, agent.ErrRuntime)
	}
	return fd, nil
}

// chmod sets the mode of what h holds, on its descriptor.
func (h pinned) chmod(mode uint32) error { return unix.Fchmod(h.fd, mode) }

// renameNoReplace gives the file tmp in dir the name to, failing with
// EEXIST if something has it: a hard link, then an unlink.
func renameNoReplace(dir int, tmp, to string) error {
	if err := unix.Linkat(dir, tmp, dir, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dir, tmp, 0)
}
