package credentials_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestConnectionsStore(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	s := credentials.NewConnections(rdb)
	r := ring(t, key1)
	blob, _ := r.SealCredentials(creds, credentials.AAD("uid-1"))

	if _, err := s.Get(ctx, "uid-1"); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("get before save: %v", err)
	}
	c := credentials.Connection{UID: "uid-1", Namespace: "ns", Name: "bn", Exchange: "binance", Owner: "A@X.io",
		Testnet: true, SpotEndpoint: "http://127.0.0.1:1", FuturesEndpoint: "http://127.0.0.1:2",
		Ready: true, Reason: "Validated", Permissions: []string{"futures", "read", "spot"}, ValidatedAt: 1700000000000,
		Sealed: blob, KeyID: r.CurrentKeyID()}
	if err := s.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.Owner = "a@x.io"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if !got.CanTrade(exchange.Futures) || !got.CanTrade(exchange.Spot) {
		t.Fatal("CanTrade")
	}
	if ep := got.Endpoints(); ep != (exchange.Endpoints{Spot: c.SpotEndpoint, Futures: c.FuturesEndpoint, Testnet: true}) {
		t.Fatalf("endpoints = %+v", ep)
	}

	// Refused: the hash stays with ready=0 and the reason, the credentials go.
	c.Ready, c.Reason, c.Permissions = false, "WithdrawalPermissionEnabled", []string{"read", "spot", "withdraw"}
	if err := s.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, "uid-1")
	if got.Ready || got.Reason != "WithdrawalPermissionEnabled" || got.Sealed != "" || got.KeyID != "" || got.CanTrade(exchange.Futures) {
		t.Fatalf("refused = %+v", got)
	}
	fields, _ := rdb.HKeys(ctx, store.ExchangeConnection("uid-1")).Result()
	for _, f := range fields {
		if f == "credentials" || f == "keyId" {
			t.Fatalf("refused connection keeps %s", f)
		}
	}

	// Ready without a blob is stored as not ready.
	c.Ready, c.Sealed = true, ""
	_ = s.Save(ctx, c)
	if got, _ = s.Get(ctx, "uid-1"); got.Ready {
		t.Fatal("ready without credentials")
	}

	if err := s.Delete(ctx, "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "uid-1"); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := s.Save(ctx, credentials.Connection{}); err == nil {
		t.Fatal("saved without a UID")
	}
}
