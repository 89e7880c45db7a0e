package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestUsersCommands(t *testing.T) {
	srv, _ := storetest.New(t)
	redis := []string{"--redis-addr", srv.Addr}
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
}
