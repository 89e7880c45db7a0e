package localstack

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/load"
)

// TestKilledExecutorIsRestarted starts the stack the way `make run` does, with two
// executors (on a Redis Cluster too, when the tests run on one), sends signals at a steady
// rate, kills one executor with SIGKILL mid-run, and checks that every accepted signal has
// exactly one result and each fill one order, that the killed executor was restarted by its
// supervisor and is ready again, and that every other program kept its process.
func TestKilledExecutorIsRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local stack")
	}
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx := t.Context()
	o := Options{Executors: 2, Webhookd: 2}
	if storetest.ClusterMode() {
		o.Redis = RedisCluster
	}
	s := StartForTest(ctx, t, o)
	if got := len(s.RedisAddrs()); storetest.ClusterMode() != (got == clusterNodes) {
		t.Fatalf("Redis %v for cluster mode %v", s.RedisAddrs(), storetest.ClusterMode())
	}
	pids := map[string]int{}
	for _, d := range s.Daemons() {
		pids[d.Name()] = d.Pid()
	}
	for _, want := range []string{"manager", "executor-0", "executor-1", "webhookd-0", "webhookd-1", "authd", "mcpd", "notifyd", "nginx"} {
		if _, ok := pids[want]; !ok {
			t.Fatalf("no %s among the supervised programs %v", want, pids)
		}
	}
	listed, err := ReadPids(s.dir)
	if err != nil || len(listed) != len(pids)+len(s.RedisAddrs())+1 { // and postgres
		t.Fatalf("pids file: %v, %v; want every program", listed, err)
	}

	fleet, err := load.Setup(ctx, s.Client, load.SetupOptions{Bots: 10})
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := store.Connect(ctx, s.Store())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	checker := load.NewChecker(rdb, fleet).WithArchive(dbtest.Pool(t, s.DatabaseURL()))
	pem, err := os.ReadFile(s.CertFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	runner, err := load.NewRunner(load.Target{BaseURL: s.BaseURL(), RootCAs: roots}, fleet.Paths())
	if err != nil {
		t.Fatal(err)
	}

	victim := s.Daemon("executor-0")
	killed := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(4 * time.Second):
		}
		killed <- victim.Kill()
	}()
	res, err := runner.Run(ctx, load.Scenario{Name: "kill an executor", Rate: 100, Duration: 12 * time.Second, Connections: 16,
		Retry: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	rec, err := checker.Reconcile(ctx, res, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d, accepted %d, results %v, %d orders, lost %d, duplicated %d", res.Sent, rec.Accepted, rec.ResultCodes, rec.Orders, rec.Lost, rec.DuplicatedTotal())
	if !rec.OK() {
		t.Fatalf("reconciliation: %s", rec.Problems())
	}
	if rec.Accepted != res.Sent || rec.Accepted == 0 {
		t.Errorf("%d of %d requests accepted; the retried sender should have every one acknowledged (outcomes %v)", rec.Accepted, res.Sent, res.Outcomes)
	}
	if rec.Orders != rec.ResultCodes["ok"] || rec.Fills != rec.Orders {
		t.Errorf("%d orders and %d fills for %d executed signals; want one each", rec.Orders, rec.Fills, rec.ResultCodes["ok"])
	}

	// The executor killed mid-run was also archiving its partitions: PostgreSQL ends up
	// with every result and order, none lost and none twice.
	if err := load.WaitArchived(ctx, s.DatabaseURL(), fleet, rec.Accepted, rec.Orders, time.Minute); err != nil {
		t.Fatal(err)
	}

	if err := victim.WaitReady(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if victim.Restarts() != 1 || victim.Pid() == pids["executor-0"] {
		t.Errorf("executor-0: %d restarts, pid %d (was %d); want restarted once", victim.Restarts(), victim.Pid(), pids["executor-0"])
	}
	for _, d := range s.Daemons() {
		if d != victim && (d.Restarts() != 0 || d.Pid() != pids[d.Name()]) {
			t.Errorf("%s: %d restarts, pid %d (was %d); want it untouched", d.Name(), d.Restarts(), d.Pid(), pids[d.Name()])
		}
	}
	select {
	case err := <-s.Failed():
		t.Errorf("the stack failed: %v", err)
	default:
	}
	listed, err = ReadPids(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range listed {
		if e.Name == "executor-0" && (e.Pid != victim.Pid() || e.Restarts != 1) {
			t.Errorf("pids file lists %+v; want the restarted executor-0 (pid %d, 1 restart)", e, victim.Pid())
		}
		if h := e.Health(ctx); h != "ready" && h != "running" {
			t.Errorf("%s: %s", e.Name, h)
		}
	}

	// Redis lost entirely: what the users read of their bots' books (every day's analytics,
	// open positions, paper balances and holdings) comes back from PostgreSQL once the
	// manager has projected the objects again and the executors restored their partitions.
	if err := fleet.WaitCopied(ctx, rdb, time.Minute); err != nil {
		t.Fatal(err)
	}
	db, err := pgxpool.New(ctx, s.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now()
	before, err := fleet.BookSnapshot(ctx, rdb, db, at)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(before, `"totalTrades":0,`); n == len(fleet.Bots) {
		t.Fatalf("no bot traded, so the restore is not checked:\n%s", before)
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	var after string
	lost := time.Now()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		after, err = fleet.BookSnapshot(ctx, rdb, db, at)
		if err == nil && after == before {
			t.Logf("the fleet's books read the same %s after FLUSHALL", time.Since(lost).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the books after FLUSHALL (%v):\n%s\nbefore:\n%s", err, after, before)
		}
	}

	// The demo account and its Strategy Lab wallet are in PostgreSQL too, so its owner
	// signs in with the same password and finds the same balance.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 30 * time.Second}
	body, _ := json.Marshal(map[string]string{"email": DemoEmail, "password": s.Password})
	resp, err := hc.Post(s.BaseURL()+"/api/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		Token string `json:"token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&login)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("sign in after FLUSHALL: %d %v, want 200", resp.StatusCode, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL()+"/api/user/me", nil)
	req.Header.Set("Authorization", "Bearer "+login.Token)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me struct {
		Balance json.Number `json:"strategyLabBalanceUsd"`
	}
	err = json.NewDecoder(resp.Body).Decode(&me)
	resp.Body.Close()
	if bal, perr := decimal.NewFromString(me.Balance.String()); resp.StatusCode != http.StatusOK || err != nil || perr != nil ||
		!bal.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("the wallet after FLUSHALL: %d %v %q, want 100 USD", resp.StatusCode, err, me.Balance)
	}

	notificationsEndToEnd(t, s, hc, login.Token)

	if !storetest.ClusterMode() { // the record does not depend on the Redis topology: once is enough
		postgresOutage(t, s, fleet, rdb, runner, hc, login.Token, rec.Accepted, rec.Orders)
	}
}

// postgresOutage holds PostgreSQL down for a minute while signals keep coming: every signal
// is accepted and filled without it, a signed-in user keeps reading their portfolio and can
// sign in again (accounts are read from Redis's copy; nothing is written), a registration of
// an OAuth client, which must be recorded, answers 503 with Retry-After, and once PostgreSQL
// is back the archive catches up with every result and order (results and orders: what was
// archived before the outage).
func postgresOutage(t *testing.T, s *Stack, fleet *load.Fleet, rdb redis.UniversalClient, runner *load.Runner, hc *http.Client,
	token string, results, orders int) {
	ctx := t.Context()
	release, err := s.HoldPostgres()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	down := time.Now()
	done := make(chan struct{})
	var probes []string
	expect := func(what string, resp *http.Response, err error, status int, retryAfter bool) {
		if err != nil {
			probes = append(probes, what+": "+err.Error())
			return
		}
		resp.Body.Close()
		if resp.StatusCode != status || retryAfter && resp.Header.Get("Retry-After") == "" {
			probes = append(probes, fmt.Sprintf("%s answered %d (Retry-After %q), want %d", what, resp.StatusCode, resp.Header.Get("Retry-After"), status))
		}
	}
	go func() {
		defer close(done)
		time.Sleep(10 * time.Second)
		body, _ := json.Marshal(map[string]string{"email": DemoEmail, "password": s.Password})
		resp, err := hc.Post(s.BaseURL()+"/api/auth/login", "application/json", bytes.NewReader(body))
		expect("a login", resp, err, http.StatusOK, false)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL()+"/api/user/portfolio", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err = hc.Do(req)
		expect("a signed-in user's portfolio", resp, err, http.StatusOK, false)
		body, _ = json.Marshal(map[string]any{"client_name": "Agent", "redirect_uris": []string{"https://a.example/cb"},
			"token_endpoint_auth_method": "none"})
		resp, err = hc.Post(s.BaseURL()+"/api/oauth/register", "application/json", bytes.NewReader(body))
		expect("an OAuth client registration", resp, err, http.StatusServiceUnavailable, true)
	}()
	res, err := runner.Run(ctx, load.Scenario{Name: "PostgreSQL down", Rate: 20, Duration: 50 * time.Second, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	for _, p := range probes {
		t.Error(p)
	}
	// Redis alone answers for them: PostgreSQL is still down.
	rec, err := load.NewChecker(rdb, fleet).Reconcile(ctx, res, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL down %s: sent %d, accepted %d, results %v, %d orders", time.Since(down).Round(time.Second), res.Sent, rec.Accepted, rec.ResultCodes, rec.Orders)
	if !rec.OK() || rec.Accepted != res.Sent || rec.ResultCodes["ok"] != rec.Accepted {
		t.Fatalf("with PostgreSQL down: %d of %d accepted, results %v: %s", rec.Accepted, res.Sent, rec.ResultCodes, rec.Problems())
	}
	if d := time.Since(down); d < time.Minute {
		time.Sleep(time.Minute - d)
	}
	release()
	if err := load.WaitArchived(ctx, s.DatabaseURL(), fleet, results+rec.Accepted, orders+rec.Orders, 2*time.Minute); err != nil {
		t.Fatalf("after PostgreSQL came back: %v", err)
	}
}
