package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

func TestSetAccount(t *testing.T) {
	fields := map[string]any{}
	if err := fleet.SetAccount(fields, registry.AccountPaper, ""); err != nil {
		t.Fatal(err)
	}
	if ref, _ := fields["paperAccountRef"].(map[string]any); ref["name"] != fleet.DefaultPaperAccount ||
		fields["exchangeConnectionRef"] != nil {
		t.Fatalf("paper without a name: %v", fields)
	}
	if _, ok := fields["exchangeConnectionRef"]; !ok {
		t.Fatal("the other reference is not nulled for a merge patch")
	}
	if err := fleet.SetAccount(fields, registry.AccountExchange, "binance-main"); err != nil {
		t.Fatal(err)
	}
	if ref, _ := fields["exchangeConnectionRef"].(map[string]any); ref["name"] != "binance-main" || fields["paperAccountRef"] != nil {
		t.Fatalf("exchange: %v", fields)
	}
	wantCode(t, "exchange without a name", fleet.SetAccount(fields, registry.AccountExchange, ""), errs.InvalidParameter)
	wantCode(t, "unknown kind", fleet.SetAccount(fields, "margin", "x"), errs.InvalidParameter)
}

func TestSpecOf(t *testing.T) {
	spec, err := fleet.SpecOf(map[string]any{"symbol": "BTC/USDT", "leverage": 3, "market": "futures",
		"risk": map[string]any{"dailyLossLimit": "250.5", "maxExposure": nil}, "copyFrom": nil})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Symbol != "BTC/USDT" || spec.Leverage != 3 || spec.Market != tradingv1.MarketFutures ||
		spec.Risk.DailyLossLimit != "250.5" || spec.CopyFrom != nil {
		t.Fatalf("spec %+v", spec)
	}
	for _, c := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"leverage": "three"}, "leverage: must be a whole number"},
		{map[string]any{"maxOpen": 3}, "maxOpen: not a bot setting"},
		{map[string]any{"dedupeWindow": "soon"}, `"soon"`},
	} {
		_, err := fleet.SpecOf(c.fields)
		if e := wantCode(t, "bad field", err, errs.InvalidParameter); !strings.Contains(e.Message, c.want) {
			t.Fatalf("%v: %q, want %q", c.fields, e.Message, c.want)
		}
	}
}

// ManagedIDs tells the caller's bots fleet made from those applied outside it, and knows
// nothing of another caller's.
func TestManagedAndObject(t *testing.T) {
	ctx := context.Background()
	c, other := newCaller(), newCaller()
	if m, err := fl.ManagedIDs(ctx, c); err != nil || len(m) != 0 {
		t.Fatalf("before any bot: %v %v", m, err)
	}
	made, err := fl.Create(ctx, c, "made-here", tradingv1.SignalBotSpec{Symbol: "BTC/USDT", StopLoss: "2%"})
	if err != nil {
		t.Fatal(err)
	}
	_, gitops := gitopsBot(t, c)
	// A bot in the caller's namespace with the label but another owner is not the caller's.
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	stray := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", Labels: map[string]string{fleet.LabelManagedBy: fleet.ManagedBySigops}},
		Spec: tradingv1.SignalBotSpec{Owner: other.Email, PaperAccountRef: &tradingv1.LocalObjectReference{Name: "paper"}}}
	if err := k8s.Create(ctx, stray); err != nil {
		t.Fatal(err)
	}
	m, err := fl.ManagedIDs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !m[string(made.UID)] || m[gitops] || m[string(stray.UID)] || len(m) != 1 {
		t.Fatalf("managed %v: want only %s", m, made.UID)
	}
	id := string(made.UID)
	if p, ok := fl.WaitProjected(ctx, c, id, 20*time.Second); !ok || p.ID != id || p.StopLoss != "2%" {
		t.Fatalf("projection %+v %v", p, ok)
	}
	if _, ok := fl.WaitProjected(ctx, other, id, 300*time.Millisecond); ok {
		t.Fatal("another caller waited for the bot and got it")
	}
	obj, err := fl.Object(ctx, c, id)
	if err != nil || obj.Spec.StopLoss != "2%" || !fleet.IsManaged(obj) {
		t.Fatalf("object %+v %v", obj, err)
	}
	g, err := fl.Object(ctx, c, gitops)
	if err != nil || fleet.IsManaged(g) {
		t.Fatalf("GitOps object %+v %v", g, err)
	}
	if e := fleet.GitOpsRefusal(gitops); e.Code != errs.ManagedByGitOps || !strings.Contains(e.Message, gitops) {
		t.Fatalf("refusal %+v", e)
	}
	wantCode(t, "another caller's object", mustErr(fl.Object(ctx, other, id)), errs.NotFound)
}
