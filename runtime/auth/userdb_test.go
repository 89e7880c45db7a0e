package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// With PostgreSQL as the accounts' record, a lost Redis loses no account: after FLUSHALL the
// user signs in with the same password, keeps their generation, tier and email (which
// nobody else can take), and a password change moves the generation past the record's.
// PostgreSQL refusing a change leaves Redis as it was.
func TestAccountsSurviveALostRedis(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	url := dbtest.NewURL(t)
	db := dbtest.Pool(t, url)
	users := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, DB: db})
	usr, err := users.Create(ctx, auth.NewUser{Email: "Ada@Example.com", Name: "Ada", Password: "correct horse battery", Tier: auth.TierPro,
		Wallet: decimal.RequireFromString("12.34")})
	if err != nil {
		t.Fatal(err)
	}
	if err := users.SetPassword(ctx, usr.ID, "a new long password"); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Wallets.Credit(ctx, usr.ID, decimal.RequireFromString("0.66")); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}

	got, err := users.Authenticate(ctx, "ada@example.com", "a new long password")
	if err != nil {
		t.Fatalf("sign in after FLUSHALL: %v", err)
	}
	if got.ID != usr.ID || got.Tier.Slug != auth.TierPro || got.Generation != 2 || !got.CreatedAt.Equal(usr.CreatedAt) ||
		!got.StrategyLabBalanceUsd.Equal(decimal.RequireFromString("13")) { // 12.34 + 0.66
		t.Fatalf("after FLUSHALL: %+v, want %+v at generation 2 with 13 USD", got, usr)
	}
	if _, err := users.Authenticate(ctx, "ada@example.com", "correct horse battery"); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Fatalf("the old password after FLUSHALL: %v", err)
	}
	if _, err := users.Create(ctx, auth.NewUser{Email: "ada@example.com", Password: "someone else entirely"}); !errors.Is(err, auth.ErrEmailTaken) {
		t.Fatalf("an email taken before the loss: %v", err)
	}
	if err := users.SetPassword(ctx, usr.ID, "a third long password"); err != nil {
		t.Fatal(err)
	}
	if got, err := users.Get(ctx, usr.ID); err != nil || got.Generation != 3 {
		t.Fatalf("generation after a change: %+v, %v", got, err)
	}

	// PostgreSQL gone: a change is refused as unavailable and Redis keeps what it had; a
	// sign-in served from Redis still works.
	down := dbtest.Pool(t, url)
	down.Close()
	cut := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, DB: down})
	if _, err := cut.Create(ctx, auth.NewUser{Email: "bob@example.com", Password: "correct horse battery"}); errs.CodeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("create with PostgreSQL down: %v", err)
	}
	if _, err := cut.ByEmail(ctx, "bob@example.com"); !errors.Is(err, auth.ErrNotFound) && errs.CodeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("a refused create left an account: %v", err)
	}
	if err := cut.SetPassword(ctx, usr.ID, "a fourth long password"); errs.CodeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("a password change with PostgreSQL down: %v", err)
	}
	if _, err := cut.Authenticate(ctx, "ada@example.com", "a third long password"); err != nil {
		t.Fatalf("sign in from Redis with PostgreSQL down: %v", err)
	}
}

// Accounts made before the record existed are written to it by Backfill, once.
func TestBackfillCopiesRedisOnlyAccounts(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	old := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF})
	for _, e := range []string{"a@example.com", "b@example.com"} {
		if _, err := old.Create(ctx, auth.NewUser{Email: e, Password: "correct horse battery"}); err != nil {
			t.Fatal(err)
		}
	}
	users := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, DB: db})
	for i, want := range []int{2, 0} { // the second run finds nothing to write
		if n, err := users.Backfill(ctx); err != nil || n != want {
			t.Fatalf("backfill %d: %d accounts written (%v), want %d", i+1, n, err, want)
		}
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Authenticate(ctx, "b@example.com", "correct horse battery"); err != nil {
		t.Fatalf("a backfilled account after FLUSHALL: %v", err)
	}
}

// After a lost Redis every account is copied back at once (Restore), so that the manager's
// tier check of a live bot, which reads Redis alone, finds its owner before the owner signs
// in; an account Redis holds is left as it is, and a marked Redis is not read again.
func TestRestorePutsEveryAccountBack(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	users := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, DB: dbtest.New(t)})
	var ids []string
	for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		usr, err := users.Create(ctx, auth.NewUser{Email: e, Password: "correct horse battery", Tier: auth.TierPro})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, usr.ID)
	}
	if n, err := users.Restore(ctx); err != nil || n != 0 { // nothing was lost: only the mark is written
		t.Fatalf("first restore: %d %v", n, err)
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if _, found, err := auth.OwnerTier(ctx, rdb, "a@example.com"); err != nil || found {
		t.Fatalf("before the restore: found %v %v", found, err)
	}
	// One account is back already (its owner signed in) with a session generation moved on.
	if _, err := users.Get(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, store.User(ids[2]), "gen", "9").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := users.Restore(ctx); err != nil || n != 2 {
		t.Fatalf("restore: %d %v", n, err)
	}
	for _, e := range []string{"a@example.com", "b@example.com"} {
		if tier, found, err := auth.OwnerTier(ctx, rdb, e); err != nil || !found || tier.Slug != auth.TierPro {
			t.Fatalf("%s after the restore: %v %v %v", e, tier.Slug, found, err)
		}
	}
	if usr, err := users.Get(ctx, ids[2]); err != nil || usr.Generation != 9 {
		t.Fatalf("an account Redis held: %+v %v", usr, err)
	}
	if err := rdb.Del(ctx, store.User(ids[0])).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := users.Restore(ctx); err != nil || n != 0 {
		t.Fatalf("a marked Redis is read again: %d %v", n, err)
	}
}
