package bus

import (
	"fmt"
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		delivered uint64
		want      time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{6, 32 * time.Second}, {7, time.Minute}, {1000, time.Minute},
	} {
		t.Run(fmt.Sprint(tc.delivered), func(t *testing.T) {
			if got := retryDelay(tc.delivered); got != tc.want {
				t.Errorf("retryDelay(%d) = %v, want %v", tc.delivered, got, tc.want)
			}
		})
	}
}
