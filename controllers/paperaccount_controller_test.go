package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "k8s.io/api/events/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/store"
)

func waitAccount(t *testing.T, ns, name, what string, ok func(*tradingv1.PaperAccount) error) *tradingv1.PaperAccount {
	t.Helper()
	return waitFor(t, &tradingv1.PaperAccount{}, ns, name, what, ok)
}

func annotateRefill(t *testing.T, ns, name, value string) {
	t.Helper()
	eventually(t, "annotate", func() error {
		a := &tradingv1.PaperAccount{}
		if err := k8s.Get(context.Background(), keyOf(ns, name), a); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, tradingv1.AnnotationRefill, value)
		return k8s.Update(context.Background(), a)
	})
}

func TestPaperAccountInitialisesAndMirrorsBalance(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	a := waitAccount(t, ns, "paper", "ready", func(a *tradingv1.PaperAccount) error {
		c := meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || a.Status.Balance != "10000" || a.Status.Equity != "10000" {
			return fmt.Errorf("status = %+v", a.Status)
		}
		return nil
	})
	bal, err := rdb.HGet(ctx, store.PaperAccount(string(a.UID)), "balance").Result()
	if err != nil || bal != "10000" {
		t.Fatalf("redis balance = %q, %v", bal, err)
	}
	// Trades change the balance in Redis; status follows within the sync period.
	rdb.HSet(ctx, store.PaperAccount(string(a.UID)), "balance", "9990.12345678")
	waitAccount(t, ns, "paper", "mirror", func(a *tradingv1.PaperAccount) error {
		if a.Status.Balance != "9990.12345678" {
			return fmt.Errorf("balance = %s", a.Status.Balance)
		}
		return nil
	})

	// Deleting the account removes its runtime state.
	if err := k8s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "redis cleaned", func() error {
		if n := rdb.Exists(ctx, store.PaperAccount(string(a.UID))).Val(); n != 0 {
			return fmt.Errorf("key still there")
		}
		return nil
	})
}

func TestPaperRefillHonoursCooldown(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	acct := paperAccount(ns, "paper", "a@x.io")
	acct.Spec.InitialBalance = "5000.5"
	create(t, acct)
	a := waitAccount(t, ns, "paper", "ready", func(a *tradingv1.PaperAccount) error {
		if a.Status.Balance != "5000.5" {
			return fmt.Errorf("balance = %q", a.Status.Balance)
		}
		return nil
	})
	key := store.PaperAccount(string(a.UID))

	// First refill: allowed (never refilled before).
	rdb.HSet(ctx, key, "balance", "12.34")
	annotateRefill(t, ns, "paper", "r1")
	waitAccount(t, ns, "paper", "refilled", func(a *tradingv1.PaperAccount) error {
		if a.Status.LastHandledRefill != "r1" || a.Status.Balance != "5000.5" || a.Status.LastRefillAt == nil {
			return fmt.Errorf("status = %+v", a.Status)
		}
		c := meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionRefillAllowed)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "next refill allowed at") {
			return fmt.Errorf("RefillAllowed = %+v", c)
		}
		return nil
	})

	// Second refill inside 24 hours: refused, balance untouched, Warning event.
	rdb.HSet(ctx, key, "balance", "1")
	clock.Advance(23 * time.Hour)
	annotateRefill(t, ns, "paper", "r2")
	waitAccount(t, ns, "paper", "refused", func(a *tradingv1.PaperAccount) error {
		if a.Status.LastHandledRefill != "r2" || a.Status.Balance != "1" {
			return fmt.Errorf("status = %+v", a.Status)
		}
		return nil
	})
	if bal := rdb.HGet(ctx, key, "balance").Val(); bal != "1" {
		t.Fatalf("refused refill changed the balance to %s", bal)
	}
	eventually(t, "warning event", func() error {
		var evs eventsv1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "RefillRefused" && e.Type == "Warning" && e.Regarding.Name == "paper" && strings.Contains(e.Note, "cooldown runs until") {
				return nil
			}
		}
		return fmt.Errorf("no RefillRefused event among %d", len(evs.Items))
	})

	// After the cooldown: the condition flips, and a new request is applied.
	clock.Advance(time.Hour + time.Second)
	waitAccount(t, ns, "paper", "cooldown over", func(a *tradingv1.PaperAccount) error {
		c := meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionRefillAllowed)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("RefillAllowed = %+v", c)
		}
		return nil
	})
	annotateRefill(t, ns, "paper", "r3")
	waitAccount(t, ns, "paper", "refilled again", func(a *tradingv1.PaperAccount) error {
		if a.Status.LastHandledRefill != "r3" || a.Status.Balance != "5000.5" {
			return fmt.Errorf("status = %+v", a.Status)
		}
		return nil
	})
}
