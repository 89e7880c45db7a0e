package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestUsersCreateAndEmailUniqueness(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u, err := f.users.Create(ctx, NewUser{Name: "Ada", Email: "Ada@Example.COM", Password: "correct horse battery", Tier: "pro",
		Wallet: decimal.RequireFromString("12.5")})
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ada@example.com" || u.Tier.Slug != TierPro || u.Generation != 1 {
		t.Fatalf("user %+v", u)
	}
	if _, err := f.users.Create(ctx, NewUser{Email: "ADA@example.com", Password: "another password"}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("duplicate email: %v", err)
	}
	got, err := f.users.ByEmail(ctx, "  ada@EXAMPLE.com ")
	if err != nil || got.ID != u.ID || !got.StrategyLabBalanceUsd.Equal(decimal.RequireFromString("12.5")) {
		t.Fatalf("ByEmail = %+v, %v", got, err)
	}
	// The stored hash is argon2id, never the password.
	pw, _ := f.rdb.HGet(ctx, store.User(u.ID), fUserPassword).Result()
	if pw == "" || pw[:10] != "$argon2id$" {
		t.Fatalf("stored password %q", pw)
	}
	for _, bad := range []NewUser{
		{Email: "not-an-email", Password: "correct horse battery"},
		{Email: "x@y.z", Password: "short"},
		{Email: "x@y.z", Password: "correct horse battery", Tier: "platinum"},
		{Email: "x@y.z", Password: "correct horse battery", Wallet: decimal.NewFromInt(-1)},
	} {
		if _, err := f.users.Create(ctx, bad); err == nil {
			t.Errorf("Create(%+v) accepted", bad)
		}
	}
}

// The identity Stage reads with a token's live state: the email in canonical form and the
// tier; an account that is gone refuses the token.
func TestStagedIdentity(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u, err := f.users.Create(ctx, NewUser{Name: "Ada", Email: "Ada@Example.COM", Password: "correct horse battery", Tier: "team"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := f.issuer.IssueAPIToken(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.verifier.Parse(api.Token)
	if err != nil {
		t.Fatal(err)
	}
	staged := func(p *Principal) (Identity, error) {
		pipe := f.rdb.Pipeline()
		st := f.verifier.Stage(ctx, pipe, p)
		_, _ = pipe.Exec(ctx)
		return st.Identity()
	}
	id, err := staged(p)
	if err != nil || id.Email != "ada@example.com" || id.Tier.Slug != TierTeam || !id.Tier.Capabilities.AllowMcpServer {
		t.Fatalf("staged identity = %+v, %v", id, err)
	}
	gone := *p
	gone.UserID = "nobody"
	if _, err := staged(&gone); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("missing account: %v", err)
	}
}

func TestUsersAuthenticate(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "bob@example.com", TierFree)
	if got, err := f.users.Authenticate(ctx, "BOB@example.com", "correct horse battery"); err != nil || got.ID != u.ID {
		t.Fatalf("good login: %v", err)
	}
	if _, err := f.users.Authenticate(ctx, "bob@example.com", "wrong password!"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := f.users.Authenticate(ctx, "nobody@example.com", "correct horse battery"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("unknown email: %v", err)
	}
}

func TestSetPasswordInvalidatesEverything(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "carol@example.com", TierPro)
	raw, _, err := f.sessions.Create(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	api, err := f.issuer.IssueAPIToken(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	_, refresh, access := f.authorize(t, u, "mcp:live")
	for _, tok := range []string{api.Token, access} {
		if _, err := f.verifier.Verify(ctx, tok); err != nil {
			t.Fatalf("before: %v", err)
		}
	}
	if err := f.users.SetPassword(ctx, u.ID, "a brand new password"); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(2 * time.Second) // past the verifier's cache
	for _, tok := range []string{api.Token, access} {
		if _, err := f.verifier.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("token after password change: %v", err)
		}
	}
	if _, err := f.sessions.Lookup(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Fatalf("session after password change: %v", err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: refresh, ClientID: "c1"}); !errors.Is(err, ErrGrantRevoked) {
		t.Fatalf("refresh after password change: %v", err)
	}
	if _, err := f.users.Authenticate(ctx, u.Email, "a brand new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.users.Authenticate(ctx, u.Email, "correct horse battery"); err == nil {
		t.Fatal("old password still works")
	}
}

// The account's balance is the wallet package's: an opening balance at creation, then
// whatever runtime/wallet writes.
func TestUserBalanceIsTheWallet(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u, err := f.users.Create(ctx, NewUser{Email: "dan@example.com", Password: "correct horse battery",
		Wallet: decimal.RequireFromString("0.10")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.users.Wallets.Credit(ctx, u.ID, decimal.RequireFromString("0.20")); err != nil {
		t.Fatal(err)
	}
	got, err := f.users.Get(ctx, u.ID)
	if err != nil || !got.StrategyLabBalanceUsd.Equal(decimal.RequireFromString("0.3")) { // 0.10 + 0.20, exact
		t.Fatalf("balance: %v %v", got.StrategyLabBalanceUsd, err)
	}
	if n, err := f.rdb.HExists(ctx, store.User(u.ID), "wallet").Result(); err != nil || n {
		t.Fatalf("the user hash holds a wallet field: %v %v", n, err)
	}
}

func TestEnsureIsIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	n := NewUser{Email: "demo@sigops.local", Name: "Demo", Tier: "team", Wallet: decimal.NewFromInt(100), Password: "demo password 1"}
	u, res, err := f.users.Ensure(ctx, n)
	if err != nil || res != EnsureCreated || u.Tier.Slug != TierTeam {
		t.Fatalf("first: %v %v %+v", res, err, u)
	}
	u2, res, err := f.users.Ensure(ctx, n)
	if err != nil || res != EnsureUnchanged || u2.ID != u.ID || u2.Generation != 1 || !u2.StrategyLabBalanceUsd.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("second: %v %v %+v", res, err, u2)
	}
	n.Password, n.Tier = "demo password 2", "pro"
	u3, res, err := f.users.Ensure(ctx, n)
	if err != nil || res != EnsureUpdated || u3.Tier.Slug != TierPro || u3.Generation != 2 {
		t.Fatalf("third: %v %v %+v", res, err, u3)
	}
	if _, err := f.users.Authenticate(ctx, n.Email, "demo password 2"); err != nil {
		t.Fatal(err)
	}
}

// project puts a bot of owner on account kind into the registry.
func project(t *testing.T, f *fixture, id, owner, kind string) {
	t.Helper()
	b := registry.Bot{ID: id, Namespace: "default", Name: id, Owner: owner, Account: registry.Account{Kind: kind, Name: "acct"},
		Availability: "active", WebhookEnabled: true}
	if err := registry.New(f.rdb).Project(t.Context(), b, registry.HashWebhookID(id+"-hook")); err != nil {
		t.Fatal(err)
	}
}

// liveOwner is a Pro user with two live bots, live-1 and live-2.
func liveOwner(t *testing.T, f *fixture, email string) User {
	u := f.user(t, email, TierPro)
	project(t, f, "live-1", u.Email, registry.AccountExchange)
	project(t, f, "live-2", u.Email, registry.AccountExchange)
	return u
}

func TestTierDowngradePausesLiveBotsAndUpgradeResumes(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := liveOwner(t, f, "erin@example.com")
	project(t, f, "paper-1", u.Email, registry.AccountPaper)
	project(t, f, "other-live", "someone@else.com", registry.AccountExchange)
	// live-2 carries a Risk pause before the downgrade.
	reg := registry.New(f.rdb)
	riskPause := registry.Pause{Reason: registry.PauseRisk, Until: time.Now().Add(time.Hour)}
	if ok, err := reg.Pause(ctx, "live-2", riskPause, time.Now()); !ok || err != nil {
		t.Fatal(ok, err)
	}

	sub := f.rdb.Subscribe(ctx, store.BotEvents())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	ch, err := f.users.SetTier(ctx, u.ID, TierFree)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Paused) != 2 || ch.From.Slug != TierPro || ch.To.Slug != TierFree {
		t.Fatalf("change %+v", ch)
	}
	pause := func(id string) (string, string) {
		v, _ := f.rdb.HMGet(ctx, store.Bot(id), registry.FieldPause, registry.FieldPauseUntil).Result()
		a, _ := v[0].(string)
		b, _ := v[1].(string)
		return a, b
	}
	for _, id := range []string{"live-1", "live-2"} {
		if r, until := pause(id); r != registry.PauseDowngrade || until != "0" {
			t.Errorf("%s: pause %q until %q", id, r, until)
		}
	}
	for _, id := range []string{"paper-1", "other-live"} {
		if r, _ := pause(id); r != "" {
			t.Errorf("%s paused: %q", id, r)
		}
	}
	got := map[string]bool{}
	for range 2 {
		m, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[m.Payload] = true
	}
	if !got["live-1"] || !got["live-2"] {
		t.Fatalf("published %v", got)
	}
	// Idempotent: a second downgrade changes and publishes nothing.
	if ch, err := f.users.SetTier(ctx, u.ID, TierFree); err != nil || len(ch.Paused) != 0 {
		t.Fatalf("second downgrade %+v %v", ch, err)
	}

	// An Errors pause set meanwhile on live-1 (its Downgrade lifted by hand, then five
	// errors) is not ours to lift.
	if ok, err := reg.Resume(ctx, "live-1", registry.Pause{Reason: registry.PauseDowngrade}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := reg.Pause(ctx, "live-1", registry.Pause{Reason: registry.PauseErrors}, time.Now()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for range 2 {
		if m, err := sub.ReceiveMessage(ctx); err != nil || m.Payload != "live-1" {
			t.Fatalf("live-1 events: %v %v", m, err)
		}
	}
	ch, err = f.users.SetTier(ctx, u.ID, TierTeam)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Resumed) != 1 || ch.Resumed[0] != "live-2" {
		t.Fatalf("resumed %v", ch.Resumed)
	}
	if r, _ := pause("live-2"); r != "" {
		t.Errorf("live-2 still paused: %q", r)
	}
	if r, _ := pause("live-1"); r != "Errors" {
		t.Errorf("live-1 pause %q: only Downgrade pauses are lifted", r)
	}
	m, err := sub.ReceiveMessage(ctx)
	if err != nil || m.Payload != "live-2" {
		t.Fatalf("resume publish %v %v", m, err)
	}
}

// A downgrade cut short by a crash (live-1 paused, live-2 not yet) is finished by running
// it again, which changes only what is left.
func TestTierDowngradeRepeatedAfterACrash(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := liveOwner(t, f, "frank@example.com")
	if err := f.rdb.HSet(ctx, store.User(u.ID), fUserTier, TierFree).Err(); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(f.rdb)
	if ok, err := reg.Pause(ctx, "live-1", registry.Pause{Reason: registry.PauseDowngrade}, time.Now()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	ch, err := f.users.SetTier(ctx, u.ID, TierFree)
	if err != nil || len(ch.Paused) != 1 || ch.Paused[0] != "live-2" {
		t.Fatalf("repeated downgrade %+v %v", ch, err)
	}
	for _, id := range []string{"live-1", "live-2"} {
		if p, err := reg.ReadPause(ctx, id, time.Now()); err != nil || p == nil || p.Reason != registry.PauseDowngrade {
			t.Errorf("%s: pause %+v %v", id, p, err)
		}
	}
}

func TestSessions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	u := f.user(t, "fay@example.com", TierFree)
	raw, s, err := f.sessions.Create(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 43 || s.CSRF == "" {
		t.Fatal("weak session values")
	}
	// Only the hash is a key; the raw value appears nowhere in Redis.
	keys, _ := storetest.Keys(ctx, f.rdb, "*")
	for _, k := range keys {
		if v, _ := f.rdb.Dump(ctx, k).Result(); strings.Contains(k+v, raw) {
			t.Fatalf("raw cookie stored under %s", k)
		}
	}
	ttl0, _ := f.rdb.TTL(ctx, store.Session(s.Hash)).Result()
	if ttl0 < SessionIdle-time.Minute || ttl0 > SessionIdle {
		t.Fatalf("TTL %v", ttl0)
	}
	f.clk.Advance(3 * 24 * time.Hour)
	got, err := f.sessions.Lookup(ctx, raw)
	if err != nil || got.UserID != u.ID {
		t.Fatalf("lookup %v", err)
	}
	if !got.ExpiresAt.Equal(f.clk.Now().Add(SessionIdle)) {
		t.Fatalf("not slid: %v", got.ExpiresAt)
	}
	if _, err := f.sessions.Lookup(ctx, raw+"x"); !errors.Is(err, ErrNoSession) {
		t.Fatal("forged cookie accepted")
	}
	if err := f.sessions.Destroy(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Lookup(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Fatal("destroyed session lives")
	}
	// Absolute cap.
	raw, _, _ = f.sessions.Create(ctx, u)
	for range 6 {
		f.clk.Advance(6 * 24 * time.Hour)
		if _, err := f.sessions.Lookup(ctx, raw); err != nil {
			break
		}
	}
	if _, err := f.sessions.Lookup(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Fatal("session outlived its 30-day cap")
	}
}

// A creation interrupted before the email claim leaves an account nobody reaches and nobody
// lists; the email stays free. One that loses the email to another account removes itself.
func TestUserCreationInterruptedOrRaced(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	crash := &storetest.Crash{}
	f.rdb.AddHook(crash)
	crash.At(func(c redis.Cmder) bool {
		return c.Name() == "set" && slices.Contains(c.Args(), any(store.UserByEmail("eve@example.com")))
	})
	if _, err := f.users.Create(ctx, NewUser{Email: "eve@example.com", Password: "correct horse battery"}); !errors.Is(err, storetest.ErrCrash) {
		t.Fatalf("create: %v", err)
	}
	crash.At(nil)
	if _, err := f.users.ByEmail(ctx, "eve@example.com"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("half-created account reachable: %v", err)
	}
	if all, err := f.users.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("List = %v, %v", all, err)
	}
	u := f.user(t, "eve@example.com", TierFree)
	if all, err := f.users.List(ctx); err != nil || len(all) != 1 || all[0].ID != u.ID {
		t.Fatalf("List = %v, %v", all, err)
	}
	if _, err := f.users.Create(ctx, NewUser{Email: "EVE@example.com", Password: "another password"}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("duplicate: %v", err)
	}
	// The loser is gone; only the crashed creation's unreachable account remains besides u.
	if ids := f.rdb.SMembers(ctx, store.Users()).Val(); len(ids) != 2 || !slices.Contains(ids, u.ID) {
		t.Fatalf("users set %v", ids)
	}
}
