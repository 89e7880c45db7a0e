package auth

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store/storetest"
)

type fixture struct {
	rdb      redis.UniversalClient
	clk      *testkit.Clock
	users    *Users
	oauth    *OAuth
	sessions *Sessions
	keys     *Keyring
	issuer   *Issuer
	verifier *Verifier
}

const (
	testIssuer = "https://auth.test"
	testAPI    = "https://auth.test/api"
	testMCP    = "https://mcp.test/mcp"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-test-key")

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureOn(t, nil)
}

// newFixtureOn is newFixture with db (nil: none) as the record of accounts, wallets,
// registrations and consents.
func newFixtureOn(t testing.TB, db *pgxpool.Pool) *fixture {
	t.Helper()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	keys, err := NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{rdb: rdb, clk: clk, keys: keys}
	f.users = NewUsers(rdb, UsersOptions{KDF: TestKDF, Now: clk.Now, DB: db})
	f.oauth = NewOAuth(rdb, OAuthOptions{Now: clk.Now, DB: db})
	f.sessions = NewSessions(rdb, clk.Now)
	f.issuer = NewIssuer(IssuerOptions{Redis: rdb, Keys: keys, Issuer: testIssuer, APIAudience: testAPI, Now: clk.Now})
	f.verifier, err = NewVerifier(VerifierOptions{Redis: rdb, Keys: keys, Issuer: testIssuer,
		Audiences: []string{testAPI, testMCP}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) user(t *testing.T, email, tier string) User {
	t.Helper()
	u, err := f.users.Create(t.Context(), NewUser{Email: email, Password: "correct horse battery", Tier: tier})
	if err != nil {
		t.Fatal(err)
	}
	return u
}
