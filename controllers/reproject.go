package controllers

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultReprojectCheckPeriod is how often the leader looks for the projection marker when
// Options.ReprojectCheckPeriod is zero.
const DefaultReprojectCheckPeriod = 5 * time.Second

// reprojector notices that Redis lost its data and has every SignalBot, PaperAccount and
// ExchangeConnection reconciled again. The controllers only wake on changes in Kubernetes,
// so without it an emptied Redis (FLUSHALL, a new server with no data, a failover to an
// empty replica) would stay empty until each object next changed. Losing the data is
// detected by the absence of store.ProjectionMarker, checked every period and at once after
// the client dials a new connection (a restarted or replaced server). The marker is written
// only after every object has been queued; a leader that stops in between leaves it
// missing, and its successor reconciles everything at start-up anyway.
//
// A marker the leader did not write itself (one found at its start, or one a restored
// backup put back) means Redis may hold projections of bots deleted since the marker was
// written; those are removed (prune).
//
// It runs on the leader only: the reconcilers it feeds run there.
type reprojector struct {
	rdb    redis.UniversalClient
	reader client.Reader
	period time.Duration
	now    func() time.Time
	// bots, papers and conns feed the reconcilers' source.Channel watches.
	bots, papers, conns chan event.GenericEvent
	// nudge asks for a check before the period ends (a new Redis connection).
	nudge chan struct{}
	// apiReader confirms with the API server that a projected bot is gone; forget removes
	// such a bot's runtime state (the SignalBot reconciler's, with a tombstone). Both nil:
	// no pruning.
	apiReader client.Reader
	forget    func(ctx context.Context, uid string) error
	// written is the marker this leader wrote or has pruned under ("": none yet).
	written string
}

func newReprojector(rdb redis.UniversalClient, reader client.Reader, period time.Duration, now func() time.Time) *reprojector {
	if now == nil {
		now = time.Now
	}
	return &reprojector{
		rdb: rdb, reader: reader, period: orDefault(period, DefaultReprojectCheckPeriod), now: now,
		bots:   make(chan event.GenericEvent, 1024),
		papers: make(chan event.GenericEvent, 1024),
		conns:  make(chan event.GenericEvent, 1024),
		nudge:  make(chan struct{}, 1),
	}
}

// NeedLeaderElection: only the leader reconciles, so only the leader re-projects.
func (p *reprojector) NeedLeaderElection() bool { return true }

// Start checks at once (a leader that has just taken over may face an emptied Redis), then
// every period and after every new connection, until ctx ends.
func (p *reprojector) Start(ctx context.Context) error {
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	for {
		p.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-p.nudge:
		}
	}
}

// check re-projects everything when the marker is missing. A marker this leader did not
// write (found at its start, or put back with a restored backup while it ran) means Redis
// may hold projections of bots deleted since: those are pruned. A Redis that does not
// answer is left to the next check: the readiness probe and the reconcilers' own errors
// report it.
func (p *reprojector) check(ctx context.Context) {
	v, err := p.rdb.Get(ctx, store.ProjectionMarker()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		p.reproject(ctx)
	case err == nil && v != p.written:
		if p.prune(ctx) {
			p.written = v
		}
	}
}

// reproject queues every object for its reconciler, then writes a new marker.
func (p *reprojector) reproject(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("reproject")
	logger.Info("Redis holds no projection marker (emptied, replaced or new): re-projecting every SignalBot, PaperAccount and ExchangeConnection")
	queued, err := p.enqueueAll(ctx)
	if err != nil {
		reprojections.WithLabelValues("error").Inc()
		logger.Error(err, "cannot queue every object for re-projection; trying again at the next check")
		return
	}
	// Unique per write, so that a marker restored with a backup is told apart from this one.
	marker := p.now().UTC().Format(time.RFC3339) + " " + uuid.NewString()
	if err := p.rdb.Set(ctx, store.ProjectionMarker(), marker, 0).Err(); err != nil {
		reprojections.WithLabelValues("error").Inc()
		logger.Error(err, "cannot write the projection marker; the next check queues everything again")
		return
	}
	p.written = marker
	reprojections.WithLabelValues("ok").Inc()
	logger.Info("every object queued for re-projection", "objects", queued)
}

// prune removes the runtime state of every projected bot that Kubernetes no longer holds, and
// says whether the pass completed. Such a projection comes back with a Redis backup taken
// before the bot was deleted, and would otherwise take signals again. A bot missing from the
// cache is confirmed gone by the API server (by name, then UID) before anything is removed.
func (p *reprojector) prune(ctx context.Context) bool {
	if p.forget == nil {
		return true
	}
	logger := log.FromContext(ctx).WithName("reproject")
	ids, err := registry.BotIDs(ctx, p.rdb)
	if err != nil {
		return false
	}
	var bots tradingv1.SignalBotList
	if err := p.reader.List(ctx, &bots); err != nil {
		return false
	}
	live := make(map[string]bool, len(bots.Items))
	for _, b := range bots.Items {
		live[string(b.UID)] = true
	}
	reg := registry.New(p.rdb)
	for _, id := range ids {
		if live[id] {
			continue
		}
		gone, err := p.botGone(ctx, reg, id)
		if err == nil && gone {
			err = p.forget(ctx, id)
		}
		if err != nil {
			logger.Error(err, "cannot prune the projection of a bot Kubernetes may not hold", "botUID", id)
			return false
		}
		if gone {
			prunedBots.Inc()
			logger.Info("projection of a bot that no longer exists removed", "botUID", id)
		}
	}
	return true
}

// botGone says whether the projected bot id is absent from the API server: no bot of its
// projected name, or one of another UID.
func (p *reprojector) botGone(ctx context.Context, reg *registry.Registry, id string) (bool, error) {
	proj, err := reg.Get(ctx, id)
	if errors.Is(err, registry.ErrNotFound) {
		return true, nil // only in the set of all bots: forget clears it
	}
	if err != nil {
		return false, err
	}
	bot := &tradingv1.SignalBot{}
	err = p.apiReader.Get(ctx, types.NamespacedName{Namespace: proj.Namespace, Name: proj.Name}, bot)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return string(bot.UID) != id, nil
}

// enqueueAll lists every object of the three kinds from the manager's cache and hands each
// to its reconciler. It returns how many were queued.
func (p *reprojector) enqueueAll(ctx context.Context) (int, error) {
	var (
		bots   tradingv1.SignalBotList
		papers tradingv1.PaperAccountList
		conns  tradingv1.ExchangeConnectionList
	)
	if err := p.reader.List(ctx, &bots); err != nil {
		return 0, err
	}
	if err := p.reader.List(ctx, &papers); err != nil {
		return 0, err
	}
	if err := p.reader.List(ctx, &conns); err != nil {
		return 0, err
	}
	// Accounts and connections first: a bot's projection does not read theirs, but the
	// executor needs an account to trade on as soon as the bot takes signals again.
	for i := range papers.Items {
		if !send(ctx, p.papers, &papers.Items[i]) {
			return 0, ctx.Err()
		}
	}
	for i := range conns.Items {
		if !send(ctx, p.conns, &conns.Items[i]) {
			return 0, ctx.Err()
		}
	}
	for i := range bots.Items {
		if !send(ctx, p.bots, &bots.Items[i]) {
			return 0, ctx.Err()
		}
	}
	return len(papers.Items) + len(conns.Items) + len(bots.Items), nil
}

// send hands obj to a reconciler's channel; false when ctx ended first.
func send(ctx context.Context, ch chan<- event.GenericEvent, obj client.Object) bool {
	select {
	case ch <- event.GenericEvent{Object: obj}:
		return true
	case <-ctx.Done():
		return false
	}
}

// DialHook asks for a check after every new Redis connection: a server restarted empty or a
// failover shows up as new connections before the period ends.
func (p *reprojector) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			select {
			case p.nudge <- struct{}{}:
			default:
			}
		}
		return conn, err
	}
}

// ProcessHook passes commands through unchanged.
func (p *reprojector) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through unchanged.
func (p *reprojector) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
