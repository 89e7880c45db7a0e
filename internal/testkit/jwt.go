package testkit

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// ForgeJWT signs any claims with a key, method and key ID of the test's choosing, for the
// rows that check a verifier refuses what it must (wrong algorithm, unknown kid, expired).
// An empty kid leaves the header without one.
func ForgeJWT(t testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
