package controllers_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/exchange"
)

// The futures position mode is shown in status. A switch with nothing open is recorded; a
// mode that differs from the recorded one while positions are open makes the connection not
// Ready until they are closed, and the recorded mode stays what it was meanwhile.
func TestPositionModeShownAndAChangeWithOpenPositionsRefused(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "futures")
	exchanges.answer(cr.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", cr, true))
	create(t, connection(ns, "bn", "a@x.io", "creds"))
	c := waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if c.Status.PositionMode != tradingv1.PositionModeOneWay {
		t.Fatalf("positionMode = %q, want oneWay", c.Status.PositionMode)
	}
	req := ctrl.Request{NamespacedName: keyOf(ns, "bn")}
	r := directReconciler(masterKeys)

	// Switched to hedge with nothing open (exchanges refuse a switch otherwise): recorded.
	exchanges.setMode(cr.key, exchange.AccountMode{Mode: exchange.Hedge})
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	c = waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if c.Status.PositionMode != tradingv1.PositionModeHedge {
		t.Fatalf("positionMode = %q, want hedge", c.Status.PositionMode)
	}

	// Back to one-way, and positions were opened since outside sigops: refused, not guessed.
	exchanges.setMode(cr.key, exchange.AccountMode{Mode: exchange.OneWay, OpenPositions: 2})
	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 60e9 {
		t.Fatalf("requeue after %s; the user fixes it on the exchange, so look again within a minute", res.RequeueAfter)
	}
	c = waitConnection(t, ns, "bn", metav1.ConditionFalse, "PositionModeChanged")
	msg := conditionOf(c, tradingv1.ConditionReady).Message
	if !strings.Contains(msg, "hedge to oneWay") || !strings.Contains(msg, "2 open position") {
		t.Fatalf("message = %q", msg)
	}
	if conditionOf(c, tradingv1.ConditionStalled) == nil || c.Status.PositionMode != tradingv1.PositionModeHedge {
		t.Fatalf("status = %+v", c.Status)
	}
	waitXconn(t, string(c.UID), refused("PositionModeChanged"))

	// Closed on the exchange: the new mode is recorded and the connection usable again.
	exchanges.setMode(cr.key, exchange.AccountMode{Mode: exchange.OneWay})
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	c = waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if c.Status.PositionMode != tradingv1.PositionModeOneWay {
		t.Fatalf("positionMode = %q, want oneWay", c.Status.PositionMode)
	}
	assertNoLeak(t, ns, cr.values()...)
}

// A spot-only key has no futures account to read: no mode shown.
func TestSpotKeyShowsNoPositionMode(t *testing.T) {
	ns := namespace(t)
	cr := newCreds(ns, "spot")
	c, _ := validatedConnection(t, ns, cr)
	if c.Status.PositionMode != "" {
		t.Fatalf("positionMode = %q on a spot-only key", c.Status.PositionMode)
	}
}

// OKX signs every request with a passphrase: a Secret without one is refused by name.
func TestOKXNeedsAPassphrase(t *testing.T) {
	ns := namespace(t)
	cr := newCreds(ns, "okx")
	cr.passphrase = ""
	create(t, credentialsSecret(ns, "creds", cr, true))
	xc := connection(ns, "ok", "a@x.io", "creds")
	xc.Spec.Exchange = tradingv1.ExchangeOKX
	create(t, xc)
	c := waitConnection(t, ns, "ok", metav1.ConditionFalse, "SecretMissingKeys")
	if msg := conditionOf(c, tradingv1.ConditionReady).Message; !strings.Contains(msg, "passphrase") {
		t.Fatalf("message = %q", msg)
	}
}
