package authd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// benchServer is authd on a fresh redis-server with a registered public client and a user.
func benchServer(b *testing.B) (*Server, http.Handler, string, auth.User) {
	_, rdb := storetest.New(b)
	keys, _ := auth.NewKeyring(testKey, nil)
	srv, err := New(Options{Redis: rdb, Keys: keys, BaseURL: "https://auth.bench", KDF: auth.TestKDF,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, _, err := srv.oauth.RegisterClient(ctx, auth.ClientMetadata{ClientName: "bench", RedirectURIs: []string{"http://127.0.0.1/cb"},
		TokenEndpointAuthMethod: auth.AuthMethodNone})
	if err != nil {
		b.Fatal(err)
	}
	u, err := srv.users.Create(ctx, auth.NewUser{Email: "bench@example.com", Password: "correct horse battery"})
	if err != nil {
		b.Fatal(err)
	}
	return srv, srv.Handler(), c.ID, u
}

// newChain starts an authorization as a code exchange would and returns its refresh token.
func newChain(b *testing.B, srv *Server, clientID string, u auth.User) string {
	rt, err := srv.oauth.CreateAuthorization(context.Background(), auth.Authorization{ID: auth.RandomToken(16), UserID: u.ID,
		ClientID: clientID, ClientName: "bench", Scope: auth.ScopePaper, Resource: srv.apiResource, Gen: u.Generation})
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

// refreshOnce posts one refresh grant through the real handler and returns the next token.
func refreshOnce(b *testing.B, h http.Handler, clientID, rt string) string {
	body := url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {rt}}.Encode()
	req := httptest.NewRequest(http.MethodPost, "https://auth.bench/api/oauth/token", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 200 {
		b.Fatalf("refresh: %d %s", w.Code, w.Body)
	}
	var r struct {
		RefreshToken string `json:"refresh_token"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &r)
	return r.RefreshToken
}

func report(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "refreshes/s")
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

// BenchmarkRefreshGrant is the token endpoint's refresh grant through the real handler
// (form parsing, client lookup, the rotation script, JWT signing, JSON) on a real Redis over
// loopback: each iteration spends the previous refresh token of its chain.
func BenchmarkRefreshGrant(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		srv, h, cid, u := benchServer(b)
		rt := newChain(b, srv, cid, u)
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			t0 := time.Now()
			rt = refreshOnce(b, h, cid, rt)
			lat = append(lat, time.Since(t0))
		}
		report(b, lat, time.Since(start))
	})
	b.Run("parallel", func(b *testing.B) {
		srv, h, cid, u := benchServer(b)
		var mu sync.Mutex
		var all []time.Duration
		b.ReportAllocs()
		b.SetParallelism(4) // 8 client goroutines on 2 CPUs: Redis round trips overlap
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			rt := newChain(b, srv, cid, u) // each client its own authorization
			lat := make([]time.Duration, 0, 1<<14)
			for pb.Next() {
				t0 := time.Now()
				rt = refreshOnce(b, h, cid, rt)
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
		report(b, all, time.Since(start))
	})
}
