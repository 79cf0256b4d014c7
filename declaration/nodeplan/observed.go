package nodeplan

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"meshplane/declaration"
)

// ErrInvalid means the input was refused as malformed (a container name
// Docker would refuse, a relative path, a mode outside 07777, an empty
// image). Nothing was changed.
var ErrInvalid = errors.New("invalid input")

// Container is a managed container as the agent creates it and as the
// runtime lists it.
type Container struct {
	Name   string                // the resource name, which is the container name
	Module string                // the module that declares it
	Digest string                // the resource digest it was created from
	Spec   declaration.Container // the spec it was created with
	// Stopped is set by ListContainers on a container that exists but does
	// not run (exited, or created and never started); the agent starts it.
	// CreateContainer ignores it: a created container runs.
	Stopped bool
	// SecretEnv is, for CreateContainer only, the values of Spec.Secrets as
	// "KEY=value", which the container's environment gets beside Spec.Env.
	// A runtime never keeps them in what it persists of the container (its
	// labels, its spec, a file of the agent's) and never lists them back;
	// nothing of the agent's writes them anywhere (agent/secret.go).
	SecretEnv []string `json:"-"`
}

// PathInfo is what Stat found at a path.
type PathInfo struct {
	Exists bool
	Dir    bool   // a directory (otherwise a regular file)
	Mode   uint32 // permission bits
	Size   int64  // bytes, for a file
}

// MaxMode is the largest mode a Runtime accepts.
const MaxMode = 0o7777

var containerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// ValidateContainerName checks a container name as Docker does.
func ValidateContainerName(name string) error {
	if len(name) > 128 || !containerName.MatchString(name) {
		return fmt.Errorf("container name %q: must match [a-zA-Z0-9][a-zA-Z0-9_.-]* (at most 128 bytes): %w", name, ErrInvalid)
	}
	return nil
}

// ValidateContainer checks what CreateContainer needs: a valid name, an
// image, and absolute mount sources and targets.
func ValidateContainer(c Container) error {
	if err := ValidateContainerName(c.Name); err != nil {
		return err
	}
	if strings.TrimSpace(c.Spec.Image) == "" {
		return fmt.Errorf("container %s: empty image: %w", c.Name, ErrInvalid)
	}
	for i, m := range c.Spec.Mounts {
		if !m.Volume {
			if err := ValidatePath(m.Source); err != nil {
				return fmt.Errorf("container %s: mounts[%d].source: %w", c.Name, i, err)
			}
		} else if m.Source == "" {
			return fmt.Errorf("container %s: mounts[%d].source: empty volume name: %w", c.Name, i, ErrInvalid)
		}
		if err := ValidatePath(m.Target); err != nil {
			return fmt.Errorf("container %s: mounts[%d].target: %w", c.Name, i, err)
		}
	}
	for i, kv := range c.Spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("container %s: env[%d] %q: not KEY=value: %w", c.Name, i, kv, ErrInvalid)
		}
	}
	return nil
}

// ValidatePath checks that p is absolute and clean.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("path: empty: %w", ErrInvalid)
	case !path.IsAbs(p):
		return fmt.Errorf("path %q: not absolute: %w", p, ErrInvalid)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q: not clean (want %q): %w", p, path.Clean(p), ErrInvalid)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q: contains NUL: %w", p, ErrInvalid)
	}
	return nil
}

// ValidateMode checks that mode is permission bits.
func ValidateMode(mode uint32) error {
	if mode > MaxMode {
		return fmt.Errorf("mode %o: over %o: %w", mode, MaxMode, ErrInvalid)
	}
	return nil
}
