package secrets

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"meshplane/internal/atomicfile"
)

// KeyFile is the secret key's file in a controller's data directory.
const KeyFile = "secret.key"

// KeyEnv, when set, names the key file instead (a key file passed to every
// controller of a cluster).
const KeyEnv = "MESH_SECRET_KEY"

// KeyPath is where the key of data directory dir is: $MESH_SECRET_KEY, else
// DIR/secret.key.
func KeyPath(dir string) string {
	if p := os.Getenv(KeyEnv); p != "" {
		return p
	}
	return filepath.Join(dir, KeyFile)
}

// LoadKey reads the key of data directory dir (KeyPath): 64 hex digits.
// No file is ErrNoKey.
func LoadKey(dir string) (*Key, error) {
	p := KeyPath(dir)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secrets: %s: %w", p, ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: read key: %w", err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("secrets: key %s: not hex: %w", p, err)
	}
	return NewKey(raw)
}

// LoadOrMakeKey is LoadKey, making the key file (0600, 32 random bytes)
// when there is none.
func LoadOrMakeKey(dir string) (*Key, error) {
	k, err := LoadKey(dir)
	if !errors.Is(err, ErrNoKey) {
		return k, err
	}
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("secrets: make key: %w", err)
	}
	if err := atomicfile.WriteFile(KeyPath(dir), []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("secrets: write key: %w", err)
	}
	return NewKey(raw)
}
