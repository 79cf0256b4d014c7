package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"meshplane/agent"
)

// host is where the absolute, clean path p lives on the host.
func (r *Runtime) host(p string) string {
	if r.opt.Root == "" {
		return p
	}
	return filepath.Join(r.opt.Root, filepath.FromSlash(p))
}

// unixMode turns a FileMode's permission and special bits into the
// permission bits of the Runtime interface (at most 07777).
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// fileMode is the inverse of unixMode.
func fileMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// osFail wraps a filesystem error for the agent.
func osFail(op, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("docker: %s %s: %w", op, p, agent.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("docker: %s %s: %w", op, p, agent.ErrExists)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("docker: %s %s: a parent is a file: %w", op, p, agent.ErrWrongKind)
	case errors.Is(err, syscall.EISDIR):
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

// Stat implements agent.Runtime. It follows symbolic links.
func (r *Runtime) Stat(ctx context.Context, p string) (agent.PathInfo, error) {
	if err := r.check(ctx, "stat", p, nil); err != nil {
		return agent.PathInfo{}, err
	}
	fi, err := os.Stat(r.host(p))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return agent.PathInfo{}, nil
	}
	if err != nil {
		return agent.PathInfo{}, osFail("stat", p, err)
	}
	info := agent.PathInfo{Exists: true, Dir: fi.IsDir(), Mode: unixMode(fi.Mode())}
	if !fi.IsDir() {
		info.Size = fi.Size()
	}
	return info, nil
}

// parents makes the missing parents of p at 0755, refusing a file on the
// way. It checks first and changes after.
func (r *Runtime) parents(op, p string) error {
	var missing []string
	for q := path.Dir(p); q != "/"; q = path.Dir(q) {
		fi, err := os.Stat(r.host(q))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, q)
			continue
		}
		if err != nil {
			return osFail(op, p, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("docker: %s %s: parent %s is a file: %w", op, p, q, agent.ErrWrongKind)
		}
		break
	}
	for i := len(missing) - 1; i >= 0; i-- {
		h := r.host(missing[i])
		if err := os.Mkdir(h, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return osFail(op, p, err)
		}
		if err := os.Chmod(h, 0o755); err != nil {
			return osFail(op, p, err)
		}
	}
	return nil
}

// Mkdir implements agent.Runtime. The mode is set exactly, whatever the
// umask.
func (r *Runtime) Mkdir(ctx context.Context, p string, mode uint32) error {
	if err := r.check(ctx, "mkdir", p, &mode); err != nil {
		return err
	}
	h := r.host(p)
	if _, err := os.Lstat(h); err == nil {
		return fmt.Errorf("docker: mkdir %s: %w", p, agent.ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return osFail("mkdir", p, err)
	}
	if err := r.parents("mkdir", p); err != nil {
		return err
	}
	if err := os.Mkdir(h, 0o700); err != nil {
		return osFail("mkdir", p, err)
	}
	if err := os.Chmod(h, fileMode(mode)); err != nil {
		return osFail("mkdir", p, err)
	}
	return nil
}

// Chmod implements agent.Runtime.
func (r *Runtime) Chmod(ctx context.Context, p string, mode uint32) error {
	if err := r.check(ctx, "chmod", p, &mode); err != nil {
		return err
	}
	if err := os.Chmod(r.host(p), fileMode(mode)); err != nil {
		return osFail("chmod", p, err)
	}
	return nil
}

// WriteFile implements agent.Runtime, in place: an existing file keeps its
// inode (it is written from the start, then cut to the new length), so a
// container that bind-mounts it reads the new content; a file replaced by
// rename would stay old inside the container. The mode is set exactly and
// the content synced before it returns.
func (r *Runtime) WriteFile(ctx context.Context, p string, content []byte, mode uint32) error {
	if err := r.check(ctx, "write", p, &mode); err != nil {
		return err
	}
	h := r.host(p)
	if fi, err := os.Stat(h); err == nil && fi.IsDir() {
		return fmt.Errorf("docker: write %s: a directory: %w", p, agent.ErrWrongKind)
	}
	if err := r.parents("write", p); err != nil {
		return err
	}
	f, err := os.OpenFile(h, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return osFail("write", p, err)
	}
	_, werr := f.WriteAt(content, 0)
	if werr == nil {
		werr = f.Truncate(int64(len(content)))
	}
	if werr == nil {
		werr = f.Chmod(fileMode(mode))
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		return osFail("write", p, err)
	}
	return nil
}

// ReadFile implements agent.Runtime.
func (r *Runtime) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := r.check(ctx, "read", p, nil); err != nil {
		return nil, err
	}
	h := r.host(p)
	fi, err := os.Stat(h)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("docker: read %s: %w", p, agent.ErrNotFound)
		}
		return nil, osFail("read", p, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("docker: read %s: a directory: %w", p, agent.ErrWrongKind)
	}
	b, err := os.ReadFile(h)
	if err != nil {
		return nil, osFail("read", p, err)
	}
	return b, nil
}
