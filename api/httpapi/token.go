package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the name of the API token's file in the data directory.
//
// Format: the token as 64 lower-case hex digits (32 random bytes) and a
// newline, mode 0600. Anyone who can read it can do anything the API can.
const TokenFile = "api-token"

// LoadOrCreateToken returns the API token kept in dataDir/api-token,
// generating one on first start. A token file readable or writable by group
// or others is refused (chmod 600 it), as is an empty one.
func LoadOrCreateToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, TokenFile)
	tok, err := ReadToken(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	tok = hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadToken(path) // made meanwhile by another start
	}
	if err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("api: token: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("api: token: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	return tok, nil
}

// ReadToken reads a token file (DATA/api-token, or a copy the CLI is
// pointed at with --token-file). A missing file is an error wrapping
// fs.ErrNotExist.
func ReadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("api: token: %s is mode %#o, open to others: chmod 600 it", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("api: token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("api: token: %s is empty", path)
	}
	return tok, nil
}
