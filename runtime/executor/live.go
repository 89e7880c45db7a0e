package executor

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
)

// DefaultLiveFeeRate sizes "N%" orders on exchange accounts: 0.1 %, the highest regular
// spot taker fee of the supported exchanges, so that the fee always fits the balance. Fee
// endpoints of the exchanges can replace it per account later.
var DefaultLiveFeeRate = decimal.RequireFromString("0.001")

// DefaultLiveCacheSize bounds the cached exchange clients of a LiveVenues.
const DefaultLiveCacheSize = 1024

// LiveVenues opens bots' exchange connections (registry.AccountExchange). It reads the
// connection's projection (runtime/credentials) by the bot's Account.ID, refuses what the
// bot may not use, opens the sealed credentials with the master key ring and connects. The
// connected client is cached per connection and sealed blob, so signals reuse it; a new
// blob (new key in the Secret, master-key rotation) or new endpoints replace the entry.
//
// Refusals, as the executor answers them:
//   - no projection, not Ready (refused key, exchange unreachable at validation), no usable
//     credentials, no master key or connector in this executor: EXCHANGE_DISCONNECTED;
//   - the connection belongs to another owner, or its key lacks the trade permission of
//     the bot's market: BOT_DISABLED.
type LiveVenues struct {
	Redis redis.UniversalClient
	// Keys opens the sealed credentials (--master-key-file and previous keys); nil refuses
	// every exchange account.
	Keys *credentials.Ring
	// Connectors by exchange name (the connection's spec.exchange).
	Connectors map[string]exchange.Connector
	// FeeRate sizes "N%" orders (zero: DefaultLiveFeeRate).
	FeeRate decimal.Decimal
	// CacheSize bounds the cached clients (zero: DefaultLiveCacheSize); the least recently
	// used is dropped first.
	CacheSize int

	mu    sync.Mutex
	lru   *list.List               // of *liveEntry, most recently used first
	byUID map[string]*list.Element // connection UID -> element
}

type liveEntry struct {
	uid         string
	fingerprint [sha256.Size]byte // of the blob, exchange and endpoints the client was made from
	live        exchange.Live
}

// Open implements Venues for exchange accounts.
func (v *LiveVenues) Open(ctx context.Context, bot registry.Bot) (Account, error) {
	name := bot.Account.Name
	if bot.Account.ID == "" {
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q does not exist", name)
	}
	c, err := credentials.NewConnections(v.Redis).Get(ctx, bot.Account.ID)
	if errors.Is(err, credentials.ErrNotFound) {
		v.forget(bot.Account.ID)
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q does not exist", name)
	}
	if err != nil {
		return Account{}, err // Redis: retried
	}
	// Ownership first: nothing about someone else's connection is used or revealed.
	if c.Owner == "" || !emails.Same(c.Owner, bot.Owner) {
		return Account{}, errs.New(errs.BotDisabled, "exchange connection %q does not belong to the bot's owner", name)
	}
	if !c.Ready || c.Sealed == "" {
		v.forget(c.UID) // a refused key leaves this process's memory too
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q is not ready (%s)", name, c.Reason)
	}
	kind := exchange.Spot
	if bot.Market == string(exchange.Futures) {
		kind = exchange.Futures
	}
	if !c.CanTrade(kind) {
		return Account{}, errs.New(errs.BotDisabled, "the API key of exchange connection %q lacks the %s trading permission",
			name, credentials.TradePermission(kind))
	}
	live, err := v.client(c)
	if err != nil {
		return Account{}, err
	}
	fee := v.FeeRate
	if fee.IsZero() {
		fee = DefaultLiveFeeRate
	}
	var ex exchange.Exchange = live
	// An adapter whose spot and futures wallets differ (Binance) gives the view of the
	// bot's market, so that balances and sizing read the right wallet.
	if k, ok := live.(interface {
		ForKind(exchange.Kind) exchange.Live
	}); ok {
		ex = k.ForKind(kind)
	}
	return Account{Exchange: ex, FeeRate: fee, Venue: c.Exchange}, nil
}

// client returns the cached client of c or connects a new one.
func (v *LiveVenues) client(c credentials.Connection) (exchange.Live, error) {
	fp := fingerprint(c)
	v.mu.Lock()
	if el, ok := v.byUID[c.UID]; ok {
		e := el.Value.(*liveEntry)
		if e.fingerprint == fp {
			v.lru.MoveToFront(el)
			v.mu.Unlock()
			return e.live, nil
		}
	}
	v.mu.Unlock()

	connector := v.Connectors[c.Exchange]
	if connector == nil {
		return nil, errs.New(errs.ExchangeDisconnected, "this executor cannot trade on %s", c.Exchange)
	}
	if v.Keys == nil {
		return nil, errs.New(errs.ExchangeDisconnected, "this executor has no master key to open exchange credentials")
	}
	creds, err := v.Keys.OpenCredentials(c.Sealed, credentials.AAD(c.UID))
	if err != nil {
		// The cause names no secret (see runtime/credentials); it stays out of the message.
		return nil, errs.Wrap(err, errs.ExchangeDisconnected, "the credentials of exchange connection %q cannot be opened by this executor", c.Name)
	}
	live, err := connector.Connect(creds, c.Endpoints())
	if err != nil {
		// A connector's error might quote what it was given: keep it out entirely.
		return nil, errs.New(errs.ExchangeDisconnected, "cannot connect to %s", c.Exchange)
	}
	v.put(c.UID, fp, live)
	return live, nil
}

func (v *LiveVenues) put(uid string, fp [sha256.Size]byte, live exchange.Live) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lru == nil {
		v.lru, v.byUID = list.New(), map[string]*list.Element{}
	}
	if el, ok := v.byUID[uid]; ok {
		el.Value = &liveEntry{uid: uid, fingerprint: fp, live: live}
		v.lru.MoveToFront(el)
		return
	}
	v.byUID[uid] = v.lru.PushFront(&liveEntry{uid: uid, fingerprint: fp, live: live})
	size := v.CacheSize
	if size <= 0 {
		size = DefaultLiveCacheSize
	}
	for v.lru.Len() > size {
		last := v.lru.Back()
		v.lru.Remove(last)
		delete(v.byUID, last.Value.(*liveEntry).uid)
	}
}

// forget drops the cached client of a connection.
func (v *LiveVenues) forget(uid string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if el, ok := v.byUID[uid]; ok {
		v.lru.Remove(el)
		delete(v.byUID, uid)
	}
}

// Cached is the number of cached clients.
func (v *LiveVenues) Cached() int {
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
