package docker

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"meshplane/agent"
)

// openat2Dir opens the directory rel beneath root in one call, refusing any
// symbolic link on the way (RESOLVE_NO_SYMLINKS) and any escape from root
// (RESOLVE_BENEATH).
func openat2Dir(root int, rel string) (int, error) {
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// pinned is what is at one name of a directory, held without following it:
// an O_PATH|O_NOFOLLOW descriptor (of the link itself, for a link) and its
// fstat. What it holds cannot be swapped after the check: it is reopened,
// or its mode set, through the descriptor.
type pinned struct {
	fd   int
	dir  int
	name string
	st   unix.Stat_t
}

// pin holds name in dir. Nothing there is ENOENT.
func pin(dir int, name string) (pinned, error) {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return pinned{fd: -1}, err
	}
	h := pinned{fd: fd, dir: dir, name: name}
	if err := unix.Fstat(fd, &h.st); err != nil {
		unix.Close(fd)
		return pinned{fd: -1}, err
	}
	return h, nil
}

func (h pinned) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

func (h pinned) proc() string { return "/proc/self/fd/" + strconv.Itoa(h.fd) }

// reopen opens the file h holds (checked by the caller to be a regular
// file) for reading or writing: through /proc/self/fd, which opens that
// very inode. Without /proc it opens the name again without following a
// link and checks that it is the inode held.
func (h pinned) reopen(flags int) (int, error) {
	fd, err := unix.Open(h.proc(), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err == nil {
		return fd, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return -1, err
	}
	fd, err = unix.Openat(h.dir, h.name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
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

// chmod sets the mode of what h holds: fchmodat2(AT_EMPTY_PATH) on the
// descriptor (Linux 6.6), else chmod of /proc/self/fd, else fchmod of the
// reopened file. Never chmod by name.
func (h pinned) chmod(mode uint32) error {
	if err := unix.Fchmodat(h.fd, "", mode, unix.AT_EMPTY_PATH); err == nil {
		return nil
	}
	err := unix.Chmod(h.proc(), mode)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return err
	}
	fd, err := h.reopen(unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, mode)
}

// renameNoReplace gives the file tmp in dir the name to, failing with
// EEXIST if something has it: renameat2(RENAME_NOREPLACE), else (a
// filesystem without it) a hard link and an unlink.
func renameNoReplace(dir int, tmp, to string) error {
	err := unix.Renameat2(dir, tmp, dir, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if err := unix.Linkat(dir, tmp, dir, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dir, tmp, 0)
}
