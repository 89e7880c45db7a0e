package testkit

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer collects what a logger writes from many goroutines (a manager, an executor),
// so that tests can check log lines, for instance that no secret was logged.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Contains reports whether s was written.
func (b *LogBuffer) Contains(s string) bool { return strings.Contains(b.String(), s) }

// Reset forgets what was written.
func (b *LogBuffer) Reset() {
	b.mu.Lock()
	b.buf.Reset()
	b.mu.Unlock()
}
