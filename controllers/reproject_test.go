package controllers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// reprojected is what the manager projected for the test's objects, read back from Redis.
type reprojected struct {
	bots    map[string]string // webhook ID -> bot UID
	paperID string
	initial decimal.Decimal
	connID  string
}

// Redis loses everything twice (FLUSHALL, then a restart with no data) while the Kubernetes
// objects stay as they are: the manager notices the missing marker and projects every bot,
// paper account and connection again by itself, and the webhook intake admits signals again.
func TestLostRedisIsReprojected(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	t.Cleanup(restoreLiveOwner(t))
	cr := newCreds(ns, "reproject")
	exchanges.answer(cr.key, permsSpot, nil)
	create(t, credentialsSecret(ns, "creds", cr, true))
	xc := connection(ns, "bn", "a@x.io", "creds")
	create(t, xc)
	acct := paperAccount(ns, "paper", "a@x.io")
	acct.Spec.InitialBalance = "2500"
	create(t, acct)
	want := reprojected{bots: map[string]string{}, paperID: string(acct.UID), initial: decimal.RequireFromString("2500"),
		connID: string(xc.UID)}
	for _, name := range []string{"a", "b"} {
		bot := paperBot(ns, name, "a@x.io", "paper")
		create(t, bot)
		waitBot(t, ns, name, "bot Ready", readyIs(metav1.ConditionTrue, "Active"))
		want.bots[webhookID(t, ns, name)] = string(bot.UID)
	}
	waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	in := intake.New(rdb)
	waitProjected(t, in, want)
	generations := botGenerations(t, ns)

	before := reprojectionsOK(t)
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	waitProjected(t, in, want)

	if err := redisServer.Restart(); err != nil {
		t.Fatal(err)
	}
	waitProjected(t, in, want)

	if got := reprojectionsOK(t); got < before+2 {
		t.Fatalf("sigops_manager_reprojections_total{result=ok} went from %v to %v; want two more", before, got)
	}
	if !logs.Contains("re-projecting every SignalBot, PaperAccount and ExchangeConnection") {
		t.Fatal("no log line says that the manager re-projects")
	}
	if got := botGenerations(t, ns); fmt.Sprint(got) != fmt.Sprint(generations) {
		t.Fatalf("bot generations %v became %v: the objects were changed", generations, got)
	}
}

// waitProjected waits until Redis holds the marker and every projection of want, and the
// intake admits a signal to each bot.
func waitProjected(t *testing.T, in *intake.Intake, want reprojected) {
	t.Helper()
	ctx := context.Background()
	reg := registry.New(rdb)
	eventually(t, "every object projected", func() error {
		if n, err := rdb.Exists(ctx, store.ProjectionMarker()).Result(); err != nil || n != 1 {
			return fmt.Errorf("projection marker: %d, %v", n, err)
		}
		for id, uid := range want.bots {
			if p, err := reg.Get(ctx, uid); err != nil || p.Availability != "active" {
				return fmt.Errorf("bot %s: %+v, %v", uid, p, err)
			}
			if route, err := reg.Resolve(ctx, registry.HashWebhookID(id)); err != nil || route.BotID != uid {
				return fmt.Errorf("route of bot %s: %+v, %v", uid, route, err)
			}
			if err := admit(ctx, in, id, uid); err != nil {
				return err
			}
		}
		st, err := paper.NewAccounts(rdb).Get(ctx, want.paperID)
		if err != nil || !st.Balance.Equal(want.initial) || !st.InitialBalance.Equal(want.initial) {
			return fmt.Errorf("paper account: %+v, %v", st, err)
		}
		c, err := credentials.NewConnections(rdb).Get(ctx, want.connID)
		if err != nil || !c.Ready || c.Sealed == "" {
			return fmt.Errorf("connection: ready=%v sealed=%v, %v", c.Ready, c.Sealed != "", err)
		}
		return nil
	})
}

// admit sends one signal to the bot through the webhook intake.
func admit(ctx context.Context, in *intake.Intake, webhookID, uid string) error {
	adm, err := in.Admit(ctx, intake.Request{WebhookHash: registry.HashWebhookID(webhookID),
		SignalID: fmt.Sprintf("s%d", time.Now().UnixNano()), Priority: queue.PriorityWebhook,
		Signal: json.RawMessage(`{"action":"buy"}`), ReceivedAt: time.Now()})
	if err != nil {
		return fmt.Errorf("intake for bot %s: %s %w", uid, errs.CodeOf(err), err)
	}
	if adm.BotID != uid {
		return fmt.Errorf("intake admitted to %s; want %s", adm.BotID, uid)
	}
	return nil
}

func botGenerations(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	var bots tradingv1.SignalBotList
	if err := k8s.List(context.Background(), &bots); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, b := range bots.Items {
		if b.Namespace == ns {
			out[b.Name] = b.Generation
		}
	}
	return out
}

// reprojectionsOK reads sigops_manager_reprojections_total{result="ok"} from the manager's
// metrics registry (the suite's manager runs in this process).
func reprojectionsOK(t *testing.T) float64 {
	return counter(t, "sigops_manager_reprojections_total", "ok")
}

func prunedBots(t *testing.T) float64 { return counter(t, "sigops_manager_pruned_bots_total", "") }

// counter reads a counter of the manager's metrics registry, the series whose result label
// is result ("": the only series).
func counter(t *testing.T, name, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if result == "" {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// restoreLiveOwner gives the suite back the live-trading owner its other tests rely on,
// which the emptied Redis lost.
func restoreLiveOwner(t *testing.T) func() {
	return func() {
		_, err := users.Create(context.Background(), auth.NewUser{Email: "a@x.io", Password: "correct horse battery", Tier: auth.TierTeam})
		if err != nil && !errors.Is(err, auth.ErrEmailTaken) {
			t.Errorf("restore the suite's owner: %v", err)
		}
	}
}

// A Redis restored from a backup holds the projections of bots deleted since, and a marker
// the leader did not write: the leader removes each bot Kubernetes no longer holds (none of
// its name, or one of another UID), leaving a tombstone, and keeps the live bot.
func TestProjectionsOfGoneBotsArePruned(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	live := paperBot(ns, "live", "a@x.io", "paper")
	create(t, live)
	waitBot(t, ns, "live", "bot Ready", readyIs(metav1.ConditionTrue, "Active"))
	liveHook := registry.HashWebhookID(webhookID(t, ns, "live"))

	reg := registry.New(rdb)
	orphans := map[string]string{ // UID -> webhook hash, as a backup would hold them
		ns + "-gone":     registry.HashWebhookID(ns + "-gone-hook"),
		ns + "-replaced": registry.HashWebhookID(ns + "-replaced-hook"),
	}
	for uid, hash := range orphans {
		name := "gone"
		if uid == ns+"-replaced" {
			name = "live" // the name of a bot that exists, with another UID
		}
		b := registry.Bot{ID: uid, Namespace: ns, Name: name, Owner: "a@x.io", Symbol: "BTC/USDT",
			Account: registry.Account{Kind: registry.AccountPaper, Name: "paper"}, WebhookEnabled: true, Availability: "active"}
		if err := reg.Project(ctx, b, hash); err != nil {
			t.Fatal(err)
		}
	}
	before := prunedBots(t)
	// The backup's marker, which the leader did not write.
	if err := rdb.Set(ctx, store.ProjectionMarker(), "2026-01-01T00:00:00Z backup", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "projections of gone bots removed", func() error {
		for uid, hash := range orphans {
			if _, err := reg.Get(ctx, uid); !errors.Is(err, registry.ErrNotFound) {
				return fmt.Errorf("bot %s still projected: %v", uid, err)
			}
			if route, err := reg.Resolve(ctx, hash); err != nil || !route.Deleted || route.BotID != uid {
				return fmt.Errorf("route of %s: %+v, %v; want a tombstone", uid, route, err)
			}
		}
		return nil
	})
	if route, err := reg.Resolve(ctx, liveHook); err != nil || route.Deleted || route.BotID != string(live.UID) {
		t.Fatalf("live bot's route: %+v, %v", route, err)
	}
	if _, err := reg.Get(ctx, string(live.UID)); err != nil {
		t.Fatalf("live bot's projection: %v", err)
	}
	// Counted after each removal is written: the count may trail what Redis shows.
	eventually(t, "both removals counted", func() error {
		if got := prunedBots(t); got < before+2 {
			return fmt.Errorf("sigops_manager_pruned_bots_total went from %v to %v; want two more", before, got)
		}
		return nil
	})
}
