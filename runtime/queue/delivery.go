package queue

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Delivery is the stream entry a Handler is running. A Handler whose last write is a
// script on the entry's slot may acknowledge the entry in that script (AckLua) and say so
// (Acked): the worker then skips its own acknowledgement, one round trip less per signal.
// The entry must be acknowledged only together with the signal's last write: once it is,
// a crash no longer redelivers it.
type Delivery struct {
	// Partition is the queue partition the entry was read from; Stream is its stream and ID
	// the entry's ID.
	Partition  int
	Stream, ID string
	acked      atomic.Bool
}

type deliveryKey struct{}

func withDelivery(ctx context.Context, d *Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

// DeliveryOf is the entry the Handler called with ctx is running; nil outside a consumer.
func DeliveryOf(ctx context.Context) *Delivery {
	d, _ := ctx.Value(deliveryKey{}).(*Delivery)
	return d
}

// Acked records that the Handler's script acknowledged the entry (AckLua replied 1).
func (d *Delivery) Acked() { d.acked.Store(true) }

// AckArgs are AckLua's arguments for the entry: its ID.
func (d *Delivery) AckArgs() []any { return []any{d.ID} }

// AckLua returns a Lua statement that acknowledges and deletes entry ARGV[argAt] of stream
// KEYS[keyAt], as the worker's own acknowledgement does, and sets the local acked to 1; it
// leaves it 0 when the stream or its group is gone (the bot was deleted: nothing to
// acknowledge). The script must declare `local acked = 0` before it.
func AckLua(keyAt, argAt int) string {
	return fmt.Sprintf(`local r = redis.pcall('XACK', KEYS[%[1]d], '%[3]s', ARGV[%[2]d])
if type(r) == 'number' then
  redis.call('XDEL', KEYS[%[1]d], ARGV[%[2]d])
  acked = 1
end
`, keyAt, argAt, Group)
}
