package notify

import (
	"context"
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Tell appends a user's fact that no archived record carries (an approval asked for or
// decided, a connection that stopped working) to the archive stream of the user's
// partition, where notifyd reads it beside the bots' facts. It is written after the change
// it tells: a crash between the two loses the message, never tells of a change that was
// not made.
func Tell(ctx context.Context, rdb redis.Cmdable, e Event) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return rdb.XAdd(ctx, &redis.XAddArgs{Stream: store.Archive(store.PartitionOf(e.User)),
		Values: []any{"k", store.ArchiveUserFact, "u", e.User, "v", string(v)}}).Err()
}
