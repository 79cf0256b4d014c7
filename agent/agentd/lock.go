package agentd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// OutboxDir is where, in an agent's data directory, its reports wait for
// the controller and its State is kept (agent.OpenOutbox; format there).
const OutboxDir = "outbox"

// LockFile, in an agent's data directory, is held (flock) while an agent
// runs on it: two agents over one outbox would deliver each other's
// reports and overwrite each other's State. The file is empty; the lock is
// released when the process exits, however it exits.
const LockFile = "agent.lock"

// ErrDataHeld is Run's error when another agent runs on its data
// directory.
var ErrDataHeld = errors.New("another agent runs on this data directory")

// lockData makes dir and takes its lock, or fails with ErrDataHeld.
func lockData(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("agent: %s: %w", dir, ErrDataHeld)
		}
		return nil, fmt.Errorf("agent: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}
