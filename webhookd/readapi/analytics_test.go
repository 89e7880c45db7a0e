package readapi_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

func analyticsPath(botID, query string) string {
	return "/api/botsvc/bots/" + botID + "/analytics" + query
}

// bookTrades stores trades of botID as the executor's booking does: each trade with its
// day's aggregate, and the starting equity.
func bookTrades(t *testing.T, rdb redis.UniversalClient, botID, start string, trades ...position.Trade) {
	t.Helper()
	days := map[analytics.Date]analytics.Day{}
	if _, err := rdb.TxPipelined(t.Context(), func(p redis.Pipeliner) error {
		analytics.StageStart(t.Context(), p, botID, testkit.D(start))
		for _, tr := range trades {
			tr.BotID = botID
			if err := position.StageTrade(t.Context(), p, tr); err != nil {
				return err
			}
			date := analytics.DateOfMS(tr.ClosedAt)
			d := days[date]
			d.Add(tr)
			days[date] = d
			if err := analytics.StageDay(t.Context(), p, botID, date, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func trade(net string, closed time.Time) position.Trade {
	return position.Trade{NetPnl: httpapi.Num(testkit.D(net)), Fees: httpapi.Num(testkit.D("1")), ClosedAt: closed.UnixMilli()}
}

func nov(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }

func TestAnalytics(t *testing.T) {
	f := newFixture(t) // now: Tuesday 2026-11-24 12:00 UTC
	alice, bob := f.user(t, "alice@example.com"), f.user(t, "bob@example.com")
	f.projectBot(t, "bot-a", "alice@example.com", "acct-a")
	f.projectBot(t, "bot-b", "bob@example.com", "acct-b")
	// Equity 1000 → 1100 (20th) → 1050 → 950 (21st) → 980 (22nd).
	bookTrades(t, f.rdb, "bot-a", "1000", trade("100", nov(20, 12)), trade("-50", nov(21, 8)), trade("-100", nov(21, 9)), trade("30", nov(22, 12)))
	bookTrades(t, f.rdb, "bot-b", "500", trade("5", nov(24, 1)))

	t.Run("no credentials", func(t *testing.T) {
		r := f.get(t, analyticsPath("bot-a", ""))
		if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%d %s %s", r.status, r.header, r.body)
		}
	})
	t.Run("another user's bot answers like a missing one", func(t *testing.T) {
		other := f.get(t, analyticsPath("bot-b", "?period=7d"), f.bearer(t, alice))
		missing := f.get(t, analyticsPath("bot-none", "?period=7d"), f.bearer(t, alice))
		if other.status != http.StatusNotFound || !bytes.Equal(other.body, missing.body) || missing.status != http.StatusNotFound {
			t.Fatalf("another user's: %d %s\nmissing: %d %s", other.status, other.body, missing.status, missing.body)
		}
		var body struct{ Code, Error string }
		other.decode(t, &body)
		if body.Code != "NOT_FOUND" || body.Error != "bot not found" {
			t.Fatalf("body %s", other.body)
		}
		// Bob sees his own.
		if r := f.get(t, analyticsPath("bot-b", ""), f.session(t, bob)); r.status != http.StatusOK {
			t.Fatalf("owner: %d %s", r.status, r.body)
		}
	})
	t.Run("bad parameters", func(t *testing.T) {
		for query, param := range map[string]string{
			"?period=1y":                                    "period",
			"?period=7d&startDate=2026-11-01":               "period",
			"?endDate=2026-11-10":                           "endDate",
			"?startDate=2026-11-10&endDate=2026-11-01":      "startDate",
			"?startDate=yesterday":                          "startDate",
			"?startDate=2026-11-01&endDate=2026-11-31":      "endDate",
			"?includeEquity=yes":                            "includeEquity",
			"?startDate=2026-11-25":                         "startDate",
			"?period=7d&includeEquity=true&endDate=2026-11": "period",
		} {
			r := f.get(t, analyticsPath("bot-a", query), f.bearer(t, alice))
			var body struct {
				Success     bool
				Code, Error string
			}
			r.decode(t, &body)
			if r.status != http.StatusBadRequest || body.Success || body.Code != "INVALID_PARAMETER" || !strings.HasPrefix(body.Error, param) {
				t.Errorf("%s: %d %s, want 400 INVALID_PARAMETER naming %s", query, r.status, r.body, param)
			}
		}
	})
	t.Run("the report", func(t *testing.T) {
		r := f.get(t, analyticsPath("bot-a", "?period=7d&includeEquity=true"), f.bearer(t, alice))
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.UseNumber()
		var body struct {
			Success bool
			Data    struct {
				BotID, BotName, Symbol, Period, StartDate, EndDate string
				StartingEquity                                     any
				Metrics                                            map[string]any
				Formatted                                          map[string]string
				EquityCurve                                        []map[string]any
				AvailablePeriods                                   []analytics.Period
			}
		}
		if err := dec.Decode(&body); err != nil {
			t.Fatal(err)
		}
		d := body.Data
		if !body.Success || d.BotID != "bot-a" || d.BotName != "bot-bot-a" || d.Symbol != "BTC/USDT" || d.Period != "Last 7 days" ||
			d.StartDate != "2026-11-18" || d.EndDate != "2026-11-24" || len(d.AvailablePeriods) != 8 {
			t.Fatalf("report %s", r.body)
		}
		// Money is a JSON number with its exact text.
		money := func(what string, v any, want string) {
			t.Helper()
			if n, ok := v.(json.Number); !ok || n.String() != want {
				t.Errorf("%s = %#v, want the number %s", what, v, want)
			}
		}
		float := func(what string, v any, want float64) {
			t.Helper()
			n, ok := v.(json.Number)
			got, err := n.Float64()
			if !ok || err != nil || math.Abs(got-want) > 1e-9 {
				t.Errorf("%s = %#v, want %.12f", what, v, want)
			}
		}
		m := d.Metrics
		money("startingEquity", d.StartingEquity, "1000")
		// 4 trades: wins 100 and 30, losses −50 and −100.
		float("totalTrades", m["totalTrades"], 4)
		float("winningTrades", m["winningTrades"], 2)
		float("losingTrades", m["losingTrades"], 2)
		float("winRate", m["winRate"], 50)
		money("totalPnL", m["totalPnL"], "-20")            // 100 − 50 − 100 + 30
		float("totalPnLPercent", m["totalPnLPercent"], -2) // −20 / 1000
		money("avgWin", m["avgWin"], "65")                 // 130 / 2
		money("avgLoss", m["avgLoss"], "-75")              // −150 / 2
		float("profitFactor", m["profitFactor"], 130.0/150)
		money("maxDrawdown", m["maxDrawdown"], "150")                      // 1100 → 950
		float("maxDrawdownPercent", m["maxDrawdownPercent"], 15000.0/1100) // 13.6364
		// Returns from the first trade day (20th) to today: 100/1000 = 0.1, −150/1100 =
		// −0.1363636364, 30/950 = 0.0315789474, 0, 0; mean −0.0009569378, sample std
		// 0.0860053670; × √365 = −0.2125712804.
		float("sharpeRatio", m["sharpeRatio"], -0.21257128043122564)
		if want := map[string]string{"totalPnL": "-20.00 USDT", "winRate": "50.0%", "profitFactor": "0.87",
			"maxDrawdown": "-150.00 USDT (13.6%)"}; len(d.Formatted) != 4 || d.Formatted["totalPnL"] != want["totalPnL"] ||
			d.Formatted["winRate"] != want["winRate"] || d.Formatted["profitFactor"] != want["profitFactor"] ||
			d.Formatted["maxDrawdown"] != want["maxDrawdown"] {
			t.Errorf("formatted %v, want %v", d.Formatted, want)
		}
		// The start of the 18th, then each day's trades (the trade list keeps them) and
		// its end; today's at now.
		wantCurve := []struct {
			ts                 time.Time
			equity, drawdownOf string
		}{
			{nov(18, 0), "1000", "0"}, {nov(19, 0), "1000", "0"}, {nov(20, 0), "1000", "0"}, {nov(20, 12), "1100", "0"},
			{nov(21, 0), "1100", "0"}, {nov(21, 8), "1050", "50"}, {nov(21, 9), "950", "150"}, {nov(22, 0), "950", "150"},
			{nov(22, 12), "980", "120"}, {nov(23, 0), "980", "120"}, {nov(24, 0), "980", "120"}, {nov(24, 12), "980", "120"},
		}
		if len(d.EquityCurve) != len(wantCurve) {
			t.Fatalf("equity curve %v", d.EquityCurve)
		}
		for i, w := range wantCurve {
			p := d.EquityCurve[i]
			float("timestamp", p["timestamp"], float64(w.ts.UnixMilli()))
			money("equity", p["equity"], w.equity)
			money("drawdown", p["drawdown"], w.drawdownOf)
		}
	})
	t.Run("three trades today, the middle one a big loss", func(t *testing.T) {
		f.projectBot(t, "bot-dip", "alice@example.com", "acct-a")
		bookTrades(t, f.rdb, "bot-dip", "1000", trade("120.125", nov(24, 1)), trade("-400.0625", nov(24, 2)), trade("250.5", nov(24, 3)))
		r := f.get(t, analyticsPath("bot-dip", "?period=today&includeEquity=true"), f.bearer(t, alice))
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		// The curve as JSON text: every figure a number with its exact decimals.
		for _, want := range []string{`"maxDrawdown":400.0625,`, `"equityCurve":[{"timestamp":1795478400000,"equity":1000,"drawdown":0},` +
			`{"timestamp":1795482000000,"equity":1120.125,"drawdown":0},{"timestamp":1795485600000,"equity":720.0625,"drawdown":400.0625},` +
			`{"timestamp":1795489200000,"equity":970.5625,"drawdown":149.5625},{"timestamp":1795521600000,"equity":970.5625,"drawdown":149.5625}]`} {
			if !strings.Contains(string(r.body), want) {
				t.Fatalf("want %s in %s", want, r.body)
			}
		}
	})
	t.Run("defaults", func(t *testing.T) {
		r := f.get(t, analyticsPath("bot-a", ""), f.bearer(t, alice))
		var body struct {
			Data map[string]json.RawMessage
		}
		r.decode(t, &body)
		if r.status != http.StatusOK || string(body.Data["period"]) != `"Last 30 days"` || body.Data["equityCurve"] != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		// A custom range: the 21st alone.
		r = f.get(t, analyticsPath("bot-a", "?startDate=2026-11-21&endDate=2026-11-21"), f.bearer(t, alice))
		var custom struct {
			Data analytics.Report
		}
		r.decode(t, &custom)
		if r.status != http.StatusOK || custom.Data.Period != "2026-11-21 to 2026-11-21" || custom.Data.Metrics.TotalTrades != 2 ||
			!custom.Data.Metrics.TotalPnL.Equal(testkit.D("-150")) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
