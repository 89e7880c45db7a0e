package mcpstdio

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/oauth2"

	"github.com/sigops/sigops/runtime/errs"
)

// oauthClient is the bridge's dynamic client registration (a public client, RFC 7591),
// made once per process.
type oauthClient struct{ id string }

// registeredRedirect is the redirect URI the bridge registers; the authorization uses
// the same URI on the port it listens on (RFC 8252 §7.3).
const registeredRedirect = "http://127.0.0.1/callback"

// pendingAuth is a browser authorization under way: its loopback server waits for the
// redirect until the deadline.
type pendingAuth struct {
	url    string
	cancel context.CancelFunc
}

func (b *Bridge) pendingAuth() *pendingAuth {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending
}

func (b *Bridge) cancelPending() {
	b.mu.Lock()
	p := b.pending
	b.pending = nil
	b.mu.Unlock()
	if p != nil {
		p.cancel()
	}
}

// register registers the bridge as a public client once.
func (b *Bridge) register(ctx context.Context) (string, error) {
	b.mu.Lock()
	oc := b.oauth
	b.mu.Unlock()
	if oc != nil {
		return oc.id, nil
	}
	body, _ := json.Marshal(map[string]any{"client_name": "sigops-mcp", "redirect_uris": []string{registeredRedirect},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.BaseURL+"/api/oauth/register", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return "", errs.Wrap(err, errs.InternalError, "could not reach %s; check --base-url and the network", b.o.BaseURL)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var r struct {
		ClientID    string `json:"client_id"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(raw, &r)
	if resp.StatusCode != http.StatusCreated || r.ClientID == "" {
		if resp.StatusCode == http.StatusTooManyRequests {
			return "", errs.New(errs.RateLimited, "client registration is rate limited; try again later")
		}
		return "", errs.New(errs.InternalError, "client registration refused: %s %s", r.Error, r.Description)
	}
	b.mu.Lock()
	b.oauth = &oauthClient{id: r.ClientID}
	b.mu.Unlock()
	return r.ClientID, nil
}

func randomString() string {
	var p [32]byte
	_, _ = rand.Read(p[:])
	return base64.RawURLEncoding.EncodeToString(p[:])
}

func (b *Bridge) handleAuthenticate(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	scope := req.GetString("scope", "mcp:paper")
	switch scope {
	case "mcp:read", "mcp:paper", "mcp:live":
	default:
		return errorResult(errs.New(errs.InvalidParameter, "scope must be mcp:read, mcp:paper or mcp:live")), nil
	}
	resource, err := b.mcpEndpoint(ctx)
	if err != nil {
		return errorResult(errs.Wrap(err, errs.InternalError, "could not find the hosted MCP server of %s", b.o.BaseURL)), nil
	}
	clientID, err := b.register(ctx)
	if err != nil {
		return b.hostedError(toolAuthenticate, err), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return errorResult(errs.Wrap(err, errs.InternalError, "could not listen on a loopback port for the browser's redirect")), nil
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: "http://127.0.0.1:" + strconv.Itoa(port) + "/callback",
		Scopes: []string{scope}, Endpoint: oauth2.Endpoint{AuthURL: b.o.BaseURL + "/api/oauth/authorize",
			TokenURL: b.o.BaseURL + "/api/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	state, verifier := randomString(), oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	deadline := time.Now().Add(b.o.AuthorizeTimeout)

	b.cancelPending()
	wctx, cancel := context.WithDeadline(context.Background(), deadline)
	p := &pendingAuth{url: authURL, cancel: cancel}
	b.mu.Lock()
	b.pending = p
	b.mu.Unlock()

	cb := &callback{b: b, cfg: cfg, state: state, verifier: verifier, resource: resource, scope: scope, done: cancel}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-wctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		c()
		b.mu.Lock()
		if b.pending == p {
			b.pending = nil
		}
		b.mu.Unlock()
		if errors.Is(wctx.Err(), context.DeadlineExceeded) {
			b.log.Warn("browser sign-in timed out", "after", b.o.AuthorizeTimeout)
		}
	}()
	// stderr is the user's console when the agent does not show the result.
	b.log.Info("open this URL in a browser to sign in to sigops", "url", authURL)
	return structuredResult(map[string]any{"authorizationUrl": authURL, "redirectUri": cfg.RedirectURL, "scope": scope,
		"expiresAt": deadline.UTC().Format(time.RFC3339),
		"message": "Show the user this URL to open in a browser, sign in and approve; then call check_auth. " +
			"The sign-in is awaited for " + b.o.AuthorizeTimeout.String() + "."})
}

// callback is the loopback redirect target of one browser authorization.
type callback struct {
	b                                *Bridge
	cfg                              *oauth2.Config
	state, verifier, resource, scope string
	done                             context.CancelFunc
	used                             atomic.Bool
}

var callbackPage = template.Must(template.New("cb").Parse(`<!doctype html><html><head><meta charset="utf-8">
<title>sigops-mcp</title></head><body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>`))

func (c *callback) page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = callbackPage.Execute(w, map[string]string{"Title": title, "Text": text})
}

// ServeHTTP takes the redirect: it checks state (a redirect this flow did not start is
// refused and the flow goes on waiting), the issuer (RFC 9207), then exchanges the code
// with the PKCE verifier and holds the tokens.
func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(c.state)) != 1 {
		c.page(w, http.StatusBadRequest, "Sign-in refused", "This redirect does not belong to the sign-in sigops-mcp started.")
		return
	}
	if iss := q.Get("iss"); iss != "" && iss != c.b.o.BaseURL {
		c.page(w, http.StatusBadRequest, "Sign-in refused", "The redirect came from another authorization server.")
		return
	}
	if !c.used.CompareAndSwap(false, true) {
		c.page(w, http.StatusBadRequest, "Already signed in", "This sign-in is complete; you can close this window.")
		return
	}
	defer c.done()
	if e := q.Get("error"); e != "" {
		c.b.log.Warn("browser sign-in refused", "error", e)
		c.page(w, http.StatusOK, "Sign-in cancelled", "sigops-mcp was not authorized ("+e+"). You can close this window.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	tok, err := c.cfg.Exchange(c.b.oauthCtx(ctx), q.Get("code"), oauth2.VerifierOption(c.verifier),
		oauth2.SetAuthURLParam("resource", c.resource))
	if err != nil {
		c.b.log.Error("exchange the authorization code", "error", err)
		c.page(w, http.StatusBadGateway, "Sign-in failed", "sigops-mcp could not exchange the authorization. Ask the agent to call authenticate again.")
		return
	}
	scope, _ := tok.Extra("scope").(string)
	if scope == "" {
		scope = c.scope
	}
	c.b.mu.Lock()
	c.b.pending = nil
	c.b.mu.Unlock()
	exp := ""
	if !tok.Expiry.IsZero() {
		exp = tok.Expiry.UTC().Format(time.RFC3339)
	}
	res, _ := c.b.signIn(ctx, token{via: viaBrowse, access: tok.AccessToken, refresh: tok.RefreshToken, expiry: tok.Expiry,
		scope: scope, cfg: c.cfg}, exp)
	if res != nil && res.IsError {
		c.page(w, http.StatusBadGateway, "Sign-in failed", "The sigops MCP server refused the new token. Ask the agent to call check_auth.")
		return
	}
	c.b.log.Info("signed in", "via", viaBrowse, "scope", scope)
	c.page(w, http.StatusOK, "Signed in to sigops", "sigops-mcp is authorized ("+scope+"). You can close this window and return to your agent.")
}
