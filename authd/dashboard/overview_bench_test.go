package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// bareDashboard is the dashboard on rdb with every request served for viewer: the
// handlers alone, without authd's login session (its lookup is the same for every page).
func bareDashboard(tb testing.TB, rdb redis.UniversalClient, viewer dashboard.Viewer) (http.Handler, *dashboard.Dashboard) {
	tb.Helper()
	d, err := dashboard.New(dashboard.Options{Redis: rdb, APIs: userapi.OnRedis(rdb), Logger: slog.New(slog.DiscardHandler),
		Session: func(http.ResponseWriter, *http.Request) (dashboard.Viewer, error) { return viewer, nil }})
	if err != nil {
		tb.Fatal(err)
	}
	r := chi.NewRouter()
	d.Mount(r)
	return r, d
}

// seedMany gives owner bots bots on one paper account, each with positions open positions
// (spot, one per paper symbol), 10 trades over the last 10 days and 3 signals with results.
func seedMany(tb testing.TB, rdb redis.UniversalClient, owner string, bots, positions int) {
	tb.Helper()
	s := newSeeder(tb, rdb, owner, "pa-bench-"+owner, "100000")
	symbols := paper.Symbols()
	if positions > len(symbols) {
		tb.Fatalf("at most %d positions per bot", len(symbols))
	}
	now := time.Now()
	for i := range bots {
		id := fmt.Sprintf("bench-%s-%03d", owner, i)
		s.bot(id, "bench", fmt.Sprintf("bot %03d", i), "", "spot")
		for _, sym := range symbols[:positions] {
			s.position(position.Open("p-"+id+sym, id, sym, exchange.Spot, position.Long, 1,
				position.Fill{Amount: testkit.D("1.5"), Price: testkit.D("10"), At: now.UnixMilli()}, "s"))
		}
		var trades []position.Trade
		for j := range 10 {
			trades = append(trades, position.Trade{ID: fmt.Sprint(j), Symbol: symbols[0], NetPnl: httpapi.Num(testkit.D("1.25")),
				ClosedAt: now.Add(-time.Duration(j) * 24 * time.Hour).UnixMilli()})
		}
		s.trades(id, trades...)
		for j := range 3 {
			s.signal(id, fmt.Sprintf("sig-%s-%d", id, j), "buy", now.Add(-time.Duration(j)*time.Second),
				result.Result{Success: true, Order: &result.Order{Success: true, Status: "filled", Symbol: symbols[0], Side: "buy",
					FilledAmount: httpapi.Num(testkit.D("1.5")), AvgPrice: httpapi.Num(testkit.D("10"))}})
		}
	}
}

// render is one overview request; it fails tb unless the page is served whole.
func render(tb testing.TB, h http.Handler, path string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s: status %d\n%s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// An overview costs the same Redis round trips for one bot as for thirty: every per-bot
// read is pipelined. Eleven: the books (the owner's bots; their projections, open symbols
// and days; their positions), the paper accounts (two) and exchange connections, the paper
// holdings, the pauses, the activity (two) and the approvals waiting.
func TestOverviewRoundTripsDoNotGrowWithBots(t *testing.T) {
	_, rdb := storetest.New(t)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	count := func(owner string, bots int) []string {
		seedMany(t, rdb, owner, bots, 3)
		h, _ := bareDashboard(t, rdb, dashboard.Viewer{User: auth.User{ID: owner, Email: owner}, CSRF: "c"})
		render(t, h, "/dashboard") // first render: anything cached is cached
		trips.Take()
		render(t, h, "/dashboard")
		return requests(trips.Take())
	}
	one, thirty := count("one@example.io", 1), count("thirty@example.io", 30)
	if len(one) != len(thirty) || len(one) > 11 {
		t.Fatalf("round trips: %d for 1 bot, %d for 30 (want equal, at most 11)\n1: %s\n30: %s",
			len(one), len(thirty), strings.Join(one, " | "), strings.Join(thirty, " | "))
	}
	t.Logf("%d round trips per overview", len(one))
}

// requests drops a new connection's handshake (HELLO, CLIENT SETINFO) from round trips:
// the pool dials when the overview's parallel reads need one more connection.
func requests(trips []string) []string {
	return slices.DeleteFunc(trips, func(t string) bool {
		return t == "hello" || strings.HasPrefix(t, "client")
	})
}

var assetRe = regexp.MustCompile(`<(?:script src|link rel="stylesheet" href)="(/static/[^"]+)"`)

// firstLoad is the JS and CSS files the overview page loads.
func firstLoad(tb testing.TB, page string) []string {
	var out []string
	for _, m := range assetRe.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	if !slices.Contains(out, "/static/dashboard.css") || !slices.Contains(out, "/static/dashboard.js") {
		tb.Fatalf("assets %v", out)
	}
	return out
}

// The first page a trader sees loads no chart library: its JS and CSS stay under 200 KB
// as sent uncompressed.
func TestOverviewPageWeight(t *testing.T) {
	h, d := bareDashboard(t, env.RDB, dashboard.Viewer{User: auth.User{ID: "w", Email: "weight@example.io"}, CSRF: "c"})
	assets := firstLoad(t, render(t, h, "/dashboard"))
	if slices.ContainsFunc(assets, func(a string) bool { return strings.Contains(a, "lightweight-charts") }) {
		t.Fatalf("the overview loads the chart library: %v", assets)
	}
	raw, err := d.StaticSize(false, assets...)
	if err != nil {
		t.Fatal(err)
	}
	if raw >= 200*1024 {
		t.Fatalf("first load %d bytes of JS and CSS, want < 200 KB", raw)
	}
}

// BenchmarkOverview is the server time of GET /dashboard for a user with 100 bots and 500
// open positions (one paper account; 10 trades and 3 signals per bot), render included,
// against "reference": a handler that reads the user's bot IDs (one SMEMBERS) and writes a
// small page, on the same Redis in the same run. It reports p50 and p99, the ratio of the
// p99s, the Redis round trips of one render, and the JS+CSS bytes of the first load (raw
// and gzip).
func BenchmarkOverview(b *testing.B) {
	_, rdb := storetest.New(b)
	const owner = "bench@example.io"
	seedMany(b, rdb, owner, 100, 5)
	viewer := dashboard.Viewer{User: auth.User{ID: "bench", Email: owner}, CSRF: "c"}
	h, d := bareDashboard(b, rdb, viewer)
	page := render(b, h, "/dashboard")
	if n := strings.Count(page, `action="/dashboard/bots/`); n != 100 {
		b.Fatalf("%d bot forms, want 100", n)
	}
	if n := strings.Count(page, `<td class="num">1.5</td>`); n != dashboard.OverviewPositions || !strings.Contains(page, "of 500 open") {
		b.Fatalf("%d positions listed, want %d of 500", n, dashboard.OverviewPositions)
	}
	var refP99 time.Duration
	trips := &switchedTrips{}
	rdb.AddHook(trips)

	b.Run("reference", func(b *testing.B) {
		ref := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ids, err := rdb.SMembers(r.Context(), store.OwnerBots(owner)).Result()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, fmt.Sprintf("<!doctype html><p>%d bots</p>", len(ids)))
		})
		_, refP99 = timeRenders(b, ref)
	})

	b.Run("overview", func(b *testing.B) {
		_, p99 := timeRenders(b, h)
		if refP99 > 0 {
			b.ReportMetric(float64(p99)/float64(refP99), "p99/ref-p99")
		}
		trips.on.Store(true)
		render(b, h, "/dashboard")
		trips.on.Store(false)
		b.ReportMetric(float64(len(requests(trips.Take()))), "redis-trips/render")
		assets := firstLoad(b, page)
		raw, _ := d.StaticSize(false, assets...)
		gz, _ := d.StaticSize(true, assets...)
		b.ReportMetric(float64(raw), "first-load-bytes")
		b.ReportMetric(float64(gz), "first-load-gzip-bytes")
		b.ReportMetric(float64(len(page)), "page-bytes")
	})
}

// switchedTrips records round trips only while on. A hook cannot be removed from a
// client, and the sub-benchmark's body runs twice (once with b.N = 1): a hook added in it
// and left recording would keep every command of the timed renders alive, and their
// garbage collection would be timed with them.
type switchedTrips struct {
	storetest.Trips
	on atomic.Bool
}

func (s *switchedTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	rec := s.Trips.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		if s.on.Load() {
			return rec(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (s *switchedTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	rec := s.Trips.ProcessPipelineHook(next)
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if s.on.Load() {
			return rec(ctx, cmds)
		}
		return next(ctx, cmds)
	}
}

// timeRenders serves b.N overview requests one after another and reports p50 and p99.
func timeRenders(b *testing.B, h http.Handler) (p50, p99 time.Duration) {
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		render(b, h, "/dashboard")
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	p50, p99 = took[len(took)/2], took[len(took)*99/100]
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	return p50, p99
}

// More open positions than the page lists: it lists OverviewPositions and says how many
// are open; the totals count them all.
func TestOverviewListsTheFirstPositionsOfMany(t *testing.T) {
	_, rdb := storetest.New(t)
	const owner = "many@example.io"
	seedMany(t, rdb, owner, 21, 5) // 105 positions
	h, _ := bareDashboard(t, rdb, dashboard.Viewer{User: auth.User{ID: "many", Email: owner}, CSRF: "c"})
	page := render(t, h, "/dashboard")
	if n := strings.Count(page, `<td class="num">1.5</td>`); n != dashboard.OverviewPositions ||
		!strings.Contains(page, "The 100 positions with the largest unrealised PnL of 105 open") {
		t.Fatalf("%d positions listed, want %d of 105:\n%s", n, dashboard.OverviewPositions, page)
	}
}
