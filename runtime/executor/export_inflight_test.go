package executor

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// MaxInlineWait is the longest rest of a request window an attempt waits for in the handler.
const MaxInlineWait = maxInlineWait

// SentAt is the send time stored with the staged request of a signal's leg (zero if none).
func SentAt(ctx context.Context, rdb redis.UniversalClient, botID, signalID, leg string) (time.Time, error) {
	s, err := rdb.HGet(ctx, store.SignalProgress(botID, signalID), prefixSent+leg).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(ms), err
}
