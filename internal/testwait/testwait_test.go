package testwait_test

import (
	"errors"
	"testing"
	"time"

	"meshplane/internal/testwait"
)

// TestEventuallyWaitsForTheCondition: a condition that holds on its third
// call is waited for, and asked no more.
func TestEventuallyWaitsForTheCondition(t *testing.T) {
	calls := 0
	testwait.Eventually(t, 5*time.Second, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("asked %d times, want 3", calls)
	}
}
