package store

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// masterChanges counts the master changes the clients of this process have seen.
var masterChanges atomic.Uint64

// MasterChanges is how many times a client Connect made (a single server or a
// Sentinel-managed master) has found, on a new connection, a different Redis process as its
// master than on its previous one: a failover promoted a replica, or the server restarted.
// Either way writes the former master acknowledged may be missing on the new one (Redis
// replicates and persists asynchronously). A writer reads it before its writes and again
// after it confirmed them (WAIT): a different count means they may be gone, and must be
// checked on the master now serving. A Cluster client counts nothing: its nodes are many
// masters and it waits for no replica.
func MasterChanges() uint64 { return masterChanges.Load() }

// noteMaster records the run ID of the master a new connection reached. A run ID is new at
// every start of a Redis process, so a promoted replica and a restarted server both differ
// from the master the client knew.
func (p *ackPolicy) noteMaster(runID string) {
	if runID == "" {
		return
	}
	if old := p.master.Swap(&runID); old != nil && *old != runID {
		masterChanges.Add(1)
	}
}

// ErrMasterChanged: a command under GuardMaster was not sent, because the master changed
// since the guard was taken.
var ErrMasterChanged = errors.New("redis: the master changed since the operation began; not sent")

type guardKey struct{}

// GuardMaster returns ctx under which the commands of clients Connect made fail with
// ErrMasterChanged, without reaching Redis, once the process has seen a master change
// (MasterChanges) since the call. An operation of several writes runs under it so that it
// never writes its later part on a new master that lacks the earlier part the old one
// acknowledged and lost: it fails instead, and is retried from what the new master holds.
//
// Each command is checked before it is sent, and again when it opens a connection (a new
// connection is how a client reaches a new master). A command go-redis retries on a
// connection another command opened is checked only before its first try: with the
// Sentinel's failover taking seconds and the retries about one, that needs the failover to
// end inside one command's retries.
func GuardMaster(ctx context.Context) context.Context {
	return GuardMasterAt(ctx, MasterChanges())
}

// GuardMasterAt is GuardMaster for an operation that read MasterChanges as changes before
// it began.
func GuardMasterAt(ctx context.Context, changes uint64) context.Context {
	return context.WithValue(ctx, guardKey{}, changes)
}

// unguarded is ctx without its GuardMaster, for the client's own reads on a new connection.
func unguarded(ctx context.Context) context.Context { return context.WithValue(ctx, guardKey{}, nil) }

// guardBroken: ctx is under a GuardMaster taken before the latest master change.
func guardBroken(ctx context.Context) bool {
	g, ok := ctx.Value(guardKey{}).(uint64)
	return ok && g != MasterChanges()
}

// masterGuard is the hook that enforces GuardMaster on a client.
type masterGuard struct{}

func (masterGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (masterGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if guardBroken(ctx) {
			cmd.SetErr(ErrMasterChanged)
			return ErrMasterChanged
		}
		return next(ctx, cmd)
	}
}

func (masterGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if guardBroken(ctx) {
			for _, cmd := range cmds {
				cmd.SetErr(ErrMasterChanged)
			}
			return ErrMasterChanged
		}
		return next(ctx, cmds)
	}
}
