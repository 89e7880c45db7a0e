package connectors

import (
	"container/list"
	"crypto/sha256"
	"strconv"
	"strings"
	"sync"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// DefaultCacheSize bounds the cached clients of a Clients.
const DefaultCacheSize = 1024

// Clients opens exchange connections: it opens a connection's sealed credentials with the
// master key ring and connects with the connection's connector, caching one connected
// client per connection and sealed blob (up to CacheSize, least recently used dropped
// first). A new blob (new key in the Secret, master-key rotation) or new endpoints replace
// the entry. The executor trades through it and webhookd reads balances through it.
//
// Its errors are EXCHANGE_DISCONNECTED and name no secret.
type Clients struct {
	// Keys opens the sealed credentials (--master-key-file and previous keys); nil refuses
	// every connection.
	Keys *credentials.Ring
	// Connectors by exchange name (the connection's spec.exchange).
	Connectors map[string]exchange.Connector
	// CacheSize bounds the cached clients (zero: DefaultCacheSize).
	CacheSize int

	mu    sync.Mutex
	lru   *list.List               // of *entry, most recently used first
	byUID map[string]*list.Element // connection UID -> element
}

type entry struct {
	uid         string
	fingerprint [sha256.Size]byte // of the blob, exchange and endpoints the client was made from
	live        exchange.Live
}

// Client returns the cached client of c or connects a new one. c must be Ready with sealed
// credentials; the caller checks ownership and readiness first.
func (v *Clients) Client(c credentials.Connection) (exchange.Live, error) {
	fp := fingerprint(c)
	v.mu.Lock()
	if el, ok := v.byUID[c.UID]; ok {
		e := el.Value.(*entry)
		if e.fingerprint == fp {
			v.lru.MoveToFront(el)
			v.mu.Unlock()
			return e.live, nil
		}
	}
	v.mu.Unlock()

	connector := v.Connectors[c.Exchange]
	if connector == nil {
		return nil, errs.New(errs.ExchangeDisconnected, "no connector for %s in this process", c.Exchange)
	}
	if v.Keys == nil {
		return nil, errs.New(errs.ExchangeDisconnected, "this process has no master key to open exchange credentials")
	}
	creds, err := v.Keys.OpenCredentials(c.Sealed, credentials.AAD(c.UID))
	if err != nil {
		// The cause names no secret (see runtime/credentials); it stays out of the message.
		return nil, errs.Wrap(err, errs.ExchangeDisconnected, "the credentials of exchange connection %q cannot be opened by this process", c.Name)
	}
	live, err := connector.Connect(creds, c.Endpoints())
	if err != nil {
		// A connector's error might quote what it was given: keep it out entirely.
		return nil, errs.New(errs.ExchangeDisconnected, "cannot connect to %s", c.Exchange)
	}
	v.put(c.UID, fp, live)
	return live, nil
}

func (v *Clients) put(uid string, fp [sha256.Size]byte, live exchange.Live) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lru == nil {
		v.lru, v.byUID = list.New(), map[string]*list.Element{}
	}
	if el, ok := v.byUID[uid]; ok {
		el.Value = &entry{uid: uid, fingerprint: fp, live: live}
		v.lru.MoveToFront(el)
		return
	}
	v.byUID[uid] = v.lru.PushFront(&entry{uid: uid, fingerprint: fp, live: live})
	size := v.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	for v.lru.Len() > size {
		last := v.lru.Back()
		v.lru.Remove(last)
		delete(v.byUID, last.Value.(*entry).uid)
	}
}

// Forget drops the cached client of a connection (refused or deleted).
func (v *Clients) Forget(uid string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if el, ok := v.byUID[uid]; ok {
		v.lru.Remove(el)
		delete(v.byUID, uid)
	}
}

// Cached is the number of cached clients.
func (v *Clients) Cached() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lru == nil {
		return 0
	}
	return v.lru.Len()
}

// fingerprint identifies what a client was built from: the sealed blob (so a new key or a
// rotation replaces the client) and where it connects.
func fingerprint(c credentials.Connection) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join([]string{c.Exchange, strconv.FormatBool(c.Testnet),
		c.SpotEndpoint, c.FuturesEndpoint, c.Sealed}, "\x00")))
}
