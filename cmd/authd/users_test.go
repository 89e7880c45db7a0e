package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestUsersCommands(t *testing.T) {
	srv, _ := storetest.New(t)
	redis := store.Options{Addr: srv.Addr, ClusterAddrs: srv.ClusterAddrs}.Args()
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("bootstrap password 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (map[string]any, string) {
		t.Helper()
		var out bytes.Buffer
		if err := users(append(args, redis...), strings.NewReader(stdin), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Contains(out.String(), "bootstrap password") || strings.Contains(out.String(), "piped password") {
			t.Fatalf("password echoed: %s", out.String())
		}
		var m map[string]any
		_ = json.Unmarshal(out.Bytes(), &m)
		return m, out.String()
	}
	ensure := []string{"ensure", "--email", "demo@sigops.local", "--tier", "team", "--wallet", "100", "--password-file", pwFile}
	m, _ := run("", ensure...)
	if m["result"] != "created" || m["tier"] != "team" || m["strategyLabBalanceUsd"] != "100.00" {
		t.Fatalf("first ensure %v", m)
	}
	m, _ = run("", ensure...)
	if m["result"] != "unchanged" || m["strategyLabBalanceUsd"] != "100.00" {
		t.Fatalf("second ensure %v", m)
	}
	_, out := run("", "credit-wallet", "demo@sigops.local", "2.50")
	if !strings.Contains(out, "102.50") {
		t.Fatalf("credit %q", out)
	}
	// The ledger, newest first: the top-up, then the opening balance, each with the balance
	// after it. Amounts are exact JSON numbers, as in every API of sigops (runtime/result).
	_, out = run("", "wallet-ledger", "--email", "demo@sigops.local")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"kind":"top_up","amount":2.5,"balance":102.5`) ||
		!strings.Contains(lines[1], `"kind":"opening","amount":100,"balance":100`) {
		t.Fatalf("wallet-ledger %q", out)
	}
	_, out = run("", "set-tier", "--email", "DEMO@sigops.local", "--tier", "free")
	if !strings.Contains(out, "team -> free") {
		t.Fatalf("set-tier %q", out)
	}
	run("piped password 2\n", "set-password", "--email", "demo@sigops.local", "--password-stdin")
	m, _ = run("piped password 3\n", "create", "--email", "new@sigops.local")
	if m["result"] != "created" || m["tier"] != "free" {
		t.Fatalf("create %v", m)
	}
	var out2 bytes.Buffer
	if err := users(append([]string{"create", "--email", "new@sigops.local"}, redis...), strings.NewReader("piped password 4\n"), &out2); err == nil {
		t.Fatal("duplicate create accepted")
	}
	// The kill switch, as the operator turns it.
	if _, out = run("", "suspend-apps", "new@sigops.local"); !strings.Contains(out, "suspended since") {
		t.Fatalf("suspend-apps %q", out)
	}
	if _, out = run("", "lift-apps", "--email", "new@sigops.local"); !strings.Contains(out, "may trade again") {
		t.Fatalf("lift-apps %q", out)
	}
}

// Flags and positional arguments mix; the Redis flags are those of every daemon, and
// contradictory ones are refused before anything is written.
func TestUsersArguments(t *testing.T) {
	c, err := parseUsers("set-tier", []string{"demo@sigops.local", "--redis-addr", "r:6379", "pro", "--redis-db=2"})
	if err != nil || c.email != "demo@sigops.local" || c.tier != "pro" || c.redis.Addr != "r:6379" || c.redis.DB != 2 {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = parseUsers("credit-wallet", []string{"--email", "demo@sigops.local", "2.50", "--redis-sentinel-addrs=s1:26379,s2:26379", "--redis-master-name=m"})
	if err != nil || c.amount != "2.50" || len(c.redis.SentinelAddrs) != 2 || c.redis.MasterName != "m" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := parseUsers("show", nil); err == nil || err.Error() != "--email is required" {
		t.Fatalf("no email: %v", err)
	}
	err = users([]string{"show", "demo@sigops.local", "--redis-cluster-addrs=127.0.0.1:1", "--redis-db=1"}, strings.NewReader(""), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "database 0 only") {
		t.Fatalf("contradictory Redis flags: %v", err)
	}
}
