package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

func testGate(f *fixture) *LoginGate {
	return NewLoginGate(f.rdb, Limit{Kind: "login-account", Max: 3, Window: time.Minute},
		Limit{Kind: "login-ip", Max: 5, Window: 2 * time.Minute})
}

// wantRefused checks a refusal of Begin: RATE_LIMITED, the given cause, a retry within
// bound, and the lockout wording.
func wantRefused(t *testing.T, err, cause error, bound time.Duration) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Code != errs.RateLimited || !errors.Is(err, cause) {
		t.Fatalf("want RATE_LIMITED caused by %v, got %v", cause, err)
	}
	if e.RetryAfter <= 0 || e.RetryAfter > bound {
		t.Fatalf("retry %v, want within (0, %v]", e.RetryAfter, bound)
	}
	if !strings.HasPrefix(e.Message, "Too many failed sign-in attempts. Try again in ") {
		t.Fatalf("message %q", e.Message)
	}
}

func (f *fixture) counter(t *testing.T, kind, subject string) int {
	t.Helper()
	n, err := f.rdb.Get(t.Context(), store.LoginRateLimit(kind, subject)).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return n
}

func TestLoginGateAccountLimitCountsBeforeTheCheck(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	// Attempts are counted at Begin, before any password check: three admitted attempts use
	// up the account whatever their outcome, and the spellings of one email share a counter.
	for i, email := range []string{"Victim@Example.com", " victim@example.com", "VICTIM@EXAMPLE.COM "} {
		tk, err := g.Begin(ctx, email, "198.51.100.1")
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if n := f.counter(t, "login-account", LoginAccount("victim@example.com")); n != i+1 {
			t.Fatalf("after Begin %d the account counter is %d", i, n)
		}
		if err := g.Failed(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	_, err := g.Begin(ctx, "victim@example.com", "198.51.100.2")
	wantRefused(t, err, ErrLoginAccountLimit, time.Minute)
	ttl := f.rdb.PTTL(ctx, store.LoginRateLimit("login-account", LoginAccount("victim@example.com"))).Val()
	if ttl <= 0 || ttl > time.Minute {
		t.Fatalf("account window TTL %v", ttl)
	}
	// A refusal counts nowhere: the second address spent nothing.
	if n := f.counter(t, "login-ip", "198.51.100.2"); n != 0 {
		t.Fatalf("refused attempt counted against its address: %d", n)
	}
	// Another account is not affected.
	if _, err := g.Begin(ctx, "other@example.com", "198.51.100.2"); err != nil {
		t.Fatalf("other account: %v", err)
	}
}

func TestLoginGateAddressLimit(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	const ip = "2001:db8:1:2::/64"
	for i := range 5 {
		tk, err := g.Begin(ctx, "spray"+string(rune('a'+i))+"@example.com", ip)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		_ = g.Failed(ctx, tk)
	}
	_, err := g.Begin(ctx, "fresh@example.com", ip)
	wantRefused(t, err, ErrLoginAddressLimit, 2*time.Minute)
	if n := f.counter(t, "login-account", LoginAccount("fresh@example.com")); n != 0 {
		t.Fatalf("attempt refused by the address limit counted against the account: %d", n)
	}
}

func TestLoginGateSuccessResetsAccountNotAddress(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	const ip = "203.0.113.7"
	acct := LoginAccount("user@example.com")
	for range 2 {
		tk, _ := g.Begin(ctx, "user@example.com", ip)
		_ = g.Failed(ctx, tk)
	}
	tk, err := g.Begin(ctx, "user@example.com", ip)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Succeeded(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if n := f.rdb.Exists(ctx, store.LoginRateLimit("login-account", acct)).Val(); n != 0 {
		t.Fatal("success did not clear the account's counter")
	}
	// The address keeps its two failures; only the successful attempt was given back.
	if n := f.counter(t, "login-ip", ip); n != 2 {
		t.Fatalf("address counter after a success: %d, want the 2 failures", n)
	}
	if n := f.rdb.Exists(ctx, store.LoginLock(acct)).Val(); n != 0 {
		t.Fatal("lock not released")
	}
	// The account has its full budget again.
	for i := range 3 {
		tk, err := g.Begin(ctx, "user@example.com", "203.0.113.8")
		if err != nil {
			t.Fatalf("attempt %d after the reset: %v", i, err)
		}
		_ = g.Failed(ctx, tk)
	}
}

func TestLoginGateOneCheckPerAccount(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	held, err := g.Begin(ctx, "lock@example.com", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Begin(ctx, "LOCK@example.com", "192.0.2.2")
	wantRefused(t, err, ErrLoginBusy, LoginLockTTL)
	if n := f.counter(t, "login-account", LoginAccount("lock@example.com")); n != 1 {
		t.Fatalf("a refused concurrent attempt was counted: %d", n)
	}
	// Another account goes on meanwhile.
	if _, err := g.Begin(ctx, "free@example.com", "192.0.2.2"); err != nil {
		t.Fatal(err)
	}
	// A stale ticket (another attempt's token) cannot release the lock.
	stale := held
	stale.token = "not-the-holder"
	_ = g.Failed(ctx, stale)
	if _, err := g.Begin(ctx, "lock@example.com", "192.0.2.2"); !errors.Is(err, ErrLoginBusy) {
		t.Fatalf("lock released by another attempt's ticket: %v", err)
	}
	if err := g.Failed(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Begin(ctx, "lock@example.com", "192.0.2.2"); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

func TestLoginGateVoidGivesBothCountsBack(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	tk, err := g.Begin(ctx, "void@example.com", "192.0.2.9")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Void(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if a, i := f.counter(t, "login-account", LoginAccount("void@example.com")), f.counter(t, "login-ip", "192.0.2.9"); a != 0 || i != 0 {
		t.Fatalf("after Void: account %d, address %d", a, i)
	}
}

// TestLoginGateConcurrentBegin fires many Begins for one account at once against Redis:
// exactly one holds the lock at a time, and no more than the account's limit are ever
// admitted.
func TestLoginGateConcurrentBegin(t *testing.T) {
	f := newFixture(t)
	g := testGate(f)
	ctx := t.Context()
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 200 {
		wg.Go(func() {
			<-start
			tk, err := g.Begin(ctx, "target@example.com", "192.0.2.50")
			if err != nil {
				refused.Add(1)
				return
			}
			admitted.Add(1)
			time.Sleep(time.Millisecond) // a password check
			_ = g.Failed(ctx, tk)
		})
	}
	close(start)
	wg.Wait()
	if a := admitted.Load(); a < 1 || a > 3 {
		t.Fatalf("admitted %d attempts, want 1 to 3 (the account's limit)", a)
	}
	if admitted.Load()+refused.Load() != 200 {
		t.Fatal("lost attempts")
	}
}

// TestLoginKeysShareAHashTag: the gate's script touches three keys, which Redis Cluster
// accepts only when their hash tags (the first non-empty {...}) are equal.
func TestLoginKeysShareAHashTag(t *testing.T) {
	tag := func(k string) string {
		i := strings.IndexByte(k, '{')
		j := strings.IndexByte(k[i+1:], '}')
		if i < 0 || j <= 0 {
			return k
		}
		return k[i+1 : i+1+j]
	}
	acct := LoginAccount("x@example.com")
	keys := []string{store.LoginRateLimit("login-account", acct), store.LoginRateLimit("login-ip", "2001:db8::/64"), store.LoginLock(acct)}
	for _, k := range keys {
		if tag(k) != "login" {
			t.Errorf("%s has hash tag %q", k, tag(k))
		}
	}
	for _, k := range []string{store.RegisterRateLimit("register-ip", "1.2.3.4"), store.RegisterRateLimit("register-global", "all")} {
		if tag(k) != "register" {
			t.Errorf("%s has hash tag %q", k, tag(k))
		}
	}
}

func TestHasherQueueIsBounded(t *testing.T) {
	ctx := context.Background()
	h := newHasher(TestKDF, 1, 1)
	enc, err := h.Hash(ctx, "s3cret passphrase")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.acquire(ctx); err != nil { // every slot busy
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, _, err := h.Verify(ctx, "s3cret passphrase", enc)
		waited <- err
	}()
	testkit.EventuallyTrue(t, 10*time.Second, "the verification queued for a slot", func() bool { return h.waiting.Load() == 1 })
	// Slot busy and queue full: refused at once, nothing computed.
	before := h.verifications.Load()
	t0 := time.Now()
	_, _, err = h.Verify(ctx, "s3cret passphrase", enc)
	if !errors.Is(err, ErrHashBusy) || errs.CodeOf(err) != errs.RateLimited || ErrHashBusy.RetryAfter <= 0 {
		t.Fatalf("full queue: %v", err)
	}
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Fatalf("refusal took %v", d)
	}
	if h.verifications.Load() != before {
		t.Fatal("a refused verification was counted")
	}
	// A waiter that gives up leaves the queue.
	cctx, cancel := context.WithCancel(ctx)
	h.release()
	if err := <-waited; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if h.verifications.Load() != before+1 {
		t.Fatal("the waiter's verification was not counted")
	}
	if err := h.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- h.acquire(cctx) }()
	testkit.EventuallyTrue(t, 10*time.Second, "the acquire queued for a slot", func() bool { return h.waiting.Load() == 1 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if n := h.waiting.Load(); n != 0 {
		t.Fatalf("waiting %d after the waiter left", n)
	}
	h.release()
}

// TestAuthenticateReportsBusyNotInvalid: when no slot can be had, Authenticate says so
// (nothing was checked), for existing and unknown emails alike.
func TestAuthenticateReportsBusyNotInvalid(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.user(t, "busy@example.com", TierFree)
	u := NewUsers(f.rdb, UsersOptions{KDF: TestKDF, HashConcurrency: 1, HashQueue: -1, Now: f.clk.Now})
	if err := u.h.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"busy@example.com", "nobody@example.com"} {
		if _, err := u.Authenticate(ctx, email, "correct horse battery"); !errors.Is(err, ErrHashBusy) {
			t.Fatalf("%s: %v", email, err)
		}
	}
	if n := u.Verifications(); n != 0 {
		t.Fatalf("%d verifications while busy", n)
	}
	u.h.release()
	if _, err := u.Authenticate(ctx, "busy@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if n := u.Verifications(); n != 1 {
		t.Fatalf("verifications %d, want 1", n)
	}
}
