package testkit

import (
	"testing"
	"time"
)

// PollInterval is how often Eventually re-checks. Short enough that a test waiting on a
// fast path finishes quickly, long enough not to load Redis or the API server.
const PollInterval = 10 * time.Millisecond

// Eventually calls check until it returns nil, and fails the test with what and check's
// last error when timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (not within %s): %v", what, timeout, err)
		}
		time.Sleep(PollInterval)
	}
}

// EventuallyTrue is Eventually for a condition without an error to report.
func EventuallyTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

type notYet struct{}

func (notYet) Error() string { return "condition not reached" }

var errNotYet error = notYet{}
