// Package fakehold is what the fake exchanges (binancefake, bybitfake, okxfake) share to hold a
// request in transit: sent by the adapter, not answered, not yet seen by the exchange. The
// test then delivers it (it arrives at that moment and is handled: an order sent by a client
// that has since died or given up is applied late) or loses it. A Delay fault cannot do
// this: a lookup by another client must come first, at a moment the test chooses.
package fakehold

import "net/http"

// Held is one held request.
type Held struct {
	arrived chan struct{}
	verdict chan bool // true: deliver, false: lose
	done    chan struct{}
}

// New is a hold for the next matching request (the fake arms it).
func New() *Held {
	return &Held{arrived: make(chan struct{}), verdict: make(chan bool, 1), done: make(chan struct{})}
}

// Arrived is closed once the request is held.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release delivers the held request and returns once the fake has handled it (its answer
// goes to a connection that may be gone). Call it after Arrived.
func (h *Held) Release() { h.decide(true) }

// Drop loses the held request: its connection is closed, nothing is applied.
func (h *Held) Drop() { h.decide(false) }

func (h *Held) decide(deliver bool) {
	select {
	case h.verdict <- deliver:
	default: // decided already
	}
	<-h.done
}

// Hold is the fake's side: it holds the request until the test decides, and reports whether
// to handle it (false: it was lost, its connection is closed, or the server is closing).
// The fake calls Done once it has finished with the request.
func (h *Held) Hold(w http.ResponseWriter, closing <-chan struct{}) bool {
	close(h.arrived)
	select {
	case deliver := <-h.verdict:
		if !deliver {
			HangUp(w)
		}
		return deliver
	case <-closing:
		return false
	}
}

// Done says the fake has finished with the request; Release and Drop return then.
func (h *Held) Done() { close(h.done) }

// HangUp closes the connection without an answer.
func HangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
