package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SplitStreamID reads a stream entry ID ("ms-seq") as its two numbers, which compare as
// Redis orders the entries; ok is false for anything else.
func SplitStreamID(id string) (ms, seq int64, ok bool) {
	m, s, found := strings.Cut(id, "-")
	a, err1 := strconv.ParseInt(m, 10, 64)
	b, err2 := strconv.ParseInt(s, 10, 64)
	return a, b, found && err1 == nil && err2 == nil
}

// FindInStream reads stream key from its start, a page at a time, until found accepts an
// entry (returned, true) or the stream ends. For rare look-ups of entries not yet copied
// elsewhere (a late signal's result or paper order still waiting for the archive).
func FindInStream(ctx context.Context, rdb redis.UniversalClient, key string, found func(redis.XMessage) bool) (redis.XMessage, bool, error) {
	const page = 500
	start := "-"
	for {
		msgs, err := rdb.XRangeN(ctx, key, start, "+", page).Result()
		if err != nil {
			return redis.XMessage{}, false, err
		}
		for _, m := range msgs {
			if found(m) {
				return m, true, nil
			}
		}
		if len(msgs) < page {
			return redis.XMessage{}, false, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}
