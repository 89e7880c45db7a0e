package position

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

const (
	// MaxOrders is how many client order IDs a bot's order list keeps (newest first).
	MaxOrders = 5000
	// OrderTTL is how long an order record is kept after its last change when the process
	// sets no history retention (SetOrderTTL): the default retention.
	OrderTTL = 90 * 24 * time.Hour
)

// orderTTL is the record TTL (OrderTTL until SetOrderTTL).
var orderTTL = store.NewTTL(OrderTTL, time.Second)

// SetOrderTTL makes d (at least a second) the life of an order record after its last
// change, for every later write of this process. The executor sets it to its history
// retention at start, so that a record lives exactly as long as the trades and the order
// list entries the retention keeps; the writes stay one constant argument away from the
// record, and no write site carries the setting.
func SetOrderTTL(d time.Duration) { orderTTL.Set(d) }

// RecordTTL is the life of a finished order record after its last change (see
// SetOrderTTL).
func RecordTTL() time.Duration { return orderTTL.Get() }

// ttlOf is the life of rec after this write: RecordTTL once it is finished; an order still
// open on its venue keeps its record at least OrderTTL, however short the hot window, since
// its fills and its cancel are booked against it.
func ttlOf(rec OrderRecord) time.Duration {
	if rec.Status.Terminal() {
		return RecordTTL()
	}
	return max(RecordTTL(), OrderTTL)
}

// Order records have one writer, this file, in two forms that make the same writes (the
// record with its TTL, and the capped list for a new record): StageOrder queues them as
// plain commands into a caller's transaction, where they cost what a SET costs; a caller
// whose write must depend on a condition of its own (the executor stores a signal's plan
// and its first pending order only if no other attempt's plan is there) puts OrderLua into
// its script. The tests check both forms against the same expected state, so the record's
// encoding, TTL and list cap are this package's alone.

// OrderLua returns the Lua statements that make an OrderWrite inside a script: they read the
// write's Keys from KEYS[keyAt] to KEYS[keyAt+2] and its Args from ARGV[argAt] to
// ARGV[argAt+2]. The statements return nothing, so that the script goes on after them.
func OrderLua(keyAt, argAt int) string {
	return fmt.Sprintf(`redis.call('SET', KEYS[%[1]d], ARGV[%[3]d], 'EX', ARGV[%[5]d])
if ARGV[%[4]d] ~= '' then
  redis.call('LPUSH', KEYS[%[2]d], ARGV[%[4]d])
  redis.call('LTRIM', KEYS[%[2]d], 0, %[6]d)
end
`, keyAt, keyAt+1, argAt, argAt+1, argAt+2, MaxOrders-1) + store.ArchiveLua(keyAt+2, store.ArchiveOrder, argAt)
}

// OrderWrite is one write of an order record, as the Lua of OrderLua takes it: Keys are the
// record, the bot's order list and its partition's archive stream (every version of a
// record is archived), Args the record as stored (EncodeOrder), the client order ID to list ("" when listed
// already) and the record's TTL in seconds (RecordTTL).
type OrderWrite = Write

// NewOrderWrite encodes the write of rec; isNew (a record not stored before) also lists it
// at the head of the bot's orders.
func NewOrderWrite(rec OrderRecord, isNew bool) (OrderWrite, error) {
	data, err := EncodeOrder(rec)
	if err != nil {
		return OrderWrite{}, err
	}
	listed := ""
	if isNew {
		listed = rec.ClientOrderID
	}
	return OrderWrite{
		Keys: []string{store.BookOrder(rec.BotID, rec.ClientOrderID), store.BookOrders(rec.BotID), store.ArchiveOf(rec.BotID)},
		Args: []any{data, listed, int64(ttlOf(rec) / time.Second)},
	}, nil
}

// StageOrder adds the write of rec to a transaction (see NewOrderWrite).
func StageOrder(ctx context.Context, p redis.Pipeliner, rec OrderRecord, isNew bool) error {
	w, err := NewOrderWrite(rec, isNew)
	if err != nil {
		return err
	}
	p.Set(ctx, w.Keys[0], w.Args[0], ttlOf(rec))
	if isNew {
		p.LPush(ctx, w.Keys[1], rec.ClientOrderID)
		p.LTrim(ctx, w.Keys[1], 0, MaxOrders-1)
	}
	p.XAdd(ctx, &redis.XAddArgs{Stream: w.Keys[2], Values: []any{"k", store.ArchiveOrder, "v", w.Args[0]}})
	return nil
}
