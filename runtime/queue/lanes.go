package queue

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// item is one entry a partition holds: read, decoded, and waiting or running.
type item struct {
	i   int // priority index
	msg redis.XMessage
	env Envelope
	// masters is store.MasterChanges before the entry was read: when it has moved since,
	// the master now serving may not have the entry (see worker.stillQueued).
	masters uint64
	// leave tells Options.Gate the entry's signal is done (set when it starts).
	leave func()
}

// lane is one bot's entries in a partition: at most one runs; the others wait behind it,
// highest priority first and in stream order within a priority (per-bot order).
type lane struct {
	bot     string
	waiting [numPriorities][]item
	running bool
	// ready: the lane is in lanes.ready, waiting for a free slot.
	ready bool
}

// insert adds an entry to its priority's waiting list in stream order. Entries arrive in
// stream order except after a rewind, which can bring back an older entry of the bot (one
// delivered by a read whose reply was lost) behind newer ones already waiting.
func (ln *lane) insert(it item) {
	q := ln.waiting[it.i]
	at := len(q)
	for at > 0 && streamIDLess(it.msg.ID, q[at-1].msg.ID) {
		at--
	}
	ln.waiting[it.i] = slices.Insert(q, at, it)
}

// next is the lane's next entry, highest priority first; false when it has none.
func (ln *lane) next() (item, bool) {
	for i := range ln.waiting {
		if len(ln.waiting[i]) > 0 {
			it := ln.waiting[i][0]
			ln.waiting[i] = ln.waiting[i][1:]
			return it, true
		}
	}
	return item{}, false
}

// head is the priority index of the lane's next entry, or numPriorities when it has none.
func (ln *lane) head() int {
	for i := range ln.waiting {
		if len(ln.waiting[i]) > 0 {
			return i
		}
	}
	return numPriorities
}

// before: a's next entry goes before b's: higher priority, or the same priority (one
// stream) and queued earlier.
func (a *lane) before(b *lane) bool {
	ha, hb := a.head(), b.head()
	if ha != hb || ha == numPriorities {
		return ha < hb
	}
	return streamIDLess(a.waiting[ha][0].msg.ID, b.waiting[hb][0].msg.ID)
}

// streamIDLess compares two entry IDs of one stream ("ms-seq").
func streamIDLess(a, b string) bool {
	ams, aseq, _ := strings.Cut(a, "-")
	bms, bseq, _ := strings.Cut(b, "-")
	if ams != bms {
		return len(ams) < len(bms) || (len(ams) == len(bms) && ams < bms)
	}
	return len(aseq) < len(bseq) || (len(aseq) == len(bseq) && aseq < bseq)
}

type heldKey struct {
	i  int
	id string
}

// lanes schedules a partition's entries: one running signal per bot, at most MaxInFlight at
// once, the free slots going to the ready lane whose next entry has the highest priority
// (the earliest queued among equals, so with one slot a partition runs in stream order as it
// did before bots ran side by side). The reader adds entries; a finishing signal starts the
// next one itself, so a bot's next signal never waits for the reader's blocking read.
type lanes struct {
	w     *worker
	mu    sync.Mutex
	byBot map[string]*lane
	ready []*lane
	held  map[heldKey]struct{}
	// running counts signals running; room is signalled when an entry leaves.
	running int
	room    chan struct{}
	// idle hands an entry to a goroutine parked after its signal (see park).
	idle chan work
	wg   sync.WaitGroup
}

func (ls *lanes) init(w *worker) {
	ls.w = w
	ls.byBot = map[string]*lane{}
	ls.held = map[heldKey]struct{}{}
	ls.room = make(chan struct{}, 1)
	ls.idle = make(chan work)
}

// holds: the entry is already held (running or waiting).
func (ls *lanes) holds(i int, id string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	_, ok := ls.held[heldKey{i, id}]
	return ok
}

// heldIn is how many entries of priority index i are held.
func (ls *lanes) heldIn(i int) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for k := range ls.held {
		if k.i == i {
			n++
		}
	}
	return n
}

// add queues entries, each behind its bot's earlier ones, and starts what can start: the
// entries of one read start together.
func (ls *lanes) add(its ...item) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, it := range its {
		ls.held[heldKey{it.i, it.msg.ID}] = struct{}{}
		ln := ls.byBot[it.env.BotID]
		if ln == nil {
			ln = &lane{bot: it.env.BotID}
			ls.byBot[it.env.BotID] = ln
		}
		ln.insert(it)
		if !ln.running && !ln.ready {
			ln.ready = true
			ls.ready = append(ls.ready, ln)
		}
	}
	ls.schedule()
}

// schedule starts ready lanes while slots are free. Called with mu held. Nothing new starts
// once the worker is done (lease lost, or asked to stop): what waits stays pending in the
// streams for the partition's next owner. Every entry is taken (and has entered the Gate)
// before the first one starts, so that the Gate knows them all from the start.
func (ls *lanes) schedule() {
	var starts []work
	for {
		ln, it, ok := ls.take()
		if !ok {
			break
		}
		starts = append(starts, work{ln, it})
	}
	for _, w := range starts {
		select {
		case ls.idle <- w: // a parked goroutine takes it
		default:
			ls.wg.Add(1)
			go ls.run(w.ln, w.it)
		}
	}
}

// take claims a free slot for the ready lane whose next entry goes first, and returns that
// entry; false when no slot is free, no lane is ready or the worker is done. Called with mu
// held.
func (ls *lanes) take() (*lane, item, bool) {
	for ls.running < ls.w.c.opt.MaxInFlight && len(ls.ready) > 0 && !ls.w.done() {
		best := 0
		for k, ln := range ls.ready {
			if ln.before(ls.ready[best]) {
				best = k
			}
		}
		ln := ls.ready[best]
		ls.ready = append(ls.ready[:best], ls.ready[best+1:]...)
		ln.ready = false
		it, ok := ln.next()
		if !ok {
			continue
		}
		ln.running = true
		ls.running++
		it.leave = func() {}
		if g := ls.w.c.opt.Gate; g != nil {
			it.leave = g.Enter(1)
		}
		return ln, it, true
	}
	return nil, item{}, false
}

// run executes one entry, frees the bot's lane and its slot, and goes on with the entry
// that goes first next; with none, it parks for the next one scheduled. Goroutines live per
// slot rather than per signal, so the stack a signal grows (Redis client, JSON) is reused
// instead of grown again, by copying, for every signal.
func (ls *lanes) run(ln *lane, it item) {
	defer ls.wg.Done()
	for {
		ls.w.execute(it)
		it.leave()
		ls.mu.Lock()
		delete(ls.held, heldKey{it.i, it.msg.ID})
		ls.running--
		ln.running = false
		if ln.head() < numPriorities {
			ln.ready = true
			ls.ready = append(ls.ready, ln)
		} else {
			delete(ls.byBot, ln.bot)
		}
		next, nextIt, ok := ls.take()
		ls.schedule()
		ls.mu.Unlock()
		select {
		case ls.room <- struct{}{}:
		default:
		}
		if !ok {
			w, parked := ls.park()
			if !parked {
				return
			}
			next, nextIt = w.ln, w.it
		}
		ln, it = next, nextIt
	}
}

// idleFor is how long a goroutine whose slot fell free waits for the next entry before it
// exits.
const idleFor = 30 * time.Second

// work is an entry handed to a parked goroutine, its slot claimed (take).
type work struct {
	ln *lane
	it item
}

// park waits up to idleFor for schedule to hand this goroutine an entry; false when none
// came, or the worker is done (so that wait returns once the running signals have).
func (ls *lanes) park() (work, bool) {
	t := time.NewTimer(idleFor)
	defer t.Stop()
	select {
	case w := <-ls.idle:
		return w, true
	case <-t.C:
	case <-ls.w.l.ctx.Done():
	case <-ls.w.l.stop:
	}
	return work{}, false
}

// waitForRoom blocks the reader while the partition holds MaxHeld entries; false if the
// worker became done meanwhile.
func (ls *lanes) waitForRoom() bool {
	for {
		ls.mu.Lock()
		n := len(ls.held)
		ls.mu.Unlock()
		if n < ls.w.c.opt.MaxHeld {
			return true
		}
		select {
		case <-ls.room:
		case <-ls.w.l.ctx.Done():
			return false
		case <-ls.w.l.stop:
			return false
		}
	}
}

// wait returns when no signal of the partition is running any more.
func (ls *lanes) wait() { ls.wg.Wait() }
