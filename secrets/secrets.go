package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Errors callers branch on.
var (
	// ErrNoKey: no secret key is configured (a controller started without
	// one), so no secret can be set or answered.
	ErrNoKey = errors.New("no secret key")
	// ErrWrongKey: the sealed value was sealed under another key (KeyID).
	ErrWrongKey = errors.New("sealed under another secret key")
	// ErrSealed: a sealed value does not open (damaged, or moved from
	// another secret's stream).
	ErrSealed = errors.New("sealed value does not open")
)

// DigestPrefix starts every digest (commands.SecretDigestPrefix).
const DigestPrefix = "hmac-sha256:"

// KeySize is a secret key's length in bytes.
const KeySize = 32

// MaxValue bounds a secret's value: 64 KiB, far above a password or a
// certificate, and small enough for an event.
const MaxValue = 64 << 10

// Key is the secret store's key. Its parts (sealing, digests, the key's
// id) are derived from it, each for its own use.
type Key struct {
	seal   [32]byte
	digest [32]byte
	id     string
}

// NewKey makes a Key from KeySize bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("secrets: key is %d bytes, want %d", len(raw), KeySize)
	}
	k := &Key{}
	copy(k.seal[:], derive(raw, "meshplane secret seal"))
	copy(k.digest[:], derive(raw, "meshplane secret digest"))
	k.id = hex.EncodeToString(derive(raw, "meshplane secret key id")[:8])
	return k, nil
}

func derive(raw []byte, label string) []byte {
	m := hmac.New(sha256.New, raw)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// ID names the key (16 hex digits), recorded beside every sealed value.
func (k *Key) ID() string { return k.id }

// Digest is the keyed digest of secret name's value: "hmac-sha256:<hex>".
func (k *Key) Digest(name string, value []byte) string {
	m := hmac.New(sha256.New, k.digest[:])
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write(value)
	return DigestPrefix + hex.EncodeToString(m.Sum(nil))
}

// Seal encrypts secret name's value: base64 of a random nonce and the
// AES-256-GCM ciphertext, the name as additional data.
func (k *Key) Seal(name string, value []byte) (string, error) {
	aead, err := k.aead()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(value)+aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return "", fmt.Errorf("secrets: seal %s: nonce: %w", name, err)
	}
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, value, []byte(name))), nil
}

// Open decrypts what Seal sealed for secret name under the key keyID.
func (k *Key) Open(name, keyID, sealed string) ([]byte, error) {
	if keyID != k.id {
		return nil, fmt.Errorf("secrets: open %s: key %s, this controller's is %s: %w", name, keyID, k.id, ErrWrongKey)
	}
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return nil, fmt.Errorf("secrets: open %s: %w", name, ErrSealed)
	}
	aead, err := k.aead()
	if err != nil {
		return nil, err
	}
	if len(b) < aead.NonceSize() {
		return nil, fmt.Errorf("secrets: open %s: %w", name, ErrSealed)
	}
	v, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(name))
	if err != nil {
		return nil, fmt.Errorf("secrets: open %s: %w", name, ErrSealed)
	}
	return v, nil
}

func (k *Key) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.seal[:])
	if err != nil {
		return nil, fmt.Errorf("secrets: cipher: %w", err)
	}
	return cipher.NewGCM(block)
}
