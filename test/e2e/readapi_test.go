package e2e_test

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/webhookd/readapi"
)

// startReadAPI builds the read API served beside the webhook endpoint, with authd's token
// machinery on a key of its own.
func startReadAPI(log *slog.Logger) (*readapi.API, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	keys, err := auth.NewKeyring(key, nil)
	if err != nil {
		return nil, err
	}
	issuer = auth.NewIssuer(auth.IssuerOptions{Redis: rdb, Keys: keys, Issuer: "https://sigops.test", APIAudience: "https://sigops.test/api"})
	verifier, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: "https://sigops.test",
		Audiences: []string{"https://sigops.test/api"}})
	if err != nil {
		return nil, err
	}
	return readapi.New(readapi.Options{Redis: rdb, Verifier: verifier, Sessions: auth.NewSessions(rdb, nil), Users: users,
		Trading: api, Portfolio: portfolio.New(portfolio.Options{Redis: rdb, Prices: prices}), Logger: log}), nil
}

// bearerOf is a bearer JWT of the account with email.
func bearerOf(t *testing.T, email string) string {
	t.Helper()
	u, err := users.ByEmail(t.Context(), email)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := issuer.IssueAPIToken(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// read GETs a read API path over HTTPS with a bearer token and decodes the envelope's data
// into v; it returns the status.
func read(t *testing.T, path, token string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hooks.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hooks.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(env.Data, v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// The read API over HTTPS after fills at known prices: every figure of the risk metrics, the
// portfolio and the analytics worked by hand.
func TestReadAPIFiguresByHand(t *testing.T) {
	const owner = "analyst@example.com"
	path, botID := deployFor(t, owner, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT",
			Risk: tradingv1.RiskSpec{MaxExposure: "0.5", DailyLossLimit: "100", MaxConsecutiveLosses: 5}}})
	token := bearerOf(t, owner)

	// Limit orders fill at once at their price on the paper exchange, fee 0.1 %:
	//   buy 0.01 @ 60,000: 600 + fee 0.6          balance 10,000 − 600.6 = 9,399.4
	//   sell 0.01 @ 61,000: 610 − fee 0.61        balance 10,008.79; trade +10 − 1.21 = +8.79
	//   buy 0.01 @ 61,000: 610 + fee 0.61         balance 9,398.18
	//   sell 0.01 @ 60,500: 605 − fee 0.605       balance 10,002.575; trade −5 − 1.215 = −6.215
	//   buy 0.02 @ 60,000: 1,200 + fee 1.2        balance 8,801.375; open long 0.02
	for _, sig := range []string{
		`{"action":"buy","symbol":"BTCUSDT","size":"0.01","price":"60000"}`,
		`{"action":"sell","symbol":"BTCUSDT","size":"0.01","price":"61000"}`,
		`{"action":"buy","symbol":"BTCUSDT","size":"0.01","price":"61000"}`,
		`{"action":"sell","symbol":"BTCUSDT","size":"0.01","price":"60500"}`,
		`{"action":"buy","symbol":"BTCUSDT","size":"0.02","price":"60000"}`,
	} {
		if r := send(t, path, sig); r.Status != 200 || !r.Body.Success {
			t.Fatalf("%s: %+v", sig, r)
		}
	}
	mustEqual(t, "balance", decimal.RequireFromString(balance(t, botID)), "8801.375")
	pin(t, "BTC/USDT", "60500")

	// Risk: exposure is the open margin (spot: cost 1,200) over free balance plus that
	// margin: 1,200 / 10,001.375 = 0.11998350… → 0.119984. No loss today (net +2.575), one
	// loss in a row. Score: ratios 0.2399670 (exposure / 0.5), 0, 0.2 (1 / 5); 0.7 × max +
	// 0.3 × mean = 0.167977 + 0.043997 = 0.211974; 1 + floor(9 × 0.211974 = 1.9078) = 2, low.
	var rm risk.BotMetrics
	if st := read(t, "/api/botsvc/bots/"+botID+"/risk", token, &rm); st != 200 {
		t.Fatalf("risk: status %d", st)
	}
	mustEqual(t, "currentExposure", rm.CurrentExposure.Decimal, "0.119984")
	mustEqual(t, "maxExposureAllowed", rm.MaxExposureAllowed.Decimal, "0.5")
	mustEqual(t, "dailyLossLimit", rm.DailyLossLimit.Decimal, "100")
	mustEqual(t, "dailyLossUsed", rm.DailyLossUsed.Decimal, "0")
	if rm.BotID != botID || rm.ConsecutiveLosses != 1 || rm.MaxConsecutiveLosses != 5 || rm.RiskScore != 2 || rm.RiskLevel != "low" {
		t.Fatalf("risk = %+v", rm)
	}

	// Portfolio: the one paper account. Equity = free 8,801.375 + spot 0.02 BTC × 60,500
	// (1,210) = 10,011.375; unrealised 0.02 × (60,500 − 60,000) = 10 (before exit fees);
	// realised 8.79 − 6.215 = 2.575.
	var pf portfolio.Portfolio
	if st := read(t, "/api/user/portfolio", token, &pf); st != 200 {
		t.Fatalf("portfolio: status %d", st)
	}
	if len(pf.Accounts) != 1 {
		t.Fatalf("accounts = %+v", pf.Accounts)
	}
	a := pf.Accounts[0]
	if a.Kind != "paper" || a.Error != nil || a.Equity == nil || a.UnrealisedPnl == nil || a.RealisedPnl == nil {
		t.Fatalf("account = %+v", a)
	}
	mustEqual(t, "equity", (*a.Equity).Decimal, "10011.375")
	mustEqual(t, "unrealised", (*a.UnrealisedPnl).Decimal, "10")
	mustEqual(t, "realised", (*a.RealisedPnl).Decimal, "2.575")
	usdt := false
	for _, b := range a.Balances {
		if b.Asset == "USDT" {
			usdt = true
			mustEqual(t, "USDT free", b.Free.Decimal, "8801.375")
		}
	}
	if !usdt || len(a.Positions) != 1 {
		t.Fatalf("balances %+v, positions %+v", a.Balances, a.Positions)
	}
	p := a.Positions[0]
	mustEqual(t, "position size", p.Size.Decimal, "0.02")
	mustEqual(t, "entry", p.EntryPrice.Decimal, "60000")
	mustEqual(t, "current", p.CurrentPrice.Decimal, "60500")
	mustEqual(t, "pnl", p.Pnl.Decimal, "10")
	mustEqual(t, "pnlPercent", p.PnlPercent.Decimal, "0.83") // 10 / 1,200 margin = 0.8333 %
	mustEqual(t, "margin", p.Margin.Decimal, "1200")
	if p.BotID != botID || p.Side != "long" || p.Symbol != "BTC/USDT" || p.CreatedAt == "" {
		t.Fatalf("position = %+v", p)
	}
	mustEqual(t, "total equity", pf.Totals.Equity.Decimal, "10011.375")
	mustEqual(t, "total realised", pf.Totals.RealisedPnl.Decimal, "2.575")
	if !pf.Totals.Complete {
		t.Fatalf("totals = %+v", pf.Totals)
	}

	// Analytics over all time: two trades today, +8.79 and −6.215. The starting equity is
	// the free balance the first order was sized on, 10,000.
	//   totalPnL 2.575 = 0.02575 % of 10,000; winRate 1 of 2 = 50 %
	//   profitFactor 8.79 / 6.215 = 1.41432019308…
	//   equity 10,000 → 10,008.79 (peak) → 10,002.575: maxDrawdown 6.215, and
	//   6.215 / 10,008.79 = 0.0620954181… % of the peak
	//   Sharpe 0: fewer than two days of returns.
	var an struct {
		BotID          string          `json:"botId"`
		BotName        string          `json:"botName"`
		Symbol         string          `json:"symbol"`
		StartingEquity decimal.Decimal `json:"startingEquity"`
		Metrics        struct {
			TotalTrades, WinningTrades, LosingTrades int
			WinRate, TotalPnLPercent, ProfitFactor   float64
			MaxDrawdownPercent, SharpeRatio          float64
			TotalPnL, AvgWin, AvgLoss, MaxDrawdown   decimal.Decimal
		} `json:"metrics"`
		Formatted struct {
			TotalPnL, WinRate, ProfitFactor, MaxDrawdown string
		} `json:"formatted"`
		EquityCurve []struct {
			Timestamp        int64
			Equity, Drawdown decimal.Decimal
		} `json:"equityCurve"`
	}
	if st := read(t, "/api/botsvc/bots/"+botID+"/analytics?period=all&includeEquity=true", token, &an); st != 200 {
		t.Fatalf("analytics: status %d", st)
	}
	m := an.Metrics
	if an.BotID != botID || an.Symbol != "BTC/USDT" || m.TotalTrades != 2 || m.WinningTrades != 1 || m.LosingTrades != 1 {
		t.Fatalf("analytics = %+v", an)
	}
	mustEqual(t, "startingEquity", an.StartingEquity, "10000")
	mustEqual(t, "totalPnL", m.TotalPnL, "2.575")
	mustEqual(t, "avgWin", m.AvgWin, "8.79")
	mustEqual(t, "avgLoss", m.AvgLoss, "-6.215")
	mustEqual(t, "maxDrawdown", m.MaxDrawdown, "6.215")
	for name, c := range map[string][2]float64{
		"winRate": {m.WinRate, 50}, "totalPnLPercent": {m.TotalPnLPercent, 0.02575},
		"profitFactor": {m.ProfitFactor, 8.79 / 6.215}, "maxDrawdownPercent": {m.MaxDrawdownPercent, 6.215 / 10008.79 * 100},
		"sharpeRatio": {m.SharpeRatio, 0},
	} {
		if d := c[0] - c[1]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if f := an.Formatted; f.TotalPnL != "+2.58 USDT" || f.WinRate != "50.0%" || f.ProfitFactor != "1.41" || f.MaxDrawdown != "-6.22 USDT (0.1%)" {
		t.Fatalf("formatted = %+v", f)
	}
	// The curve: the start, a point per trade (the win to 10,008.79, the loss back to
	// 10,002.575, 6.215 below that peak), then today so far.
	if n := len(an.EquityCurve); n != 4 {
		t.Fatalf("equity curve = %+v", an.EquityCurve)
	}
	mustEqual(t, "curve start", an.EquityCurve[0].Equity, "10000")
	mustEqual(t, "curve after the win", an.EquityCurve[1].Equity, "10008.79")
	mustEqual(t, "curve after the loss", an.EquityCurve[2].Equity, "10002.575")
	mustEqual(t, "curve drawdown after the loss", an.EquityCurve[2].Drawdown, "6.215")
	mustEqual(t, "curve now", an.EquityCurve[3].Equity, "10002.575")
	mustEqual(t, "curve drawdown", an.EquityCurve[3].Drawdown, "6.215")
	if c := an.EquityCurve; !(c[0].Timestamp < c[1].Timestamp && c[1].Timestamp <= c[2].Timestamp && c[2].Timestamp <= c[3].Timestamp) {
		t.Fatalf("equity curve out of order: %+v", c)
	}

	// Another user sees neither the bot nor the account; no token is 401.
	other := bearerOf(t, "trader@example.com")
	for _, p := range []string{"/risk", "/analytics"} {
		if st := read(t, "/api/botsvc/bots/"+botID+p, other, nil); st != 404 {
			t.Fatalf("another user's %s read: status %d, want 404", p, st)
		}
	}
	if st := read(t, "/api/botsvc/bots/"+botID+"/risk", "", nil); st != 401 {
		t.Fatalf("no token: status %d, want 401", st)
	}
}
