package paper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store"
)

// A fill is one script on the account's slot, a compare-and-set (docs/decisions.md,
// "Signal path at the limit: paper fill"). Go computes the fill, with decimals, from the
// account's fields and the bot's holding as stored strings; the script writes the new
// balance, margin, holding and the order only when those strings are still the ones the
// computation used, and otherwise answers the current ones, so that Go computes again with
// no read of its own. An order already stored under the client order ID is answered
// instead of anything else: a retried leg finds its fill. Lua compares and stores strings
// only; no figure is computed there.

// DefaultOrderTTL is how long a paper order is kept in Redis under its client order ID
// when the process sets no other life (SetOrderTTL). It outlives the executor's progress
// record of the signal (seven days from its last write), which is what a retry of the
// signal follows to look its orders up: a retry after that would not find its plan either.
const DefaultOrderTTL = 8 * 24 * time.Hour

// MinOrderTTL is the shortest life SetOrderTTL gives a paper order: every retry inside a
// signal's retry budget (about two minutes) still finds its orders in Redis.
const MinOrderTTL = 10 * time.Minute

// orderTTL is the paper orders' life (DefaultOrderTTL until SetOrderTTL).
var orderTTL = store.NewTTL(DefaultOrderTTL, MinOrderTTL)

// SetOrderTTL makes d (at least MinOrderTTL) the life in Redis of every paper order this
// process stores after the call. The executor sets it to its hot window when the accounts
// are recorded in PostgreSQL, where each fill's order is kept too (record.go): a signal
// older than that life looks its orders up there as well before it places any (Recall).
func SetOrderTTL(d time.Duration) { orderTTL.Set(d) }

// OrderTTL is the life in Redis of a paper order stored now (see SetOrderTTL).
func OrderTTL() time.Duration { return orderTTL.Get() }

// The account fields a fill computes from, in the order of fillInput.acct.
var fillFields = [...]string{fieldBalance, fieldMargin, fieldFeeRate, fieldCurrency}

// fillScript: KEYS account, holdings, order, the old orders hash, the account's archive
// stream; ARGV client order ID, holdings field, TTL seconds, then for a write the five
// expected strings (balance, margin, fee rate, currency, holding; "" for a missing one),
// the new balance, margin and holding ("" deletes it), the order, and "1" when the account
// is recorded in PostgreSQL (record.go): the write then needs the account restored after a
// lost Redis, raises its change number and appends the change to the archive stream.
// Without the write arguments it only reads. Answers {"placed", order}, {"current",
// balance, margin, feeRate, currency, holding}, {"filled"} or {"unrestored"}.
var fillScript = redis.NewScript(`
local o = redis.call('GET', KEYS[3])
if not o then o = redis.call('HGET', KEYS[4], ARGV[1]) end
if o then return {'placed', o} end
local a = redis.call('HMGET', KEYS[1], '` + strings.Join(fillFields[:], "', '") + `')
local cur = {a[1] or '', a[2] or '', a[3] or '', a[4] or '', redis.call('HGET', KEYS[2], ARGV[2]) or ''}
local current = {'current', cur[1], cur[2], cur[3], cur[4], cur[5]}
if #ARGV < 12 then return current end
local recorded = ARGV[13] == '1'
if recorded and redis.call('HEXISTS', KEYS[1], '` + fieldRestored + `') == 0 then return {'unrestored'} end
for i = 1, 5 do
	if cur[i] ~= ARGV[3 + i] then return current end
end
redis.call('HSET', KEYS[1], '` + fieldBalance + `', ARGV[9], '` + fieldMargin + `', ARGV[10])
if ARGV[11] == '' then
	redis.call('HDEL', KEYS[2], ARGV[2])
else
	redis.call('HSET', KEYS[2], ARGV[2], ARGV[11])
end
redis.call('SET', KEYS[3], ARGV[12], 'EX', ARGV[3])
if recorded then
  local n = redis.call('HINCRBY', KEYS[1], '` + fieldSeq + `', 1)
` + archiveLua(5, "ARGV[9]", "ARGV[10]", "ARGV[2]", "ARGV[11]", "''", "n", "ARGV[1]", "ARGV[12]") + `end
return {'filled'}
`)

// fillInput is what a fill computes from, as stored: the account's fields (fillFields;
// balance "" when there is no account), the bot's holding or position field (prev, ""
// for none), and the order already under the client order ID (placed, "" for none).
type fillInput struct {
	acct   [len(fillFields)]string
	prev   string
	placed string
}

// Ahead is a paper account's state read by a caller in its own pipeline before the fills
// it expects (ReadAheadLater): the account's fields, one bot's holdings fields of some
// symbols, and the orders under some client order IDs. An exchange given it (WithAhead)
// computes a fill that these values cover from them and sends its script at once: one
// round trip per fill instead of a read and the script. The script checks the values, so
// one changed since (another bot of the account filled in between) costs a second script,
// never a wrong fill. The exchange keeps what its own fills wrote in it, so a second leg
// on the same holding needs no read either.
type Ahead struct {
	mu     sync.Mutex
	acct   [len(fillFields)]string
	fields map[string]string // holdings field -> value ("" none)
	orders map[string]string // client order ID -> stored order ("" none)
}

// Option configures an Exchange.
type Option func(*Exchange)

// WithAhead gives the exchange a read ahead (see Ahead); a nil one is ignored.
func WithAhead(a *Ahead) Option {
	return func(x *Exchange) {
		if a != nil {
			x.ahead = a
		}
	}
}

// WithRecord makes the exchange's fills recorded in PostgreSQL (record.go): each appends
// its change (and its order) to the account's archive stream, a fill on an account that
// Redis lost first restores it (Records.Account) and computes again, and under Recall an
// order is looked up there too. Nil: not recorded.
func WithRecord(r *Records) Option {
	return func(x *Exchange) { x.records = r }
}

// WithCoalescer sends the exchange's fills through c, in one round trip with the other
// signals' commands of the same moment (store.Coalescer); a nil one is ignored.
func WithCoalescer(c *store.Coalescer) Option {
	return func(x *Exchange) { x.co = c }
}

// ReadAheadLater queues on c (a pipeline) the account's hash, as ReadAccountLater does,
// plus, for fills of the bot scope, its holdings fields of symbols (spot and futures alike, the bot's kind
// being unknown yet) and the orders under clientOrderIDs. The returned function, called
// once the pipeline has run, decodes the account's State (as ReadAccountLater) and the
// Ahead to open the bot's exchange with.
func ReadAheadLater(ctx context.Context, c redis.Cmdable, accountID, scope string, symbols, clientOrderIDs []string) func() (State, *Ahead, error) {
	acct := c.HGetAll(ctx, store.PaperAccount(accountID))
	var fields []string
	for _, sym := range symbols {
		if base, _, ok := strings.Cut(sym, "/"); ok {
			fields = append(fields, spotField(scope, base), futField(scope, sym))
		}
	}
	var held *redis.SliceCmd
	if len(fields) > 0 {
		held = c.HMGet(ctx, store.PaperPositions(accountID), fields...)
	}
	orders := make([]*redis.StringCmd, len(clientOrderIDs))
	var old *redis.SliceCmd
	if len(clientOrderIDs) > 0 {
		for i, cid := range clientOrderIDs {
			orders[i] = c.Get(ctx, store.PaperOrder(accountID, cid))
		}
		old = c.HMGet(ctx, store.PaperOrders(accountID), clientOrderIDs...)
	}
	return func() (State, *Ahead, error) {
		v, err := acct.Result()
		if err != nil {
			return State{}, nil, err
		}
		st, err := parseState(accountID, v)
		if err != nil {
			return st, nil, err
		}
		a := &Ahead{fields: make(map[string]string, len(fields)), orders: make(map[string]string, len(orders))}
		for i, f := range fillFields {
			a.acct[i] = v[f]
		}
		if err := a.decode(held, fields, orders, old, clientOrderIDs); err != nil {
			return st, nil, err
		}
		return st, a, nil
	}
}

// decode fills a's holdings and orders from the replies of ReadAheadLater's commands.
func (a *Ahead) decode(held *redis.SliceCmd, fields []string, orders []*redis.StringCmd, old *redis.SliceCmd, cids []string) error {
	if held != nil {
		v, err := held.Result()
		if err != nil {
			return err
		}
		for i, f := range fields {
			a.fields[f], _ = v[i].(string)
		}
	}
	var olds []any
	if old != nil {
		var err error
		if olds, err = old.Result(); err != nil {
			return err
		}
	}
	for i, cmd := range orders {
		s, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			s, _ = olds[i].(string)
		} else if err != nil {
			return err
		}
		a.orders[cids[i]] = s
	}
	return nil
}

// input is the fill input the read ahead covers for k (ok false: it lacks the holding).
func (a *Ahead) input(k fillKeys) (fillInput, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev, ok := a.fields[k.posField]
	if !ok || a.acct[0] == "" {
		return fillInput{}, false
	}
	return fillInput{acct: a.acct, prev: prev, placed: a.orders[k.cid]}, true
}

// order is the order stored under cid, as read ahead or placed through this exchange ("":
// none known).
func (a *Ahead) order(cid string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.orders[cid]
}

// learn keeps in a what a fill script answered or wrote for k.
func (a *Ahead) learn(k fillKeys, in fillInput) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fields == nil {
		a.fields, a.orders = map[string]string{}, map[string]string{}
	}
	if in.placed != "" {
		a.orders[k.cid] = in.placed
		return
	}
	a.acct, a.fields[k.posField] = in.acct, in.prev
}

// placeFill fills req at price on the keys k, computing from the read ahead when it
// covers them, else from one read (the script without the write), then running the
// compare-and-set script until it writes or answers a stored order. A refusal is only
// answered from values the script returned, never from a read ahead, so that an order a
// concurrent attempt placed meanwhile is found rather than refused.
func (x *Exchange) placeFill(ctx context.Context, m exchange.MarketInfo, req exchange.OrderRequest, k fillKeys, price decimal.Decimal) (exchange.Order, error) {
	in, ok := x.ahead.input(k)
	fresh, recalledOnce := false, false
	for i := 0; i < maxTxRetries; i++ {
		if !ok {
			var err error
			if in, _, err = x.runFill(ctx, k, nil); err != nil {
				return exchange.Order{}, err
			}
			ok, fresh = true, true
		}
		if in.placed != "" {
			return x.placed(in.placed, req.ClientOrderID)
		}
		if !recalledOnce {
			// A late retry: the order may have left Redis but not PostgreSQL.
			recalledOnce = true
			if v, err := x.recall(ctx, req.ClientOrderID); err != nil {
				return exchange.Order{}, err
			} else if v != "" {
				return x.placed(v, req.ClientOrderID)
			}
		}
		o, w, err := x.fillFrom(m, req, price, in)
		if err != nil {
			if fresh {
				return exchange.Order{}, err
			}
			ok = false
			continue
		}
		a := &fillArgs{in: in, order: o, write: w}
		next, filled, err := x.runFill(ctx, k, a)
		if err != nil {
			return exchange.Order{}, err
		}
		if filled {
			return o, nil
		}
		in, fresh = next, true
	}
	return exchange.Order{}, errs.New(errs.ExchangeError, "paper account %s is busy; retry", x.account)
}

// fillArgs is a fill to write: computed from in, writing the order and write.
type fillArgs struct {
	in    fillInput
	order exchange.Order
	write fillWrite
	data  string
}

// runFill runs fillScript for k: with a nil f it only reads; else it writes f when the
// stored values are still f.in. It answers the stored values (or the order stored under
// k's client order ID), or filled true when it wrote, and keeps either in the read ahead.
func (x *Exchange) runFill(ctx context.Context, k fillKeys, f *fillArgs) (fillInput, bool, error) {
	keys := []string{k.acct, k.pos, k.order, k.orders, store.PaperArchive(x.account)}
	args := []any{k.cid, k.posField, int64(OrderTTL() / time.Second)}
	if f != nil {
		data, err := encodeOrder(x.scope, f.order)
		if err != nil {
			return fillInput{}, false, err
		}
		f.data = data
		args = append(args, f.in.acct[0], f.in.acct[1], f.in.acct[2], f.in.acct[3], f.in.prev,
			f.write.st.balance.String(), f.write.st.margin.String(), f.write.pos, data, flag(x.records != nil))
	}
	run := fillScript.Run
	switch {
	case f != nil && store.ClusterWaits(x.rdb):
		// On a Cluster the account's slot has a master of its own, and the signal's
		// confirmation (its bot slot's fence and WAIT) does not cover it: a fill that
		// master acknowledged alone and lost in a failover would leave the book with a
		// fill the account lacks. So a fill waits for the account slot's replica.
		run = func(ctx context.Context, _ redis.Scripter, keys []string, args ...any) *redis.Cmd {
			return store.AckScript(ctx, x.rdb, fillScript, keys, args...)
		}
	case x.co != nil:
		run = func(ctx context.Context, _ redis.Scripter, keys []string, args ...any) *redis.Cmd {
			return x.co.Script(ctx, fillScript, keys, args...)
		}
	}
	v, err := run(ctx, x.rdb, keys, args...).StringSlice()
	if err != nil {
		return fillInput{}, false, err
	}
	var in fillInput
	switch {
	case len(v) == 1 && v[0] == "filled" && f != nil:
		in = f.in
		in.acct[0], in.acct[1], in.prev = f.write.st.balance.String(), f.write.st.margin.String(), f.write.pos
		x.ahead.learn(k, in)
		x.ahead.learn(k, fillInput{placed: f.data})
		return in, true, nil
	case len(v) == 1 && v[0] == "unrestored" && f != nil:
		// Redis lost the account since it was recorded: put it back, then compute again.
		if err := x.records.Account(ctx, x.account); err != nil {
			return fillInput{}, false, err
		}
		return x.runFill(ctx, k, nil)
	case len(v) == 2 && v[0] == "placed":
		in.placed = v[1]
	case len(v) == 6 && v[0] == "current":
		copy(in.acct[:], v[1:5])
		in.prev = v[5]
	default:
		return fillInput{}, false, fmt.Errorf("paper fill script: unexpected answer %q", v)
	}
	x.ahead.learn(k, in)
	return in, false, nil
}
