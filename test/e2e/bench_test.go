package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

// timedTransport adds up the time spent in exchange HTTP calls.
type timedTransport struct{ nanos atomic.Int64 }

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(r)
	t.nanos.Add(int64(time.Since(start)))
	return resp, err
}

var exchangeTime = &timedTransport{}

// BenchmarkLiveSignalToOrder sends signals one at a time through webhookd (HTTPS, waiting
// for the result) and the executor to the fake Binance with no added delay, and reports
// the total latency and our own overhead (total minus the time inside exchange HTTP calls),
// p50 and p99. Run once: -benchtime 1x; it sends a fixed 600 signals whatever b.N.
func BenchmarkLiveSignalToOrder(b *testing.B) {
	ctx := context.Background()
	fake := binancefake.New()
	defer fake.Close()
	fake.SetPrice("BTCUSDT", "65000")
	fake.SetSpotBalance("USDT", "100000000")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "key"},
			StringData: map[string]string{"apiKey": binancefake.APIKey, "apiSecret": binancefake.APISecret}},
		&tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "binance"},
			Spec: tradingv1.ExchangeConnectionSpec{Owner: "bench@example.com", Exchange: tradingv1.ExchangeBinance,
				CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "key"},
				Endpoints:            tradingv1.EndpointsSpec{Spot: fake.URL(), Futures: fake.URL()}}},
		&tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bench"},
			Spec: tradingv1.SignalBotSpec{Owner: "bench@example.com", Symbol: "BTC/USDT", PositionSize: "0.01",
				RateLimit:             tradingv1.RateLimitSpec{PerMinute: 60000, Burst: 1000},
				ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "binance"}}},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	testkit.EventuallyTrue(b, 30*time.Second, "bot ready", func() bool {
		bot := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(objs[2]), bot); err != nil {
			return false
		}
		r := meta.FindStatusCondition(bot.Status.Conditions, tradingv1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionTrue
	})
	s := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "bench-webhook"}, s); err != nil {
		b.Fatal(err)
	}
	path := string(s.Data[controllers.WebhookSecretKeyURL])[len("https://sigops.test"):]

	const signals = 600
	var total, overhead []time.Duration
	for i := range signals + 50 {
		body := `{"action":"buy"}`
		if i%2 == 1 {
			body = `{"action":"close"}`
		}
		before := exchangeTime.nanos.Load()
		start := time.Now()
		r := send(b, path, body)
		took := time.Since(start)
		if r.Status != 200 || !r.Body.Success {
			b.Fatalf("signal %d: %+v", i, r)
		}
		if i < 50 {
			continue // warm-up: connections, caches
		}
		total = append(total, took)
		overhead = append(overhead, took-time.Duration(exchangeTime.nanos.Load()-before))
	}
	p := func(d []time.Duration, q float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(q*float64(len(s)-1))]
	}
	b.ReportMetric(float64(p(total, .5).Microseconds())/1000, "ms-total-p50")
	b.ReportMetric(float64(p(total, .99).Microseconds())/1000, "ms-total-p99")
	b.ReportMetric(float64(p(overhead, .5).Microseconds())/1000, "ms-overhead-p50")
	b.ReportMetric(float64(p(overhead, .99).Microseconds())/1000, "ms-overhead-p99")
	b.Logf("%d signals: total p50 %v p99 %v; our overhead p50 %v p99 %v", signals,
		p(total, .5), p(total, .99), p(overhead, .5), p(overhead, .99))
}
