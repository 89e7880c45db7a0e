package exchange

import (
	"context"
	"time"
)

// Sleep waits d between two calls to an exchange. It returns false at once when ctx's
// deadline would leave less than margin after d (the next call could not finish, so the
// caller returns its last error instead of waiting for nothing), and false when ctx ends
// during the wait.
func Sleep(ctx context.Context, d, margin time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d+margin {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
