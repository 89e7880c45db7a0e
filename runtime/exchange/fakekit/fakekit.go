// Package fakekit holds what the fake exchanges (binancefake, bybitfake, okxfake) do alike
// around the venue they imitate: a queue of injected faults, counters of what reached them,
// and the HTML page a gateway answers a 5xx with. Each fake was given these by copying the
// previous one; they live here once so that every fake arms, spends and counts the same
// way, and the tests that lean on "the next n matching requests fail" mean one thing. A
// fake's Fault type, what matches it and how it is answered stay the fake's. fakehold, its
// sibling, holds a request in transit.
package fakekit

import (
	"fmt"
	"net/http"
	"sync"
)

// Faults is a fake's queue of armed faults, F being its own Fault type. Faults are taken in
// the order they were armed. The zero value is ready to use; it is safe for concurrent use.
type Faults[F any] struct {
	mu    sync.Mutex
	armed []*armed[F]
}

type armed[F any] struct {
	f    F
	left int
}

// Arm queues f for the next n requests it matches (n ≤ 0: one).
func (q *Faults[F]) Arm(f F, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.armed = append(q.armed, &armed[F]{f: f, left: max(n, 1)})
}

// Take is the fault for one request: the first armed one that match accepts, which is
// dropped from the queue once it has failed its n requests. ok is false when none matches.
func (q *Faults[F]) Take(match func(F) bool) (f F, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, a := range q.armed {
		if match(a.f) {
			if a.left--; a.left <= 0 {
				q.armed = append(q.armed[:i], q.armed[i+1:]...)
			}
			return a.f, true
		}
	}
	return f, false
}

// Counts counts what reached a fake (requests per path, answers per code), for tests that
// assert how often the adapter called. The zero value is ready to use; it is safe for
// concurrent use.
type Counts[K comparable] struct {
	mu sync.Mutex
	n  map[K]int
}

// Add counts one more of each key, together.
func (c *Counts[K]) Add(keys ...K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[K]int{}
	}
	for _, k := range keys {
		c.n[k]++
	}
}

// Get is how many of k were counted.
func (c *Counts[K]) Get(k K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// GatewayPage is the body a venue's gateway answers a failed request with (a 5xx, not the
// venue's JSON): the fakes send it for an injected HTTP status, so that the adapters meet
// the same non-JSON answer they meet in production.
func GatewayPage(status int) string {
	return fmt.Sprintf("<html><body><h1>%d %s</h1></body></html>", status, http.StatusText(status))
}
