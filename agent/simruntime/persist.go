package simruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"meshplane/agent"
	"meshplane/internal/atomicfile"
	"meshplane/internal/crcframe"
)

// ErrDamaged is a state file that does not read back: its checksum, its
// JSON or its version is wrong. Open refuses it; the caller decides (the
// agent moves it aside and starts from an empty node).
var ErrDamaged = errors.New("simruntime: state file damaged")

// stateVersion is the format of a state file. A change to what follows,
// in shape or meaning, needs a new one.
const stateVersion = 1

// The state file: the JSON of fileState, then a last line "crc32c
// XXXXXXXX", the CRC-32C (Castagnoli) of everything before it, as the
// agent's outbox files end.
type fileState struct {
	Version    int                 `json:"version"`
	Seq        int                 `json:"seq"`
	Containers map[string]fileCont `json:"containers"`
	Paths      map[string]fileNode `json:"paths"`
	Creates    map[string]int      `json:"creates,omitempty"`
}

type fileCont struct {
	Labels  map[string]string `json:"labels"`
	Image   string            `json:"image"`
	Seq     int               `json:"seq"`
	Stopped bool              `json:"stopped,omitempty"`
}

type fileNode struct {
	Dir     bool   `json:"dir,omitempty"`
	Mode    uint32 `json:"mode"`
	Content []byte `json:"content,omitempty"`
}

// Open returns the simulated node kept in the file path: what it held when
// the last Runtime on that file last changed (its containers, running or
// stopped, its directories and files, how often each container was
// created), or an empty node when there is no file yet. Every change is
// then written to path (atomically: the old state or the new one, never a
// part) before the call that made it returns, so a process that opens the
// same file after this one stops finds the node as it was: a simulated
// node that remembers, as a real host does across an agent's restart.
//
// A file that does not read back is ErrDamaged, wrapped with why; Open
// leaves it where it is.
func Open(path string) (*Runtime, error) {
	r := New()
	r.path = path
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r, r.save()
	case err != nil:
		return nil, fmt.Errorf("simruntime: open %s: %w", path, err)
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, fmt.Errorf("simruntime: open %s: %w", path, err)
	}
	r.seq = st.Seq
	for name, c := range st.Containers {
		labels := c.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		r.containers[name] = &container{labels: labels, image: c.Image, seq: c.Seq, stopped: c.Stopped}
	}
	for p, n := range st.Paths {
		r.paths[p] = &node{dir: n.Dir, mode: n.Mode, content: intern(n.Content)}
	}
	for name, n := range st.Creates {
		r.creates[name] = n
	}
	return r, nil
}

// decodeState checks b's checksum line and decodes what it seals.
func decodeState(b []byte) (fileState, error) {
	var st fileState
	body, sealed, err := crcframe.Unseal(b)
	switch {
	case err != nil:
		return st, fmt.Errorf("%w: %w", err, ErrDamaged)
	case !sealed:
		return st, fmt.Errorf("no checksum line: %w", ErrDamaged)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%v: %w", err, ErrDamaged)
	}
	if st.Version != stateVersion {
		return st, fmt.Errorf("version %d, want %d: %w", st.Version, stateVersion, ErrDamaged)
	}
	if n, ok := st.Paths["/"]; !ok || !n.Dir {
		return st, fmt.Errorf("no root directory: %w", ErrDamaged)
	}
	return st, nil
}

// save writes the node to its file, when it has one. Called with r.mu
// held (or before r is shared), after each change.
func (r *Runtime) save() error {
	if r.path == "" {
		return nil
	}
	st := fileState{
		Version: stateVersion, Seq: r.seq,
		Containers: make(map[string]fileCont, len(r.containers)),
		Paths:      make(map[string]fileNode, len(r.paths)),
		Creates:    r.creates,
	}
	for name, c := range r.containers {
		st.Containers[name] = fileCont{Labels: c.labels, Image: c.image, Seq: c.seq, Stopped: c.stopped}
	}
	for p, n := range r.paths {
		st.Paths[p] = fileNode{Dir: n.dir, Mode: n.mode, Content: []byte(n.text())}
	}
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("simruntime: save %s: %w", r.path, err)
	}
	body = append(body, '\n')
	body = crcframe.Seal(body)
	if err := atomicfile.WriteFile(r.path, body, 0o600); err != nil {
		return fmt.Errorf("simruntime: save %s: %w: %w", r.path, agent.ErrRuntime, err)
	}
	return nil
}
