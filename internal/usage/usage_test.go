package usage

import (
	"errors"
	"fmt"
	"testing"
)

// TestErrorf: the error says only what is wrong, and is Err also when
// wrapped or joined.
func TestErrorf(t *testing.T) {
	err := Errorf("--nodes %d: want at least 1", 0)
	if err.Error() != "--nodes 0: want at least 1" || !errors.Is(err, Err) {
		t.Errorf("Errorf: %q, Is(Err) %v", err, errors.Is(err, Err))
	}
	if !errors.Is(fmt.Errorf("sim: %w", err), Err) || !errors.Is(errors.Join(errors.New("x"), err), Err) {
		t.Error("wrapped or joined, not Err")
	}
	if errors.Is(errors.New("bad usage"), Err) {
		t.Error("another error with the same text is Err")
	}
}
