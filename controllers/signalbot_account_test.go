package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// A Redis outage seen by the manager (the account's Ready=False, RuntimeStoreUnavailable)
// does not disable a bot that was trading on the account; it keeps a new bot waiting, and
// any other fault of the account disables a trading bot as before.
func TestAccountStoreOutageKeepsATradingBot(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := tradingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		reason       string
		availability tradingv1.Availability
		ready        bool
	}{
		{"active bot, store outage", reasonRuntimeStoreUnavailable, tradingv1.AvailabilityActive, true},
		{"paused bot, store outage", reasonRuntimeStoreUnavailable, tradingv1.AvailabilityPaused, true},
		{"new bot, store outage", reasonRuntimeStoreUnavailable, "", false},
		{"disabled bot, store outage", reasonRuntimeStoreUnavailable, tradingv1.AvailabilityDisabled, false},
		{"active bot, invalid account", reasonInvalidSpec, tradingv1.AvailabilityActive, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acct := &tradingv1.PaperAccount{
				ObjectMeta: metav1.ObjectMeta{Name: "paper", Namespace: "ns", UID: "acct-uid"},
				Spec:       tradingv1.PaperAccountSpec{Owner: "a@example.com"},
				Status: tradingv1.PaperAccountStatus{Conditions: []metav1.Condition{{
					Type: tradingv1.ConditionReady, Status: metav1.ConditionFalse, Reason: tc.reason, Message: "m",
					LastTransitionTime: metav1.Now(),
				}}},
			}
			r := &SignalBotReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(acct).Build()}
			bot := &tradingv1.SignalBot{
				ObjectMeta: metav1.ObjectMeta{Name: "bot", Namespace: "ns"},
				Spec:       tradingv1.SignalBotSpec{Owner: "a@example.com", PaperAccountRef: &tradingv1.LocalObjectReference{Name: "paper"}},
				Status:     tradingv1.SignalBotStatus{Availability: tc.availability},
			}
			c := r.checkAccount(t.Context(), bot)
			if c.err != nil {
				t.Fatal(c.err)
			}
			if c.ready != tc.ready || c.id != "acct-uid" {
				t.Fatalf("ready %v (code %q, reason %q), account %q; want ready %v", c.ready, c.code, c.reason, c.id, tc.ready)
			}
			if !tc.ready && c.code != registry.DisabledAccountNotReady {
				t.Errorf("code %q; want %q", c.code, registry.DisabledAccountNotReady)
			}
		})
	}
}
