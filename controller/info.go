package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"meshplane/internal/atomicfile"
)

// InfoFile is the name, in the data directory, of the file a running
// controller leaves for the CLI.
//
// Format (JSON, written whole by rename, removed on a clean stop):
//
//	{"listen": "127.0.0.1:7480", "url": "http://127.0.0.1:7480", "pid": 4242, "started": "2026-11-30T09:00:00Z"}
//
// listen is the address the API listens on, url how to reach it (https when
// it serves TLS), pid the controller's process, started when it began.
const InfoFile = "controller.json"

// ErrNoController means no controller runs on the data directory: no
// controller.json, or one left by a process that is gone.
var ErrNoController = errors.New("controller: no controller runs on this data directory")

// Info is what controller.json holds.
type Info struct {
	Listen  string    `json:"listen"`
	URL     string    `json:"url"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// WriteInfo writes dataDir/controller.json for a controller listening on
// info.Listen (PID and Started default to this process and now; URL to
// http://Listen). It returns the function that removes it, to call on a
// clean stop.
func WriteInfo(dataDir string, info Info) (remove func() error, err error) {
	if info.PID == 0 {
		info.PID = os.Getpid()
	}
	if info.Started.IsZero() {
		info.Started = time.Now().UTC()
	}
	if info.URL == "" {
		info.URL = "http://" + info.Listen
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("controller: %s: %w", InfoFile, err)
	}
	path := filepath.Join(dataDir, InfoFile)
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("controller: write %s: %w", path, err)
	}
	return func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("controller: remove %s: %w", path, err)
		}
		return nil
	}, nil
}

// ReadInfo reads dataDir/controller.json: how a CLI pointed at a store that
// a controller holds locked finds the controller. It returns an error
// wrapping ErrNoController when there is no file, or when the process it
// names is gone (a controller killed without a clean stop).
func ReadInfo(dataDir string) (Info, error) {
	path := filepath.Join(dataDir, InfoFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w (no %s)", ErrNoController, path)
	}
	if err != nil {
		return Info{}, fmt.Errorf("controller: read %s: %w", path, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("controller: read %s: %w", path, err)
	}
	if info.PID <= 0 || info.Listen == "" {
		return Info{}, fmt.Errorf("controller: read %s: no pid or listen address", path)
	}
	if !alive(info.PID) {
		return info, fmt.Errorf("%w (%s names process %d, which is gone)", ErrNoController, path, info.PID)
	}
	return info, nil
}

// alive reports whether process pid exists (signal 0 probes it).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
