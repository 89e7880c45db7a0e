package restkit

import (
	"sync"
	"sync/atomic"
)

// Offsets is the learned server-minus-local clock offset in ms, per base URL. Both venues
// refuse a signed request whose timestamp is off their clock, and both adapters learn the
// offset when refused; it is kept per host and shared by every account on that host, since
// accounts are opened per signal and the clock is not. The zero value is ready to use.
type Offsets struct{ m sync.Map } // base URL → *atomic.Int64

// For is the offset of base, shared by every client of that host.
func (o *Offsets) For(base string) *atomic.Int64 {
	off, _ := o.m.LoadOrStore(base, new(atomic.Int64))
	return off.(*atomic.Int64)
}

// Reset sets every offset back to zero (tests start each fake cold).
func (o *Offsets) Reset() {
	o.m.Range(func(_, v any) bool { v.(*atomic.Int64).Store(0); return true })
}
