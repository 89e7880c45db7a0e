package e2e_test

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/webhookd/readapi"
)

// startReadAPI builds the read API served beside the webhook endpoint, with authd's token
// machinery on a key of its own.
func startReadAPI(log *slog.Logger) (*readapi.API, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	keys, err := auth.NewKeyring(key, nil)
	if err != nil {
		return nil, err
	}
	issuer = auth.NewIssuer(auth.IssuerOptions{Redis: rdb, Keys: keys, Issuer: "https://sigops.test", APIAudience: "https://sigops.test/api"})
	verifier, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: "https://sigops.test",
		Audiences: []string{"https://sigops.test/api"}})
	if err != nil {
		return nil, err
	}
	return readapi.New(readapi.Options{Redis: rdb, Verifier: verifier, Sessions: auth.NewSessions(rdb, nil), Users: users,
		Trading: api, Logger: log}), nil
}

// bearerOf is a bearer JWT of the account with email.
func bearerOf(t *testing.T, email string) string {
	t.Helper()
	u, err := users.ByEmail(t.Context(), email)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := issuer.IssueAPIToken(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// read GETs a read API path over HTTPS with a bearer token and decodes the envelope's data
// into v; it returns the status.
func read(t *testing.T, path, token string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hooks.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hooks.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(env.Data, v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}
