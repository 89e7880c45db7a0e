package executor

// SetAfterPlace installs a hook that runs after a leg's exchange call and before its
// booking; an error from it simulates the executor dying there.
func SetAfterPlace(e *Executor, f func(leg string) error) { e.afterPlace = f }

// SetBeforeFanOut installs a hook that runs after a leg's booking and before its copies are
// enqueued; an error from it simulates the executor dying there.
func SetBeforeFanOut(e *Executor, f func(leg string) error) { e.beforeFanOut = f }
