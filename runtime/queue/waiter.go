package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// Waiter lets one webhookd instance wait for the results of the signals it enqueued: one
// pub/sub subscription (one Redis connection) on the instance's own channel, whatever the
// number of concurrent waits, dispatched in memory by signalId.
//
// Use: ch, cancel := w.Register(id); defer cancel(); enqueue with ReplyTo = w.Channel(); then
// wait on ch with the response bound (decision 2) and answer "queued" when it passes.
// Registering before enqueueing means no result can arrive before someone listens for it.
//
// A dropped subscription loses the messages published while it was down (pub/sub keeps
// nothing). go-redis reconnects and re-subscribes; when the subscription is confirmed again
// the Waiter reads the stored result (GetResult's key) of every wait still open and delivers
// those found. Results published before the re-subscription are stored (PublishResult stores
// first), results published after it arrive by message, so no wait misses its result; while
// Redis stays unreachable the waits simply time out in the caller. A connection that goes
// silent without an error is probed with PING after 15 s and replaced if no PONG follows.
type Waiter struct {
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger

	mu     sync.Mutex
	ps     *redis.PubSub
	waits  map[string][]chan result.Result
	closed bool

	resyncs atomic.Int64
	round   atomic.Int64 // unix nanoseconds of the loop's last round
	quit    chan struct{}
	exited  chan struct{}
}

// waiterIdle is how long the subscription may be silent before it is probed with PING.
const waiterIdle = 15 * time.Second

// NewWaiter subscribes to ReplyChannel(instanceID) and returns once Redis has confirmed the
// subscription. ctx bounds the set-up and the Waiter's life: when it ends the Waiter closes.
// instanceID must be unique among live webhookd instances (pod name plus a random suffix).
func NewWaiter(ctx context.Context, rdb redis.UniversalClient, instanceID string) (*Waiter, error) {
	if instanceID == "" {
		return nil, errors.New("queue: waiter: empty instance ID")
	}
	w := &Waiter{
		rdb:     rdb,
		channel: store.ReplyChannel(instanceID),
		log:     slog.Default().With("component", "queue-waiter", "channel", store.ReplyChannel(instanceID)),
		waits:   map[string][]chan result.Result{},
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	ps := rdb.Subscribe(ctx, w.channel)
	for {
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			_ = ps.Close()
			return nil, fmt.Errorf("queue: subscribe %s: %w", w.channel, err)
		}
		if _, ok := msg.(*redis.Subscription); ok {
			break
		}
	}
	w.ps = ps
	w.round.Store(time.Now().UnixNano())
	go w.loop()
	go func() {
		select {
		case <-ctx.Done():
			_ = w.Close()
		case <-w.quit:
		}
	}()
	return w, nil
}

// Channel is the value for Envelope.ReplyTo.
func (w *Waiter) Channel() string { return w.channel }

// Register starts waiting for signalID's result; call it before enqueueing. The channel
// receives the result at most once. cancel stops waiting and forgets the registration; call
// it in every case (it is idempotent). After Close the channel never receives.
func (w *Waiter) Register(signalID string) (<-chan result.Result, func()) {
	ch := make(chan result.Result, 1)
	w.mu.Lock()
	if !w.closed {
		w.waits[signalID] = append(w.waits[signalID], ch)
	}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			rest := slices.DeleteFunc(w.waits[signalID], func(c chan result.Result) bool { return c == ch })
			if len(rest) == 0 {
				delete(w.waits, signalID)
			} else {
				w.waits[signalID] = rest
			}
		})
	}
}

// Waiting is the number of signals being waited for (for a gauge).
func (w *Waiter) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waits)
}

// Close unsubscribes and stops the Waiter; open waits never receive (their callers time out).
func (w *Waiter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.exited
		return nil
	}
	w.closed = true
	ps := w.ps
	w.waits = map[string][]chan result.Result{}
	w.mu.Unlock()
	close(w.quit)
	err := ps.Close()
	<-w.exited
	return err
}

// LoopRound is the time the Waiter's loop last went round: a receive (at most waiterIdle),
// a PING or a back-off, Redis reachable or not. A daemon's liveness probe watches it.
func (w *Waiter) LoopRound() time.Time { return time.Unix(0, w.round.Load()) }

func (w *Waiter) loop() {
	defer close(w.exited)
	pinged, fails := false, 0
	for {
		w.round.Store(time.Now().UnixNano())
		w.mu.Lock()
		ps, closed := w.ps, w.closed
		w.mu.Unlock()
		if closed {
			return
		}
		msg, err := ps.ReceiveTimeout(context.Background(), waiterIdle)
		if err != nil {
			if w.isClosed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if pinged {
					w.log.Warn("reply subscription silent after PING; reconnecting")
					w.replace()
					pinged = false
				} else if ps.Ping(context.Background()) == nil {
					pinged = true
				}
				continue
			}
			// go-redis reconnects and re-subscribes on the next receive; the confirmation
			// triggers the resync.
			fails++
			if fails == 1 || fails%30 == 0 {
				w.log.Warn("reply subscription failed", "failures", fails, "err", err)
			}
			if !w.pause(backoff(fails - 1)) {
				return
			}
			continue
		}
		pinged, fails = false, 0
		switch m := msg.(type) {
		case *redis.Message:
			w.dispatch(m.Payload)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				w.resync()
			}
		}
	}
}

// replace swaps a silent subscription for a new one (its confirmation triggers the resync).
func (w *Waiter) replace() {
	w.mu.Lock()
	old := w.ps
	w.mu.Unlock()
	_ = old.Close()
	ps := w.rdb.Subscribe(context.Background(), w.channel)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		_ = ps.Close()
		return
	}
	w.ps = ps
}

func (w *Waiter) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

func (w *Waiter) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.quit:
		return false
	}
}

func (w *Waiter) dispatch(payload string) {
	id, data, ok := decodeReply(payload)
	if !ok {
		w.log.Warn("ignoring malformed reply message")
		return
	}
	w.deliver(id, []byte(data))
}

// deliver hands a result to every wait registered for id and forgets them.
func (w *Waiter) deliver(id string, data []byte) {
	chs := w.take(id)
	if len(chs) == 0 {
		return // nobody waits any more (timed out): skip decoding
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		w.log.Error("undecodable result; its waiters will time out", "signalId", id, "err", err)
		return
	}
	for _, ch := range chs {
		ch <- res // buffered, and each channel is registered once: never blocks
	}
}

// take forgets the waits registered for id and returns them.
func (w *Waiter) take(id string) []chan result.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	chs := w.waits[id]
	delete(w.waits, id)
	return chs
}

// resync delivers the stored results of every open wait, after a (re-)subscription.
func (w *Waiter) resync() {
	w.resyncs.Add(1)
	w.mu.Lock()
	ids := make([]string, 0, len(w.waits))
	for id := range w.waits {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for batch := range slices.Chunk(ids, 500) {
		reads := make([]func() (result.Stored, error), len(batch))
		// A pipeline, not MGET: on Redis Cluster the keys live in different slots.
		_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				reads[i] = GetResultLater(ctx, p, id)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			w.log.Warn("reading stored results after re-subscribing failed; open waits will time out", "err", err)
			return
		}
		for i, id := range batch {
			st, err := reads[i]()
			if err != nil {
				w.log.Error("unreadable stored result; its waiters will time out", "signalId", id, "err", err)
				continue
			}
			if !st.Found {
				continue
			}
			for _, ch := range w.take(id) {
				ch <- st.Result // buffered, and each channel is registered once: never blocks
			}
		}
	}
}
