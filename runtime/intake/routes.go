package intake

import "sync"

// routes remembers, per webhook hash, the bot its route led to, so that a known webhook costs
// one round trip (the script) instead of two. Only routes that resolved to a live bot are
// kept, and the script validates each use against the bot's hash, so a remembered route is
// never trusted for more than which keys to run the script on: a wrong one costs a second
// read of the route, never a wrong answer. There is one entry per bot that received a signal
// here; past maxRoutes they start over.
type routes struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxRoutes bounds the remembered routes (about 200 bytes each).
const maxRoutes = 1 << 17

func (r *routes) get(hash string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	bot, ok := r.m[hash]
	return bot, ok
}

func (r *routes) put(hash, bot string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRoutes {
		r.m = make(map[string]string)
	}
	r.m[hash] = bot
}

// drop forgets hash's route if it still leads to bot (another request may have stored a
// fresher one meanwhile).
func (r *routes) drop(hash, bot string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[hash] == bot {
		delete(r.m, hash)
	}
}
