package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Probes answers the kubelet's two questions apart, on the ops port.
//
// /healthz (liveness) says whether the process can make progress: every loop it watches has
// gone round recently. It never asks Redis or any other dependency: when Redis is down every
// pod would fail it at once, and the kubelet would restart them all, which fixes nothing and
// loses the warm state they had. A loop stuck on a lock or a call without a deadline fails
// it, and a restart is then the cure.
//
// /readyz (readiness) says whether the pod can serve now: it is live and every readiness
// check passes (Redis answers). When it fails the pod leaves its Service's endpoints until it
// passes again; the process is not restarted.
type Probes struct {
	mu    sync.Mutex
	live  []watch
	ready []check
}

// watch is a loop /healthz watches: the time of its last round, and how old it may be.
type watch struct {
	name   string
	within time.Duration
	last   func() time.Time
}

type check struct {
	name string
	fn   func(context.Context) error
}

// ReadyTimeout bounds each readiness check: a Redis that does not answer within it counts
// as down (the kubelet's own probe timeout is usually shorter still).
const ReadyTimeout = 2 * time.Second

// NewProbes returns probes with nothing watched: /healthz and /readyz answer 200.
func NewProbes() *Probes { return &Probes{} }

// Watch has /healthz watch a loop called name that goes round at least once every within,
// whatever its dependencies answer (a round that fails on Redis still counts); last is the
// time of its latest round.
func (p *Probes) Watch(name string, within time.Duration, last func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = append(p.live, watch{name, within, last})
}

// Loop is a loop that reports its rounds with Beat, for Watch.
type Loop struct {
	last atomic.Int64 // unix nanoseconds of the last beat
}

// Loop watches a loop called name that calls Beat on every round (see Watch). Its clock
// starts now, so a loop that never starts fails the probe after within too.
func (p *Probes) Loop(name string, within time.Duration) *Loop {
	l := &Loop{}
	l.Beat()
	p.Watch(name, within, l.Last)
	return l
}

// Beat records a round of the loop. Safe on a nil Loop (a component run without probes).
func (l *Loop) Beat() {
	if l != nil {
		l.last.Store(time.Now().UnixNano())
	}
}

// Last is the time of the latest Beat.
func (l *Loop) Last() time.Time { return time.Unix(0, l.last.Load()) }

// Ready adds a readiness check called name.
func (p *Probes) Ready(name string, fn func(context.Context) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready = append(p.ready, check{name, fn})
}

// Live is the liveness answer: nil when every watched loop went round within its bound.
func (p *Probes) Live() error {
	p.mu.Lock()
	watches := append([]watch(nil), p.live...)
	p.mu.Unlock()
	now := time.Now()
	var errs []error
	for _, w := range watches {
		if age := now.Sub(w.last()); age > w.within {
			errs = append(errs, fmt.Errorf("%s has not gone round for %s (bound %s)", w.name, age.Round(time.Second), w.within))
		}
	}
	return errors.Join(errs...)
}

// ReadyErr is the readiness answer: nil when the process is live and every check passes.
func (p *Probes) ReadyErr(ctx context.Context) error {
	if err := p.Live(); err != nil {
		return err
	}
	p.mu.Lock()
	checks := append([]check(nil), p.ready...)
	p.mu.Unlock()
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
		err := c.fn(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// ServeHTTP answers /healthz with Live and /readyz with ReadyErr: 200 "ok", or 503 with the
// reason (which names a loop or a dependency, never a secret).
func (p *Probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var err error
	switch r.URL.Path {
	case "/healthz":
		err = p.Live()
	case "/readyz":
		err = p.ReadyErr(r.Context())
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "not ok: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// RedisReady is the readiness check of a daemon that serves nothing without Redis: a PING.
func RedisReady(rdb redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
}
