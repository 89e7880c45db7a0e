package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/registry"
)

const (
	fakeKey    = "AKIA-test-key-0123456789"
	fakeSecret = "s3cr3t-value-never-shown-anywhere"
)

func connection(ns, name, owner, secret string) *tradingv1.ExchangeConnection {
	return &tradingv1.ExchangeConnection{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: owner, Exchange: tradingv1.ExchangeBinance,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: secret}},
	}
}

func waitConnection(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *tradingv1.ExchangeConnection {
	t.Helper()
	return waitFor(t, &tradingv1.ExchangeConnection{}, ns, name, "connection "+reason, func(c *tradingv1.ExchangeConnection) error {
		cond := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("ready = %+v", cond)
		}
		return nil
	})
}

func TestExchangeConnectionFollowsItsSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, connection(ns, "binance", "a@x.io", "creds"))
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live"},
		Spec: tradingv1.SignalBotSpec{Owner: "a@x.io", Symbol: "ETH/USDT",
			ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "binance"}},
	}
	create(t, bot)

	// No Secret yet: the connection is not Ready and the bot is disabled, projected with a
	// reason webhookd turns into EXCHANGE_DISCONNECTED.
	waitConnection(t, ns, "binance", metav1.ConditionFalse, "SecretNotFound")
	waitBot(t, ns, "live", "disabled", readyIs(metav1.ConditionFalse, "ExchangeConnectionNotReady"))
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledReason == "ExchangeConnectionNotReady" && p.Account.Kind == registry.AccountExchange
	})

	// The Secret appears (without our label; the controller finds it and labels it).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{tradingv1.CredentialsKeyAPIKey: []byte(fakeKey), tradingv1.CredentialsKeyAPISecret: []byte(fakeSecret)}}
	create(t, secret)
	waitConnection(t, ns, "binance", metav1.ConditionTrue, "CredentialsPresent")
	waitBot(t, ns, "live", "active", readyIs(metav1.ConditionTrue, "Active"))
	eventually(t, "secret labelled", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "creds"), s); err != nil {
			return err
		}
		if s.Labels[controllers.LabelSecretKind] != "credentials" {
			return fmt.Errorf("labels = %v", s.Labels)
		}
		return nil
	})

	// A key removed from the Secret: the watch notices, the bot is disabled again.
	eventually(t, "edit secret", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "creds"), s); err != nil {
			return err
		}
		delete(s.Data, tradingv1.CredentialsKeyAPISecret)
		return k8s.Update(ctx, s)
	})
	c := waitConnection(t, ns, "binance", metav1.ConditionFalse, "SecretMissingKeys")
	cond := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady)
	if !strings.Contains(cond.Message, "apiSecret") {
		t.Fatalf("message does not name the missing key: %q", cond.Message)
	}
	waitBot(t, ns, "live", "disabled again", readyIs(metav1.ConditionFalse, "ExchangeConnectionNotReady"))

	// Secrets never leak into status, conditions or events.
	assertNoSecretIn(t, fmt.Sprintf("%+v", c.Status))
	b := &tradingv1.SignalBot{}
	get(t, b, ns, "live")
	assertNoSecretIn(t, fmt.Sprintf("%+v", b.Status))
	var evs eventsv1.EventList
	if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		assertNoSecretIn(t, e.Note)
	}
	assertNotInRedis(t, fakeSecret)
	assertNotInRedis(t, fakeKey)
}

func assertNoSecretIn(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, fakeSecret) || strings.Contains(s, fakeKey) {
		t.Fatalf("credential leaked: %s", s)
	}
}
