package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// copyBot is a paper bot of owner that copies master (in its own namespace unless ns says).
func copyBot(ns, name, owner, account, master string) *tradingv1.SignalBot {
	b := paperBot(ns, name, owner, account)
	b.Spec.CopyFrom = &tradingv1.CopyFromSpec{BotRef: tradingv1.BotReference{Name: master}}
	return b
}

// readyMentions waits for Ready=False with reason, its message naming every one of names.
func readyMentions(reason string, names ...string) func(*tradingv1.SignalBot) error {
	return func(b *tradingv1.SignalBot) error {
		if err := readyIs(metav1.ConditionFalse, reason)(b); err != nil {
			return err
		}
		msg := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady).Message
		for _, n := range names {
			if !strings.Contains(msg, n) {
				return fmt.Errorf("message %q does not name %s", msg, n)
			}
		}
		return nil
	}
}

// The CRD refuses a bot copying itself, and a ratio outside (0, 100]; ratio defaults to 1.
func TestCopyFromValidation(t *testing.T) {
	ns := namespace(t)
	for i, tc := range []struct {
		name    string
		mutate  func(*tradingv1.SignalBot)
		wantErr string
	}{
		{"self", func(b *tradingv1.SignalBot) {}, "a bot cannot copy itself"},
		{"zero ratio", func(b *tradingv1.SignalBot) { b.Spec.CopyFrom.BotRef.Name, b.Spec.CopyFrom.Ratio = "other", "0" },
			"ratio must be above 0 and at most 100"},
		{"ratio above 100", func(b *tradingv1.SignalBot) { b.Spec.CopyFrom.BotRef.Name, b.Spec.CopyFrom.Ratio = "other", "100.5" },
			"ratio must be above 0 and at most 100"},
		{"ratio not a number", func(b *tradingv1.SignalBot) { b.Spec.CopyFrom.BotRef.Name, b.Spec.CopyFrom.Ratio = "other", "1e3" },
			"spec.copyFrom.ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "copy-" + string(rune('a'+i))
			b := copyBot(ns, name, "a@x.io", "acct", name)
			tc.mutate(b)
			err := k8s.Create(context.Background(), b)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("create: err = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
	b := copyBot(ns, "copy-ok", "a@x.io", "acct", "other")
	b.Spec.CopyFrom.Ratio = "100"
	create(t, b)
	d := copyBot(ns, "copy-default", "a@x.io", "acct", "other")
	create(t, d)
	if d.Spec.CopyFrom.Ratio != "1" || d.Spec.Copyable {
		t.Fatalf("defaults: ratio %q, copyable %v", d.Spec.CopyFrom.Ratio, d.Spec.Copyable)
	}
}

// A follower of its own owner's bot is Ready and projected with the master's ID; it
// shows its master and, once the executor records one, its last copy in status.
func TestFollowerProjectedAndStatusMirrored(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "master", "a@x.io", "paper"))
	f := copyBot(ns, "follower", "a@x.io", "paper", "master")
	f.Spec.CopyFrom.Ratio = "0.5"
	create(t, f)
	master := waitBot(t, ns, "master", "master Ready", readyIs(metav1.ConditionTrue, "Active"))
	follower := waitBot(t, ns, "follower", "follower Ready", func(b *tradingv1.SignalBot) error {
		if b.Status.Copy == nil || b.Status.Copy.Master != ns+"/master" {
			return fmt.Errorf("status.copy = %+v", b.Status.Copy)
		}
		return readyIs(metav1.ConditionTrue, "Active")(b)
	})
	waitProjection(t, string(follower.UID), func(p registry.Bot) bool {
		return p.CopyFrom != nil && p.CopyFrom.MasterID == string(master.UID) && p.CopyFrom.Ratio == "0.5"
	})
	if m, err := rdb.SMembers(ctx, store.CopyFollowers(string(master.UID))).Result(); err != nil || len(m) != 1 || m[0] != string(follower.UID) {
		t.Fatalf("followers of the master = %v, %v", m, err)
	}

	if err := registry.New(rdb).RecordCopy(ctx, string(follower.UID),
		registry.CopyEvent{SignalID: "c-1", At: 1_700_000_000_000, Outcome: "INSUFFICIENT_BALANCE"},
		&registry.CopyError{Code: "INSUFFICIENT_BALANCE", Message: "balance too low", At: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	waitBot(t, ns, "follower", "the copy failure in status", func(b *tradingv1.SignalBot) error {
		c := b.Status.Copy
		if c == nil || c.LastCopy == nil || c.LastCopy.SignalID != "c-1" || c.LastCopy.Outcome != "INSUFFICIENT_BALANCE" ||
			c.LastError == nil || c.LastError.Code != "INSUFFICIENT_BALANCE" || c.LastError.Message != "balance too low" ||
			c.LastError.At.UnixMilli() != 1_700_000_000_000 {
			return fmt.Errorf("status.copy = %+v", c)
		}
		return nil
	})

	// Deleting the follower takes it out of its master's followers at once.
	if err := k8s.Delete(ctx, follower); err != nil {
		t.Fatal(err)
	}
	eventually(t, "follower gone from the index", func() error {
		m, err := rdb.SMembers(ctx, store.CopyFollowers(string(master.UID))).Result()
		if err != nil || len(m) != 0 {
			return fmt.Errorf("followers = %v, %v", m, err)
		}
		return nil
	})
}

// Another owner's bot may be copied only once it opts in, and not after it opts out; a
// missing master, a cycle and a chain are refused with reasons naming the bots.
func TestCopyRefusals(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "pa", "a@x.io"))
	create(t, paperAccount(ns, "pb", "b@x.io"))
	create(t, paperBot(ns, "alice", "a@x.io", "pa"))
	create(t, copyBot(ns, "bob", "b@x.io", "pb", "alice"))

	bob := waitBot(t, ns, "bob", "foreign master refused", readyMentions("CopyNotAllowed", ns+"/alice"))
	waitProjection(t, string(bob.UID), func(p registry.Bot) bool { return p.CopyFrom == nil })
	patchBot(t, ns, "alice", func(b *tradingv1.SignalBot) { b.Spec.Copyable = true })
	waitBot(t, ns, "bob", "copyable master accepted", readyIs(metav1.ConditionTrue, "Active"))
	waitProjection(t, string(bob.UID), func(p registry.Bot) bool { return p.CopyFrom != nil })
	patchBot(t, ns, "alice", func(b *tradingv1.SignalBot) { b.Spec.Copyable = false })
	waitBot(t, ns, "bob", "opted out", readyMentions("CopyNotAllowed", ns+"/alice"))
	waitProjection(t, string(bob.UID), func(p registry.Bot) bool { return p.CopyFrom == nil })

	create(t, copyBot(ns, "carol", "a@x.io", "pa", "nobody"))
	waitBot(t, ns, "carol", "master not found", readyMentions("CopyMasterNotFound", ns+"/nobody"))

	// dave copies erin copies dave: each one's master copies the other.
	create(t, copyBot(ns, "dave", "a@x.io", "pa", "erin"))
	create(t, copyBot(ns, "erin", "a@x.io", "pa", "dave"))
	waitBot(t, ns, "dave", "cycle", readyMentions("CopyCycle", ns+"/dave", ns+"/erin"))
	waitBot(t, ns, "erin", "cycle", readyMentions("CopyCycle", ns+"/dave", ns+"/erin"))

	// frank copies alice copies gina: a chain, refused for frank once alice copies.
	create(t, paperBot(ns, "gina", "a@x.io", "pa"))
	create(t, copyBot(ns, "frank", "a@x.io", "pa", "alice"))
	waitBot(t, ns, "frank", "copy accepted", readyIs(metav1.ConditionTrue, "Active"))
	patchBot(t, ns, "alice", func(b *tradingv1.SignalBot) {
		b.Spec.CopyFrom = &tradingv1.CopyFromSpec{BotRef: tradingv1.BotReference{Name: "gina"}}
	})
	waitBot(t, ns, "frank", "chain", readyMentions("CopyChain", ns+"/alice", ns+"/gina"))
	waitBot(t, ns, "alice", "alice copies gina", readyIs(metav1.ConditionTrue, "Active"))

	// Copying itself through its own namespace spelt out gets past CEL; the controller
	// refuses it.
	self := copyBot(ns, "hank", "a@x.io", "pa", "hank")
	self.Spec.CopyFrom.BotRef.Namespace = ns
	create(t, self)
	waitBot(t, ns, "hank", "self", readyMentions("CopyCycle", ns+"/hank"))
}
