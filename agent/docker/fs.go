package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"meshplane/agent"
)

// Host paths are resolved beneath the root (Options.Root, else "/") and
// never through a symbolic link: a container that can write to a mounted
// directory can put a link where a declared file is, and the agent runs as
// root. Every call opens the root, then the directory that holds the path's
// last component: with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) where
// the kernel has it, else (ENOSYS, or EPERM from a seccomp filter) by a walk
// that opens one component at a time with O_NOFOLLOW|O_DIRECTORY, making
// the missing ones with mkdirat. The last component is looked at, opened,
// made and changed relative to that directory's descriptor, without
// following a link: fstatat(AT_SYMLINK_NOFOLLOW), an O_PATH|O_NOFOLLOW
// descriptor checked with fstat before it is reopened for reading or
// writing (on Linux), mkdirat, renameat2, and a mode set on the descriptor
// checked, never by path after the check.
//
// os.Root is not enough: it keeps a path beneath the root, but follows a
// link that points inside it, and a link where a declared file should be is
// a failed resource whatever it points at.

// host is where the absolute, clean path p lives on the host.
func (r *Runtime) host(p string) string {
	if r.opt.Root == "" {
		return p
	}
	return filepath.Join(r.opt.Root, filepath.FromSlash(p))
}

// rootDir is the directory every path is resolved beneath.
func (r *Runtime) rootDir() string {
	if r.opt.Root == "" {
		return "/"
	}
	return r.opt.Root
}

// noOpenat2 is set once openat2 is found missing (ENOSYS) or refused
// (EPERM, a seccomp filter): from then on every path is walked.
var noOpenat2 atomic.Bool

// The errors a resolution stops at, wrapped with the declared path of the
// component at fault.
var (
	// errParentFile: a component above the path is not a directory.
	errParentFile = errors.New("is not a directory")
	// errParentMissing: a component above the path does not exist.
	errParentMissing = errors.New("does not exist")
)

func linkAt(at string) error { return fmt.Errorf("%s is %w", at, agent.ErrSymlink) }

// components splits the absolute, clean p into its names ("/" has none).
func components(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// join is the declared path of the first n of names.
func join(names []string, n int) string { return "/" + strings.Join(names[:n], "/") }

// openRoot opens the root directory. The root's own path is the
// operator's, and is resolved as any path is.
func (r *Runtime) openRoot() (int, error) {
	fd, err := unix.Open(r.rootDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("root %s: %w: %v", r.rootDir(), agent.ErrRuntime, err)
	}
	return fd, nil
}

// parent opens, beneath the root and through no symbolic link, the
// directory that holds p's last component and returns it with that
// component ("" for p = "/", the root itself). With mk, missing directories
// are made at 0755 exactly; nothing is made above a component at fault.
// Its errors wrap agent.ErrSymlink, errParentFile (and agent.ErrWrongKind),
// errParentMissing (and agent.ErrNotFound) or agent.ErrRuntime.
func (r *Runtime) parent(p string, mk bool) (int, string, error) {
	root, err := r.openRoot()
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(root)
	var dirs []string
	leaf := ""
	if names := components(p); len(names) > 0 {
		dirs, leaf = names[:len(names)-1], names[len(names)-1]
	}
	if len(dirs) == 0 {
		fd, err := dup(root)
		if err != nil {
			return -1, "", err
		}
		return fd, leaf, nil
	}
	if !noOpenat2.Load() {
		fd, err := openat2Dir(root, strings.Join(dirs, "/"))
		switch {
		case err == nil:
			return fd, leaf, nil
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.E2BIG):
			noOpenat2.Store(true)
		}
		// Anything else (a missing directory to make, a link or a file to
		// name, a rename racing the lookup): the walk makes or says which.
	}
	fd, err := walk(root, dirs, mk)
	if err != nil {
		return -1, "", err
	}
	return fd, leaf, nil
}

// walk opens dirs beneath root one component at a time, never following a
// link, making the missing ones with mk.
func walk(root int, dirs []string, mk bool) (int, error) {
	fd, err := dup(root)
	if err != nil {
		return -1, err
	}
	for i, name := range dirs {
		next, err := step(fd, name, mk)
		if err != nil {
			at := join(dirs, i+1)
			werr := fmt.Errorf("parent %s: %w", at, err)
			if !errors.Is(err, agent.ErrRuntime) {
				werr = blocked(fd, name, at, err)
			}
			unix.Close(fd)
			return -1, werr
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// step opens the directory name in dir, never following a link, and with
// mk makes it (at 0755 exactly, whatever the umask) when it is missing.
func step(dir int, name string, mk bool) (int, error) {
	fd, err := openDirAt(dir, name)
	if err == nil || !mk || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	made := true
	if err := unix.Mkdirat(dir, name, 0o700); errors.Is(err, unix.EEXIST) {
		made = false // made meanwhile: opened as found
	} else if err != nil {
		return -1, fmt.Errorf("make: %w: %v", agent.ErrRuntime, err)
	}
	if fd, err = openDirAt(dir, name); err != nil || !made {
		return fd, err
	}
	if err := unix.Fchmod(fd, 0o755); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("chmod 755: %w: %v", agent.ErrRuntime, err)
	}
	return fd, nil
}

// dup is a second descriptor of fd, closed on exec.
func dup(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: dup: %v", agent.ErrRuntime, err)
	}
	return nfd, nil
}

// openDirAt opens the directory name in dir, refusing a link.
func openDirAt(dir int, name string) (int, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// blocked says why the directory name in dir (the declared path at) could
// not be opened.
func blocked(dir int, name, at string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return linkAt(at)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("parent %s %w: %w", at, errParentFile, agent.ErrWrongKind)
		}
	} else if errors.Is(serr, unix.ENOENT) {
		return fmt.Errorf("parent %s %w: %w", at, errParentMissing, agent.ErrNotFound)
	}
	return fmt.Errorf("parent %s: %w: %v", at, agent.ErrRuntime, err)
}

// kind names what a mode's type bits say.
func kind(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return "a file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a file"
}

// wrong is the error for what h holds where p wants another kind: a link
// is agent.ErrSymlink, anything else agent.ErrWrongKind, saying what it is.
func (h pinned) wrong(p string) error {
	m := uint32(h.st.Mode)
	if isLink(m) {
		return linkAt(p)
	}
	return fmt.Errorf("%s is %s: %w", p, kind(m), agent.ErrWrongKind)
}

func isDir(m uint32) bool  { return m&unix.S_IFMT == unix.S_IFDIR }
func isReg(m uint32) bool  { return m&unix.S_IFMT == unix.S_IFREG }
func isLink(m uint32) bool { return m&unix.S_IFMT == unix.S_IFLNK }

// lstatAt describes name in dir without following it.
func lstatAt(dir int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// osFail wraps a filesystem error for the agent.
func osFail(op, p string, err error) error {
	switch {
	case errors.Is(err, agent.ErrSymlink), errors.Is(err, agent.ErrWrongKind),
		errors.Is(err, agent.ErrNotFound), errors.Is(err, agent.ErrRuntime):
		return fmt.Errorf("docker: %s %s: %w", op, p, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("docker: %s %s: %w", op, p, agent.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("docker: %s %s: %w", op, p, agent.ErrExists)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("docker: %s %s: %s is %w", op, p, p, agent.ErrSymlink)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("docker: %s %s: a parent is a file: %w", op, p, agent.ErrWrongKind)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("docker: %s %s: a directory: %w", op, p, agent.ErrWrongKind)
	}
	return fmt.Errorf("docker: %s %s: %w: %v", op, p, agent.ErrRuntime, err)
}

func (r *Runtime) check(ctx context.Context, op, p string, mode *uint32) error {
	if err := done(ctx, op, p); err != nil {
		return err
	}
	if err := agent.ValidatePath(p); err != nil {
		return fmt.Errorf("docker: %s: %w", op, err)
	}
	if mode != nil {
		if err := agent.ValidateMode(*mode); err != nil {
			return fmt.Errorf("docker: %s %s: %w", op, p, err)
		}
	}
	return nil
}

// Stat implements agent.Runtime. It follows no symbolic link: a link at p
// or above it, or anything at p that is neither a directory nor a regular
// file, is reported as nothing there, and the call that would make it
// fails, naming it.
func (r *Runtime) Stat(ctx context.Context, p string) (agent.PathInfo, error) {
	if err := r.check(ctx, "stat", p, nil); err != nil {
		return agent.PathInfo{}, err
	}
	dir, leaf, err := r.parent(p, false)
	switch {
	case errors.Is(err, agent.ErrSymlink) || errors.Is(err, errParentFile) || errors.Is(err, errParentMissing):
		return agent.PathInfo{}, nil
	case err != nil:
		return agent.PathInfo{}, osFail("stat", p, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if leaf == "" {
		err = unix.Fstat(dir, &st)
	} else {
		st, err = lstatAt(dir, leaf)
	}
	if errors.Is(err, unix.ENOENT) {
		return agent.PathInfo{}, nil
	}
	if err != nil {
		return agent.PathInfo{}, osFail("stat", p, err)
	}
	m := uint32(st.Mode)
	switch {
	case isDir(m):
		return agent.PathInfo{Exists: true, Dir: true, Mode: m & agent.MaxMode}, nil
	case isReg(m):
		return agent.PathInfo{Exists: true, Mode: m & agent.MaxMode, Size: st.Size}, nil
	}
	return agent.PathInfo{}, nil
}

// Mkdir implements agent.Runtime. The mode is set exactly, whatever the
// umask, on the directory made, through its descriptor. A link at p or
// above it is agent.ErrSymlink.
func (r *Runtime) Mkdir(ctx context.Context, p string, mode uint32) error {
	if err := r.check(ctx, "mkdir", p, &mode); err != nil {
		return err
	}
	dir, leaf, err := r.parent(p, true)
	if err != nil {
		return osFail("mkdir", p, err)
	}
	defer unix.Close(dir)
	if leaf == "" {
		return fmt.Errorf("docker: mkdir %s: the root: %w", p, agent.ErrExists)
	}
	if err := unix.Mkdirat(dir, leaf, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return r.there("mkdir", p, dir, leaf, agent.ErrExists)
		}
		return osFail("mkdir", p, err)
	}
	h, err := pin(dir, leaf)
	if err != nil {
		return osFail("mkdir", p, err)
	}
	defer h.close()
	if !isDir(uint32(h.st.Mode)) { // replaced since it was made
		return osFail("mkdir", p, h.wrong(p))
	}
	if err := h.chmod(mode); err != nil {
		return osFail("mkdir", p, err)
	}
	return nil
}

// there is the error for something found at p where nothing should be: a
// link is agent.ErrSymlink, anything else want.
func (r *Runtime) there(op, p string, dir int, leaf string, want error) error {
	st, err := lstatAt(dir, leaf)
	if err != nil {
		return osFail(op, p, err)
	}
	if isLink(uint32(st.Mode)) {
		return osFail(op, p, linkAt(p))
	}
	return fmt.Errorf("docker: %s %s: %s is there: %w", op, p, kind(uint32(st.Mode)), want)
}

// Chmod implements agent.Runtime: the mode is set on a descriptor of the
// directory or file, opened without following a link and checked first. A
// link at p or above it is agent.ErrSymlink.
func (r *Runtime) Chmod(ctx context.Context, p string, mode uint32) error {
	if err := r.check(ctx, "chmod", p, &mode); err != nil {
		return err
	}
	if p == "/" {
		return fmt.Errorf("docker: chmod %s: the root itself is not changed: %w", p, agent.ErrInvalid)
	}
	dir, leaf, err := r.parent(p, false)
	if err != nil {
		return osFail("chmod", p, err)
	}
	defer unix.Close(dir)
	h, err := pin(dir, leaf)
	if err != nil {
		return osFail("chmod", p, err)
	}
	defer h.close()
	if m := uint32(h.st.Mode); !isDir(m) && !isReg(m) {
		return osFail("chmod", p, h.wrong(p))
	}
	if err := h.chmod(mode); err != nil {
		return osFail("chmod", p, err)
	}
	return nil
}

// writeFile is WriteFile's write of p. An existing file is written in place
// (from the start, then cut to the new length) through a descriptor opened
// without following a link and checked to be a regular file, so it keeps
// its inode and a container that bind-mounts it reads the new content; a
// file replaced by rename would stay old inside the container. A new file
// is written whole under a temporary name in its directory and renamed to
// its name without replacing anything (renameat2 RENAME_NOREPLACE), so it
// appears complete or not at all. The mode is set exactly and the content
// synced before it returns. A link at p or above it is agent.ErrSymlink.
func (r *Runtime) writeFile(ctx context.Context, p string, content []byte, mode uint32) error {
	if err := r.check(ctx, "write", p, &mode); err != nil {
		return err
	}
	dir, leaf, err := r.parent(p, true)
	if err != nil {
		return osFail("write", p, err)
	}
	defer unix.Close(dir)
	if leaf == "" {
		return fmt.Errorf("docker: write %s: the root, a directory: %w", p, agent.ErrWrongKind)
	}
	// Twice at most: a file that appears while a new one is written is
	// looked at again, and written in place if it is a file.
	for range 2 {
		h, err := pin(dir, leaf)
		if errors.Is(err, unix.ENOENT) {
			err = create(dir, leaf, content, mode)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				return osFail("write", p, err)
			}
			return nil
		}
		if err != nil {
			return osFail("write", p, err)
		}
		err = overwrite(h, p, content, mode)
		h.close()
		if err != nil {
			return osFail("write", p, err)
		}
		return nil
	}
	return fmt.Errorf("docker: write %s: changed while it was written: %w", p, agent.ErrRuntime)
}

// overwrite writes content over the regular file h holds, in place.
func overwrite(h pinned, p string, content []byte, mode uint32) error {
	if !isReg(uint32(h.st.Mode)) {
		return h.wrong(p)
	}
	fd, err := h.reopen(unix.O_WRONLY)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), p)
	_, werr := f.WriteAt(content, 0)
	if werr == nil {
		werr = f.Truncate(int64(len(content)))
	}
	if werr == nil {
		werr = unix.Fchmod(fd, mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	return errors.Join(werr, f.Close())
}

// create makes the file leaf in dir with content and mode, whole: written
// under a temporary name, synced, then given its name if nothing has it
// (EEXIST if something does; the temporary file is removed either way).
func create(dir int, leaf string, content []byte, mode uint32) error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tmp := ".mesh-tmp-" + hex.EncodeToString(b[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(content)
	if werr == nil {
		werr = unix.Fchmod(fd, mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	if err := renameNoReplace(dir, tmp, leaf); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	_ = unix.Fsync(dir) // the new name, durable
	return nil
}

// ReadFile implements agent.Runtime: the file is opened without following
// a link and checked to be a regular file before it is read. A link at p
// or above it is agent.ErrSymlink.
func (r *Runtime) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := r.check(ctx, "read", p, nil); err != nil {
		return nil, err
	}
	dir, leaf, err := r.parent(p, false)
	if errors.Is(err, errParentFile) {
		return nil, fmt.Errorf("docker: read %s: %w", p, agent.ErrNotFound)
	}
	if err != nil {
		return nil, osFail("read", p, err)
	}
	defer unix.Close(dir)
	if leaf == "" {
		return nil, fmt.Errorf("docker: read %s: the root, a directory: %w", p, agent.ErrWrongKind)
	}
	h, err := pin(dir, leaf)
	if err != nil {
		return nil, osFail("read", p, err)
	}
	defer h.close()
	if !isReg(uint32(h.st.Mode)) {
		return nil, osFail("read", p, h.wrong(p))
	}
	fd, err := h.reopen(unix.O_RDONLY)
	if err != nil {
		return nil, osFail("read", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, osFail("read", p, err)
	}
	return b, nil
}

// source checks a bind mount's source p the way every path is resolved
// (beneath the root, through no link, a directory or a regular file) and
// returns its host path for the engine. The engine resolves that path
// itself when it makes the container, after this check: a link put there in
// between is not seen.
func (r *Runtime) source(p string) (string, error) {
	dir, leaf, err := r.parent(p, false)
	if errors.Is(err, errParentFile) || errors.Is(err, errParentMissing) {
		return "", agent.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(dir)
	if leaf != "" {
		st, err := lstatAt(dir, leaf)
		switch {
		case errors.Is(err, unix.ENOENT):
			return "", agent.ErrNotFound
		case err != nil:
			return "", fmt.Errorf("%w: %v", agent.ErrRuntime, err)
		case isLink(uint32(st.Mode)):
			return "", linkAt(p)
		case !isDir(uint32(st.Mode)) && !isReg(uint32(st.Mode)):
			return "", fmt.Errorf("%s is %s: %w", p, kind(uint32(st.Mode)), agent.ErrWrongKind)
		}
	}
	return r.host(p), nil
}
