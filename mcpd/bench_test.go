package mcpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// BenchmarkCheckAuth is one tools/call of check_auth with an OAuth token over HTTPS through
// the whole chain: token check (verifier cache 1 ns, so Redis each time), tier read, rate
// limit, scope check, mcp-go, the cached status.
func BenchmarkCheckAuth(b *testing.B) {
	f := newFixture(b)
	ts := f.serve(b, func(o *mcpd.Options) { o.RateLimit = 1 << 30 })
	u := f.user(b, "ada@example.com", auth.TierPro)
	tok, _ := f.oauthToken(b, u, "client-1", auth.ScopeRead, testResource)
	hc := ts.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+mcpd.Path, strings.NewReader(callBody("check_auth")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		// Drained, so the TLS connection is reused as a client's would be.
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatal(res.Status)
		}
	}
}

// BenchmarkGetBotRiskConcurrent is tools/call of get_bot_risk over streamable HTTP (TLS)
// from 20 mcp-go clients at once, each initialized with its own OAuth token, against a
// redis-server configured as the local stack ships it (append-only file, fsync every
// second, 512 MB, noeviction) and the verifier's production cache bound. It reports p50,
// p99 and calls/s; "reference" drives a chi handler answering a fixed small JSON over the
// same TLS with the same 20 workers and the same request body, so the ratio is mcpd's own
// cost. The load generator runs in the same process and on the same CPUs.
func BenchmarkGetBotRiskConcurrent(b *testing.B) {
	rds, err := stack.StartRedis(b.Context(), stack.RedisOptions{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rds.Stop(10 * time.Second) })
	rdb := rds.Client()
	b.Cleanup(func() { _ = rdb.Close() })
	f := newFixtureOn(b, rdb)
	u := f.user(b, "ada@example.com", auth.TierPro)
	reg := registry.New(rdb)
	bot := registry.Bot{ID: "bot-r", Namespace: "trading", Name: "risk", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		Risk: registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
	if err := reg.Project(b.Context(), bot, "hash-r"); err != nil {
		b.Fatal(err)
	}
	if _, err := rdb.TxPipelined(b.Context(), func(p redis.Pipeliner) error {
		risk.StageCounters(b.Context(), p, bot.ID, risk.Counters{Day: "2026-11-24", DayPnl: testkit.D("-40"), ConsecutiveLosses: 2})
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: f.keys, Issuer: testBase,
		Audiences: []string{testResource, testAPI}, Now: f.clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := mcpd.New(mcpd.Options{Redis: rdb, BaseURL: testBase, MCPURL: testMCPURL, Verifier: v, Users: f.users,
		OAuth: f.oauth, Bots: reg, RateLimit: 1 << 30, Logger: slog.New(slog.DiscardHandler), Now: f.clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewTLSServer(srv.Handler())
	b.Cleanup(ts.Close)
	// Every session keeps its TLS connection, as an agent's client does (net/http keeps two
	// idle connections per host by default: the rest would handshake again on each call).
	ts.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = benchSessions
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_bot_risk","arguments":{"botId":"bot-r"}}}`

	b.Run("mcpd", func(b *testing.B) {
		clients := make([]*client.Client, benchSessions)
		for i := range clients {
			tok, _ := f.oauthToken(b, u, fmt.Sprintf("agent-%d", i), auth.ScopeRead, testResource)
			clients[i], _ = mcpClient(b, tok.Token, "", ts)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "get_bot_risk", map[string]any{"botId": "bot-r"}
		drive(b, func(ctx context.Context, worker int) error {
			res, err := clients[worker].CallTool(ctx, req)
			if err == nil && res.IsError {
				err = fmt.Errorf("error result %+v", res.Content)
			}
			return err
		})
	})

	// The server alone: the same JSON-RPC body posted by the reference's raw net/http loop,
	// each worker with its own token and an initialized session (Mcp-Session-Id), the answer
	// decoded into a map as the reference's is. mcp-go's client (its request building and
	// typed decoding) is not counted against mcpd here.
	b.Run("mcpd-raw", func(b *testing.B) {
		type session struct{ token, id string }
		sessions := make([]session, benchSessions)
		hc := ts.Client()
		for i := range sessions {
			tok, _ := f.oauthToken(b, u, fmt.Sprintf("raw-%d", i), auth.ScopeRead, testResource)
			res, _ := testkit.PostMCP(b, hc, ts.URL+mcpd.Path, tok.Token,
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+mcp.ProtocolVersion20250618+
					`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			sessions[i] = session{tok.Token, res.Header.Get("Mcp-Session-Id")}
			if res.StatusCode != http.StatusOK || sessions[i].id == "" {
				b.Fatalf("initialize: %s, session %q", res.Status, sessions[i].id)
			}
		}
		drive(b, func(ctx context.Context, worker int) error {
			return postRaw(ctx, hc, ts.URL+mcpd.Path, body, func(h http.Header) {
				h.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
				h.Set("Authorization", "Bearer "+sessions[worker].token)
				h.Set("Mcp-Session-Id", sessions[worker].id)
			})
		})
	})

	b.Run("reference", func(b *testing.B) { benchReference(b, body, nil) })
	// The least a server that keeps its state in Redis does per call: the bare handler with
	// one Lua call (reading the bot's projection) on the same Redis.
	read := redis.NewScript(`return redis.call('HGET', KEYS[1], 'config')`)
	b.Run("reference-lua", func(b *testing.B) {
		benchReference(b, body, func(ctx context.Context) error {
			return read.Run(ctx, rdb, []string{store.Bot("bot-r")}).Err()
		})
	})
}

// benchReference drives a bare chi handler that reads the body, calls work (when not nil)
// and writes a small JSON-RPC answer, over TLS with the same client as mcpd-raw.
func benchReference(b *testing.B, body string, work func(context.Context) error) {
	r := chi.NewRouter()
	r.Post("/mcp", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if work != nil {
			if err := work(r.Context()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`))
	})
	ref := httptest.NewTLSServer(r)
	ref.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer ref.Close()
	hc := ref.Client()
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = benchSessions
	drive(b, func(ctx context.Context, _ int) error {
		return postRaw(ctx, hc, ref.URL+"/mcp", body, func(http.Header) {})
	})
}

// postRaw is one call of the raw HTTP loop that drives both mcpd and the references: body
// posted as JSON-RPC with the headers set, the answer decoded into a map; an error unless it
// is 200 with a result.
func postRaw(ctx context.Context, hc *http.Client, url, body string, headers func(http.Header)) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	headers(req.Header)
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	var out map[string]any
	err = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if err == nil && (res.StatusCode != http.StatusOK || out["result"] == nil) {
		err = fmt.Errorf("%s: %s %v", url, res.Status, out)
	}
	return err
}

// benchSessions is the number of concurrent MCP sessions of BenchmarkGetBotRiskConcurrent.
const benchSessions = 20

// drive runs b.N calls of do from benchSessions goroutines (worker i uses session i) and
// reports p50, p99 and calls/s.
func drive(b *testing.B, do func(ctx context.Context, worker int) error) {
	var next atomic.Int64
	took := make([][]time.Duration, benchSessions)
	errs := make(chan error, benchSessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range benchSessions {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := do(b.Context(), w); err != nil {
					errs <- err
					return
				}
				took[w] = append(took[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(took...)
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(.5), "ms-p50")
	b.ReportMetric(q(.99), "ms-p99")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
}

// sendSignalBench is the send_signal benchmarks' server (no per-client rate limit) and
// user, with their paper bot "bench" projected at the CRD's highest rate limit.
func sendSignalBench(b *testing.B, with ...func(*mcpd.Options)) (*fixture, *httptest.Server, auth.User) {
	f := newFixture(b)
	ts := f.serve(b, append([]func(*mcpd.Options){func(o *mcpd.Options) { o.RateLimit = 1 << 30 }}, with...)...)
	u := f.user(b, "ada@example.com", auth.TierPro)
	bot := registry.Bot{ID: "bench", Namespace: "trading", Name: "bench", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		RateLimit: registry.Limit{PerMinute: 60000, Burst: 1000}}
	if err := registry.New(f.rdb).Project(b.Context(), bot, "hash-bench"); err != nil {
		b.Fatal(err)
	}
	return f, ts, u
}

// BenchmarkSendSignal is one send_signal of a paper bot's buy with a bearer JWT through the
// whole chain (token, tier, rate limit, the scope's bot read, mcp-go, the owner read, the
// parse and the intake script) without waiting for a result. The bot's rate limit is the
// CRD's highest (60000 a minute, burst 1000) and the fixture's clock moves 1 ms a call,
// so that the intake never refuses.
func BenchmarkSendSignal(b *testing.B) {
	f, ts, u := sendSignalBench(b)
	c, _ := mcpClient(b, f.bearer(b, u).Token, "", ts)
	args := map[string]any{"botId": "bench", "action": "buy", "size": "0.001"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// The fixture's clock stands still; a millisecond a call keeps the GCRA's bucket
		// (one every 1 ms) from emptying.
		f.clk.Advance(time.Millisecond)
		if res, text := toolResult(b, c, "send_signal", args); res.IsError {
			b.Fatal(text)
		}
	}
}

// BenchmarkSendSignalApp is BenchmarkSendSignal by a connected app: an OAuth token of
// mcp:paper whose policy is in force (the bot named in its list, an hourly cap it never
// reaches), so that each call also goes through the scope's venue reads and the policy's
// admission script (one round trip). BenchmarkSendSignal, the account's own bearer JWT,
// is the same call without either.
func BenchmarkSendSignalApp(b *testing.B) {
	f, ts, u := sendSignalBench(b)
	if err := apppolicy.NewPolicies(f.rdb, nil).Set(b.Context(), u.ID, "bench-app",
		apppolicy.Policy{Bots: []string{"bench"}, OrdersPerHour: apppolicy.MaxOrdersPerHour}); err != nil {
		b.Fatal(err)
	}
	tok, _ := f.oauthToken(b, u, "bench-app", auth.ScopePaper, testResource)
	c, _ := mcpClient(b, tok.Token, "", ts)
	appSends(b, f, c, map[string]any{"botId": "bench", "action": "buy", "size": "0.001"})
}

// appSends is the timed loop of an app's send_signal with args: a millisecond a call, and
// a new hour of the fixture's clock every 10,000 calls, so that the hourly cap never
// refuses.
func appSends(b *testing.B, f *fixture, c *client.Client, args map[string]any) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		f.clk.Advance(time.Millisecond)
		if i > 0 && i%(apppolicy.MaxOrdersPerHour-1) == 0 {
			f.clk.Advance(time.Hour)
		}
		if res, text := toolResult(b, c, "send_signal", args); res.IsError {
			b.Fatal(text)
		}
	}
}

// BenchmarkSendSignalAppLive is BenchmarkSendSignalApp on a live bot under the notional
// caps: each call is also sized by executor.Preview (the executor's first round trip, the
// account, its balance and the price) before the one admission script counts its
// notional. The exchange is the tests' stand-in (standIn: a paper account with the same
// sizing inputs), so the figure is mcpd's own cost, without an exchange's latency.
func BenchmarkSendSignalAppLive(b *testing.B) {
	market := prices{"BTC/USDT": testkit.D("50000")}
	f, ts, u := sendSignalBench(b, func(o *mcpd.Options) {
		venues := &executor.Paper{Redis: o.Redis, Prices: market, Live: standIn{&executor.Paper{Redis: o.Redis, Prices: market}}}
		o.Previews = executor.New(executor.Deps{Redis: o.Redis, Prices: market, Venues: venues, Logger: slog.New(slog.DiscardHandler), Now: o.Now})
	})
	if _, err := paper.NewAccounts(f.rdb).Ensure(b.Context(), paper.Config{ID: "acct-x", Owner: "ada@example.com", Currency: "USDT",
		InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		b.Fatal(err)
	}
	live := registry.Bot{ID: "bench-x", Namespace: "trading", Name: "bench-x", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "0.001", Leverage: 1, Availability: "active", WebhookEnabled: true,
		RateLimit: registry.Limit{PerMinute: 60000, Burst: 1000}}
	if err := registry.New(f.rdb).Project(b.Context(), live, "hash-bench-x"); err != nil {
		b.Fatal(err)
	}
	// Caps in force (100 USDT an order, no day cap, so that no call is refused) and no
	// approval: every call is sized, admitted and queued.
	p := apppolicy.DefaultPolicy()
	p.OrdersPerHour, p.DayNotional, p.Approve = apppolicy.MaxOrdersPerHour, httpapi.Num(decimal.Zero), false
	if err := apppolicy.NewPolicies(f.rdb, nil).Set(b.Context(), u.ID, "bench-app", p); err != nil {
		b.Fatal(err)
	}
	tok, _ := f.oauthToken(b, u, "bench-app", auth.ScopeLive, testResource)
	c, _ := mcpClient(b, tok.Token, "", ts)
	appSends(b, f, c, map[string]any{"botId": "bench-x", "action": "buy", "size": "0.001"})
}
