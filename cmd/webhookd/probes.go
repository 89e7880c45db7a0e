package main

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/queue"
)

// waiterProbes are webhookd's probes:
// live while the result waiter's loop goes round (it does through a Redis outage, retrying
// its subscription), ready while Redis answers too.
func waiterProbes(rdb redis.UniversalClient, waiter *queue.Waiter) *daemon.Probes {
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	probes.Watch("the result waiter's loop", waiterRoundBound, waiter.LoopRound)
	return probes
}

// waiterRoundBound is how long the result waiter's loop may go without a round before the
// process counts as stuck: a round is one receive of at most 15 s, then a PING or a
// back-off of at most 2 s. A variable for the test.
var waiterRoundBound = 2 * time.Minute
