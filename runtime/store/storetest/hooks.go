package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrCrash is what a command Crash stops fails with.
var ErrCrash = errors.New("storetest: crashed before this command")

// Crash is a client hook (AddHook) that fails the commands its rule picks before they are
// sent, as if the process had died there: a test runs a sequence of Redis steps with a crash
// at a chosen step and checks what it leaves. A pipeline or transaction holding a picked
// command fails as a whole.
type Crash struct {
	mu   sync.Mutex
	rule func(redis.Cmder) bool
}

// At sets the rule; nil crashes nothing.
func (c *Crash) At(rule func(redis.Cmder) bool) {
	c.mu.Lock()
	c.rule = rule
	c.mu.Unlock()
}

func (c *Crash) picks(cmd redis.Cmder) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rule != nil && c.rule(cmd)
}

func (c *Crash) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *Crash) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.picks(cmd) {
			return ErrCrash
		}
		return next(ctx, cmd)
	}
}

func (c *Crash) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if c.picks(cmd) {
				return ErrCrash
			}
		}
		return next(ctx, cmds)
	}
}

// Trips is a client hook (AddHook) that records round trips: one per command sent alone, one
// per pipeline or MULTI/EXEC block (however many commands it holds). Take gives each as its
// commands' names, space-separated; TakeCommands gives the commands themselves, for a test
// that asks which keys a trip touched. Tests hold the per-signal round trips to a ceiling
// with it.
type Trips struct {
	mu    sync.Mutex
	trips [][]redis.Cmder
}

func (c *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds)
		return next(ctx, cmds)
	}
}

func (c *Trips) add(cmds []redis.Cmder) {
	c.mu.Lock()
	c.trips = append(c.trips, cmds)
	c.mu.Unlock()
}

// Take returns the round trips recorded since the last Take (or TakeCommands), as their
// commands' names, and forgets them.
func (c *Trips) Take() []string {
	trips := c.TakeCommands()
	out := make([]string, len(trips))
	for i, cmds := range trips {
		names := make([]string, len(cmds))
		for j, cmd := range cmds {
			names[j] = cmd.Name()
		}
		out[i] = strings.Join(names, " ")
	}
	return out
}

// TakeCommands returns the round trips recorded since the last Take, as their commands,
// and forgets them.
func (c *Trips) TakeCommands() [][]redis.Cmder {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.trips
	c.trips = nil
	return out
}
