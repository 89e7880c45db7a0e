package store

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// --redis-sentinel-password-file: given back by Args, refused without Sentinels, and read
// (trailing newline dropped) into the failover client's Sentinel connections only.
func TestSentinelPasswordFile(t *testing.T) {
	o := parse(t, "--redis-sentinel-addrs=s1:26379,s2:26379", "--redis-master-name=m",
		"--redis-password-file=/run/pw", "--redis-sentinel-password-file=/run/sentinel-pw")
	want := Options{SentinelAddrs: []string{"s1:26379", "s2:26379"}, MasterName: "m", PasswordFile: "/run/pw", SentinelPasswordFile: "/run/sentinel-pw"}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("parsed %+v, want %+v", o, want)
	}
	if got := parse(t, o.Args()...); !reflect.DeepEqual(got, o) {
		t.Fatalf("%v parsed back as %+v", o.Args(), got)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := parse(t, "--redis-addr=r:6379", "--redis-sentinel-password-file=/run/pw").Validate()
	if err == nil || !strings.Contains(err.Error(), "needs --redis-sentinel-addrs") {
		t.Fatalf("a Sentinel password without Sentinels: %v", err)
	}

	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("sentinel-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing answers there: Connect fails, but only after reading the file, and the
	// password is in neither the error nor the options' String.
	o = Options{SentinelAddrs: []string{"127.0.0.1:1"}, MasterName: "m", SentinelPasswordFile: pw}
	_, err = Connect(context.Background(), o)
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(o.String(), "s3cret") {
		t.Fatalf("Connect: %v (options %s)", err, o)
	}
	o.SentinelPasswordFile = filepath.Join(dir, "missing")
	if _, err := Connect(context.Background(), o); err == nil || !strings.Contains(err.Error(), "password file") {
		t.Fatalf("missing Sentinel password file: %v", err)
	}
	o.sentinelPassword, _ = readPassword(pw)
	if u := o.universal("redis-pw", nil); u.SentinelPassword != "sentinel-s3cret" || u.Password != "redis-pw" {
		t.Fatalf("universal options: Sentinel password %q, password %q", u.SentinelPassword, u.Password)
	}
}
