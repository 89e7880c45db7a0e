package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/test/stack"
)

// The samples users copy (and `make run` applies) are valid and become Ready.
func TestSamplesBecomeReady(t *testing.T) {
	objs, err := stack.ReadKustomization(filepath.Join("..", "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 6 {
		t.Fatalf("samples hold %d objects, want the Secret, the three kinds, the strategy bot and the copy bot", len(objs))
	}
	if err := stack.CreateAll(context.Background(), k8s, objs); err != nil {
		t.Fatal(err)
	}
	waitBot(t, "default", "demo-btc", "sample bot Ready", readyIs(metav1.ConditionTrue, "Active"))
	ema := waitBot(t, "default", "demo-eth-ema", "sample strategy bot Ready", readyIs(metav1.ConditionTrue, "Active"))
	if s := ema.Status.Strategy; s == nil || s.Family != "emaCrossover" || s.Timeframe != "15m" || s.Symbol != "ETH/USDT" {
		t.Fatalf("sample strategy bot status.strategy = %+v", s)
	}
	waitBot(t, "default", "demo-btc-copy", "sample copy bot Ready", func(b *tradingv1.SignalBot) error {
		if b.Status.Copy == nil || b.Status.Copy.Master != "default/demo-btc" {
			return fmt.Errorf("status.copy = %+v", b.Status.Copy)
		}
		return readyIs(metav1.ConditionTrue, "Active")(b)
	})
	waitConnection(t, "default", "demo-binance", metav1.ConditionTrue, "Validated") // the suite's stub exchange accepts any unknown key
	a := &tradingv1.PaperAccount{}
	get(t, a, "default", "demo-paper")
	if a.Spec.Owner != "demo@sigops.local" {
		t.Fatalf("sample paper account owner = %q", a.Spec.Owner)
	}
}
