package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/registry"
)

// A bot on an ExchangeConnection whose endpoints point at the fake Binance: the connection
// is validated against it, the signal goes through webhookd and the executor, and the fake
// sees exactly one signed order with the signal's client order ID.
func TestLiveBotOrderReachesTheExchange(t *testing.T) {
	ctx := context.Background()
	fake := binancefake.New()
	defer fake.Close()
	fake.SetPrice("BTCUSDT", "65000")
	fake.SetSpotBalance("USDT", "10000")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "live-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "binance-key"},
		StringData: map[string]string{"apiKey": binancefake.APIKey, "apiSecret": binancefake.APISecret}}
	conn := &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "binance"},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: "trader@example.com", Exchange: tradingv1.ExchangeBinance,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "binance-key"},
			Endpoints:            tradingv1.EndpointsSpec{Spot: fake.URL(), Futures: fake.URL()}}}
	bot := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "live"},
		Spec: tradingv1.SignalBotSpec{Owner: "trader@example.com", Symbol: "BTC/USDT", PositionSize: "0.01",
			ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "binance"}}}
	for _, o := range []client.Object{secret, conn, bot} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "connection validated", func() error {
		c := &tradingv1.ExchangeConnection{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(conn), c); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		if c.Status.LastValidatedAt == nil || len(c.Status.Permissions) == 0 {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nil
	})
	// The validated key's symbols are recorded for webhookd.
	if syms, err := registry.New(rdb).Symbols(ctx); err != nil || !slices.Contains(syms, "ETH/USDT") {
		t.Fatalf("recorded symbols = %v, %v", syms, err)
	}
	var botID string
	eventually(t, "bot ready", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), b); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		botID = string(b.UID)
		return nil
	})
	s := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "live-webhook"}, s); err != nil {
		t.Fatal(err)
	}
	path := string(s.Data[controllers.WebhookSecretKeyURL])[len("https://sigops.test"):]

	r := send(t, path, `{"action":"buy"}`)
	if r.Status != 200 || !r.Body.Success || r.Body.Order == nil {
		t.Fatalf("buy: %+v", r)
	}
	mustEqual(t, "filled", r.Body.Order.FilledAmount, "0.01")
	mustEqual(t, "avg price", r.Body.Order.AvgPrice, "65000")
	cid := order.ClientOrderID(r.Body.SignalID, "") // the entry leg
	if n := fake.Placed(cid); n != 1 {
		t.Fatalf("the fake saw %d orders with client ID %s (want exactly 1)", n, cid)
	}
	// 0.01 BTC at 65,000 = 650 USDT spent.
	free, _ := fake.SpotBalance("USDT")
	mustEqual(t, "fake USDT balance", free, "9350")
	pos, err := api.Positions(ctx, botID)
	if err != nil || len(pos) != 1 {
		t.Fatalf("positions = %+v, %v", pos, err)
	}
	// The fee (0.1 %) was taken in BTC: the holding is 0.00999 BTC.
	mustEqual(t, "position size", pos[0].Size.Decimal, "0.00999")

	// A key that can withdraw is refused, and the bot answers EXCHANGE_DISCONNECTED.
	fake.SetPermissions(binancefake.Restrictions{EnableReading: true, EnableSpotAndMarginTrading: true, EnableWithdrawals: true})
	c := &tradingv1.ExchangeConnection{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(conn), c); err != nil {
		t.Fatal(err)
	}
	// Touch the Secret so the controller re-validates now rather than at its period.
	s2 := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), s2); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&s2.ObjectMeta, "example.com/touched", "1")
	if err := k8s.Update(ctx, s2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "withdrawal key refused", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(conn), c); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Reason != "WithdrawalPermissionEnabled" {
			return fmt.Errorf("ready = %+v", r)
		}
		return nil
	})
	eventually(t, "bot refuses at the door", func() error {
		if r := send(t, path, `{"action":"close"}`); r.Status != 403 || r.Body.Code != "EXCHANGE_DISCONNECTED" {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})
}
