package gitops_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// While Redis refuses the manager every command, a PaperAccount it re-syncs and a SignalBot
// it re-projects are Reconciling (RuntimeStoreUnavailable) with their generation observed:
// InProgress and Progressing. Once Redis answers again they are Current and Healthy.
func TestRetryingIsInProgress(t *testing.T) {
	if redisAddr == "" {
		t.Skip("revokes the manager's Redis user on a single server only")
	}
	ns := namespace(t)
	acct := create(t, &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"},
		Spec: tradingv1.PaperAccountSpec{Owner: owner}})
	bot := create(t, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot"},
		Spec: tradingv1.SignalBotSpec{Owner: owner, Symbol: "BTC/USDT",
			PaperAccountRef: &tradingv1.LocalObjectReference{Name: "paper"}}})
	waitFor(t, acct, tradingv1.ConditionReady, metav1.ConditionTrue, "Initialised")
	bot = waitFor(t, bot, tradingv1.ConditionReady, metav1.ConditionTrue, "Active")

	restore := revokeRedis(t)
	acct = waitFor(t, acct, tradingv1.ConditionReconciling, metav1.ConditionTrue, "RuntimeStoreUnavailable")
	assertObserved(t, acct)
	assertHealth(t, acct, status.InProgressStatus, argoProgressing)
	// An annotation change makes the manager project the bot again.
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touch":"1"}}}`))
	if err := k8s.Patch(context.Background(), bot, touch); err != nil {
		t.Fatal(err)
	}
	bot = waitFor(t, bot, tradingv1.ConditionReconciling, metav1.ConditionTrue, "RuntimeStoreUnavailable")
	assertObserved(t, bot)
	assertHealth(t, bot, status.InProgressStatus, argoProgressing)

	restore()
	acct = waitFor(t, acct, tradingv1.ConditionReady, metav1.ConditionTrue, "Initialised")
	assertHealth(t, acct, status.CurrentStatus, argoHealthy)
	bot = waitFor(t, bot, tradingv1.ConditionReady, metav1.ConditionTrue, "Active")
	assertHealth(t, bot, status.CurrentStatus, argoHealthy)
}

// revokeRedis takes every command permission from Redis's default user, the manager's, and
// returns what gives them back (also run at the end of the test). The permissions are
// restored through a second user: the default user cannot run ACL without them.
func revokeRedis(t *testing.T) (restore func()) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	admin := []any{"ACL", "SETUSER", "gitops-admin", "on", ">gitops-admin", "~*", "&*", "+@all"}
	if err := rdb.Do(ctx, admin...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "ACL", "SETUSER", "default", "-@all").Err(); err != nil {
		t.Fatal(err)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		c := redis.NewClient(&redis.Options{Addr: redisAddr, Username: "gitops-admin", Password: "gitops-admin"})
		defer c.Close()
		if err := c.Do(ctx, "ACL", "SETUSER", "default", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "ACL", "DELUSER", "gitops-admin").Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// assertObserved fails unless obj's generation is observed, so that kstatus reads its
// Reconciling condition rather than stopping at the generation.
func assertObserved(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := observed(obj); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
