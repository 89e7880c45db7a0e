package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/sigops/sigops/runtime/errs"
)

// How a token was obtained; it decides what logout revokes and whether a 401 can be
// answered by a refresh.
const (
	viaLogin  = "login"     // POST /api/auth/login: revoked at /api/auth/logout on logout
	viaSet    = "set_token" // copied from the dashboard: forgotten only, the user may use it elsewhere
	viaBrowse = "authenticate"
)

// token is the credential the bridge holds, in memory only.
type token struct {
	via     string
	access  string
	refresh string    // OAuth only
	expiry  time.Time // OAuth access token's expiry (zero: unknown)
	scope   string
	cfg     *oauth2.Config // OAuth only: refreshes and revokes
}

// refreshMargin refreshes an OAuth access token this long before it expires, so that a
// call does not start with a token that lapses on the way.
const refreshMargin = 30 * time.Second

func (b *Bridge) current() token {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tok
}

// setToken holds t (replacing any other) and resets the hosted link to it.
func (b *Bridge) setToken(t token) {
	b.mu.Lock()
	b.tok = t
	if b.hosted != nil {
		b.hosted.initialized = false
	}
	b.mu.Unlock()
}

// forget drops the tokens and returns what was held.
func (b *Bridge) forget() token {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tok
	b.tok = token{}
	return t
}

var errNoToken = errs.New(errs.Unauthorized, "sigops-mcp holds no token: call login (email and password), authenticate "+
	"(sign in in the browser) or set_token (a token from the dashboard) first")

// accessToken is the token to send, refreshed first when an OAuth token is about to expire.
func (b *Bridge) accessToken(ctx context.Context) (string, error) {
	t := b.current()
	if t.access == "" {
		return "", errNoToken
	}
	if t.refresh != "" && !t.expiry.IsZero() && time.Until(t.expiry) < refreshMargin {
		return b.refresh(ctx, t.access)
	}
	return t.access, nil
}

// refresh trades the refresh token for a new access token (refresh_token grant) unless
// another call already replaced stale. Refresh tokens rotate: the new one is kept. A refused
// refresh forgets the tokens: the user must sign in again.
func (b *Bridge) refresh(ctx context.Context, stale string) (string, error) {
	b.refreshMu.Lock()
	defer b.refreshMu.Unlock()
	t := b.current()
	if t.access == "" {
		return "", errNoToken
	}
	if t.access != stale {
		return t.access, nil
	}
	if t.refresh == "" || t.cfg == nil {
		b.forget()
		return "", errs.New(errs.Unauthorized, "the token was refused (expired or revoked) and has been forgotten: "+
			"call login, authenticate or set_token")
	}
	nt, err := t.cfg.TokenSource(b.oauthCtx(ctx), &oauth2.Token{RefreshToken: t.refresh}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			b.log.Warn("refresh refused; tokens forgotten", "error", re.ErrorCode)
			b.forget()
			return "", errs.New(errs.Unauthorized, "the authorization expired or was revoked and has been forgotten: "+
				"call authenticate to sign in again")
		}
		return "", errs.Wrap(err, errs.InternalError, "could not reach %s to refresh the token; try again", b.o.BaseURL)
	}
	t.access, t.expiry = nt.AccessToken, nt.Expiry
	if nt.RefreshToken != "" {
		t.refresh = nt.RefreshToken
	}
	b.mu.Lock()
	if b.tok.access == stale {
		b.tok = t
	}
	b.mu.Unlock()
	b.log.Info("access token refreshed", "expires", t.expiry.Format(time.RFC3339))
	return t.access, nil
}

func (b *Bridge) oauthCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, b.http)
}

// authFailure is authd's failure body.
type authFailure struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// login posts the credentials to /api/auth/login and returns the bearer JWT and its expiry.
func (b *Bridge) login(ctx context.Context, email, password string) (string, string, error) {
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.BaseURL+"/api/auth/login", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return "", "", errs.Wrap(err, errs.InternalError, "could not reach %s; check --base-url and the network", b.o.BaseURL)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", "", authdRefusal(resp, raw)
	}
	var ok struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expiresAt"`
	}
	if err := json.Unmarshal(raw, &ok); err != nil || ok.Token == "" {
		return "", "", errs.New(errs.InternalError, "%s answered the login without a token", b.o.BaseURL)
	}
	return ok.Token, ok.ExpiresAt, nil
}

// authdRefusal is authd's non-2xx answer as an *errs.Error with authd's code and message.
func authdRefusal(resp *http.Response, raw []byte) *errs.Error {
	var f authFailure
	_ = json.Unmarshal(raw, &f)
	code := errs.Code(f.Code)
	if code == "" {
		code = errs.InternalError
		if resp.StatusCode == http.StatusUnauthorized {
			code = errs.Unauthorized
		}
	}
	msg := f.Error
	if msg == "" {
		msg = "HTTP " + resp.Status
	}
	e := errs.New(code, "%s", msg)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		e.Details = map[string]any{"retryAfterSeconds": ra}
	}
	return e
}

// revoke ends what logout can end on the server: the OAuth refresh token (RFC 7009, which
// also ends its access tokens) or the bearer JWT login issued.
func (b *Bridge) revoke(ctx context.Context, t token) error {
	var req *http.Request
	var err error
	switch {
	case t.via == viaBrowse && t.refresh != "" && t.cfg != nil:
		form := url.Values{"token": {t.refresh}, "token_type_hint": {"refresh_token"}, "client_id": {t.cfg.ClientID}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, b.o.BaseURL+"/api/oauth/revoke", strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	case t.via == viaLogin:
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, b.o.BaseURL+"/api/auth/logout", nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+t.access)
		}
	default:
		return nil
	}
	if err != nil {
		return err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// 401 on /api/auth/logout: the token is already expired or revoked, which is the goal.
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusUnauthorized {
		return errors.New("revoke: HTTP " + resp.Status)
	}
	return nil
}
