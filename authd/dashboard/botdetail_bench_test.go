package dashboard

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
)

// benchCandles is a full series (candles.MaxLimit) of hourly candles and the newest
// markerOrders fills among them, newest first as the book lists them.
func benchCandles() ([]ChartCandle, []position.OrderRecord) {
	const n, start = 500, int64(1_700_000_000)
	cs := make([]ChartCandle, n)
	for i := range cs {
		p := httpapi.Num(decimal.NewFromInt(int64(60000 + i)))
		cs[i] = ChartCandle{Time: start + int64(i)*3600, Open: p, High: p, Low: p, Close: p}
	}
	orders := make([]position.OrderRecord, markerOrders)
	for i := range orders {
		at := (start + int64(n-1-i*2)*3600 + 17) * 1000
		side := exchange.SideBuy
		if i%2 == 1 {
			side = exchange.SideSell
		}
		orders[i] = position.OrderRecord{Symbol: "BTC/USDT", Side: side, Status: exchange.StatusFilled,
			FilledAmount: httpapi.Num(decimal.RequireFromString("0.125")), AvgPrice: httpapi.Num(decimal.RequireFromString("60123.5")), UpdatedAt: at}
	}
	return cs, orders
}

func BenchmarkChartMarkers(b *testing.B) {
	cs, orders := benchCandles()
	b.ReportAllocs()
	for b.Loop() {
		if m := chartMarkers(cs, "BTC/USDT", orders); len(m) != markerOrders {
			b.Fatalf("%d markers", len(m))
		}
	}
}

// BenchmarkBotDetailRender renders the whole page (layout, 13 metrics, risk, a position and
// a full page of 50 signals) from figures already read: the template's share of a request.
func BenchmarkBotDetailRender(b *testing.B) {
	p, err := loadPages()
	if err != nil {
		b.Fatal(err)
	}
	d := &Dashboard{pages: p, o: Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	bot := registry.Bot{ID: "0b7f9a2e-0000-4000-8000-000000000001", Name: "trend", Symbol: "BTC/USDT", Market: "spot",
		Availability: "active", WebhookEnabled: true, Account: registry.Account{Kind: registry.AccountPaper}}
	sl, tp := decimal.NewFromInt(57000), decimal.NewFromInt(66000)
	data := botDetail{Bot: bot, Venue: "Paper", Pair: "BTC/USDT",
		Positions: []position.View{{Symbol: "BTC/USDT", Side: position.Long, Size: httpapi.Num(decimal.RequireFromString("0.5")),
			EntryPrice: httpapi.Num(decimal.NewFromInt(60000)), CurrentPrice: httpapi.Num(decimal.NewFromInt(61000)), Pnl: httpapi.Num(decimal.NewFromInt(500)),
			Leverage: 1, StopLoss: httpapi.NumPtr(sl), TakeProfit: httpapi.NumPtr(tp)}},
		Risk: &risk.BotMetrics{RiskScore: 2, RiskLevel: risk.LevelLow}, RiskClass: "active", RiskExposure: "50 %", RiskMaxExposure: "none",
		Webhook: webhookPanel{BotID: bot.ID, Message: tradingViewMessage()}}
	for i := range 13 {
		data.Analytics.Metrics = append(data.Analytics.Metrics, metric{Label: fmt.Sprint("Metric ", i), Value: "123.45", Class: "up"})
	}
	for i := range signalPageSize {
		data.Signals.Rows = append(data.Signals.Rows, signalRow{SignalID: fmt.Sprint("sig-", i), Source: "webhook", Action: "buy",
			Received: time.UnixMilli(1_700_000_000_000), Found: true, Success: true, Order: "buy 0.5 BTC/USDT @ 60000 (filled)", LatencyMs: 37})
	}
	r := httptest.NewRequest(http.MethodGet, "/dashboard/bots/"+bot.ID, nil)
	page := Page{Title: bot.Name, Nav: "bots", Data: data}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		d.render(w, r, http.StatusOK, "botdetail", page)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
