package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Token endpoint authentication methods (RFC 7591 §2).
const (
	AuthMethodNone   = "none"
	AuthMethodBasic  = "client_secret_basic"
	AuthMethodPost   = "client_secret_post"
	GrantCode        = "authorization_code"
	GrantRefresh     = "refresh_token"
	ResponseTypeCode = "code"
)

// Registration size limits. A registration is anonymous, so what one may store is kept
// small: real MCP clients register one or two loopback or https callbacks and a short name.
const (
	maxRedirectURIs   = 5
	maxRedirectURILen = 512
	maxClientNameLen  = 64
	// maxMatchedRedirectLen bounds a redirect URI presented at authorize: the registration
	// bound before it was tightened, so clients registered under it still match.
	maxMatchedRedirectLen = 2000
)

// ClientMetadata is an RFC 7591 registration request (the spec's fields).
type ClientMetadata struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// MetadataError is an RFC 7591 §3.2.2 error: invalid_redirect_uri or invalid_client_metadata.
type MetadataError struct {
	Code        string
	Description string
}

func (e *MetadataError) Error() string { return e.Code + ": " + e.Description }

func badMetadata(desc string) error {
	return &MetadataError{Code: "invalid_client_metadata", Description: desc}
}

func badRedirect(desc string) error {
	return &MetadataError{Code: "invalid_redirect_uri", Description: desc}
}

// Client is a registered OAuth client.
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	AuthMethod   string
	GrantTypes   []string
	// Scope is the most the client may ask for (empty: any supported scope).
	Scope     string
	CreatedAt time.Time

	secretHash string
}

// Public reports a client without a secret (token_endpoint_auth_method none).
func (c Client) Public() bool { return c.AuthMethod == AuthMethodNone }

// CheckSecret compares a presented secret with the stored hash in constant time.
func (c Client) CheckSecret(secret string) bool {
	if c.Public() || c.secretHash == "" || secret == "" {
		return false
	}
	return EqualSecret(HashSecret(secret), c.secretHash)
}

// AllowsGrant reports whether the client registered grant type g.
func (c Client) AllowsGrant(g string) bool { return slices.Contains(c.GrantTypes, g) }

// MatchRedirect finds the registered redirect URI that requested matches: exactly, or for a
// loopback http URI (RFC 8252 §7.3) with any port as long as scheme, host, path and query are
// those registered.
func (c Client) MatchRedirect(requested string, allowLocalhost bool) bool {
	if requested == "" || len(requested) > maxMatchedRedirectLen {
		return false
	}
	if slices.Contains(c.RedirectURIs, requested) {
		return true
	}
	req, err := url.Parse(requested)
	if err != nil || req.Fragment != "" || req.User != nil || req.Scheme != "http" || !isLoopbackHost(req.Hostname(), allowLocalhost) {
		return false
	}
	for _, r := range c.RedirectURIs {
		reg, err := url.Parse(r)
		if err != nil || reg.Scheme != "http" || !isLoopbackHost(reg.Hostname(), allowLocalhost) {
			continue
		}
		if reg.Hostname() == req.Hostname() && reg.EscapedPath() == req.EscapedPath() && reg.RawQuery == req.RawQuery {
			return true
		}
	}
	return false
}

// isLoopbackHost accepts the loopback IP literals of RFC 8252 §7.3, and "localhost" only
// when the operator allowed it (RFC 8252 §8.3 calls it NOT RECOMMENDED).
func isLoopbackHost(h string, allowLocalhost bool) bool {
	switch h {
	case "127.0.0.1", "::1":
		return true
	case "localhost":
		return allowLocalhost
	}
	return false
}

// ValidateRedirectURI applies the registration rules: an absolute https URI with a host, or
// http on a loopback IP literal (any port); no fragment, no user info.
func ValidateRedirectURI(raw string, allowLocalhost bool) error {
	if raw == "" || len(raw) > maxRedirectURILen {
		return badRedirect(fmt.Sprintf("redirect URI is empty or longer than %d bytes", maxRedirectURILen))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return badRedirect("redirect URI " + strconv.Quote(raw) + " is not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return badRedirect("redirect URI must not have a fragment")
	}
	if u.User != nil {
		return badRedirect("redirect URI must not carry user info")
	}
	if !plainHost(u.Hostname()) {
		// The host is shown on the consent page and goes into its CSP form-action: only
		// DNS names and IP literals.
		return badRedirect("redirect URI host must be a DNS name or an IP address")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname(), allowLocalhost) {
			if p := u.Port(); p != "" {
				if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
					return badRedirect("redirect URI has a bad port")
				}
			}
			return nil
		}
		if u.Hostname() == "localhost" {
			return badRedirect("use http://127.0.0.1 or http://[::1] for a loopback redirect URI, not localhost (RFC 8252 §8.3)")
		}
		return badRedirect("http redirect URIs are only allowed on the loopback interface (127.0.0.1 or [::1]); use https")
	}
	return badRedirect("redirect URI scheme must be https (or http on loopback)")
}

// plainHost accepts a DNS name (letters, digits, dots, hyphens) or an IP literal.
func plainHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func cleanClientName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if n == "" {
		return "Unnamed client", nil
	}
	if len(n) > maxClientNameLen {
		return "", badMetadata(fmt.Sprintf("client_name is longer than %d bytes", maxClientNameLen))
	}
	for _, r := range n {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "", badMetadata("client_name has control characters")
		}
	}
	return n, nil
}

// Fields of a client hash.
const (
	fClientID        = "id"
	fClientName      = "name"
	fClientRedirects = "redirects"
	fClientMethod    = "method"
	fClientGrants    = "grants"
	fClientScope     = "scope"
	fClientSecret    = "secret"
	fClientCreated   = "createdAt"
)

// RegisterClient validates metadata and stores a new client. For a confidential client it
// returns the secret, which is shown once and stored only as its hash. Errors that are the
// client's fault are *MetadataError.
func (o *OAuth) RegisterClient(ctx context.Context, m ClientMetadata) (Client, string, error) {
	name, err := cleanClientName(m.ClientName)
	if err != nil {
		return Client{}, "", err
	}
	if len(m.RedirectURIs) == 0 {
		return Client{}, "", badRedirect("redirect_uris is required")
	}
	if len(m.RedirectURIs) > maxRedirectURIs {
		return Client{}, "", badRedirect(fmt.Sprintf("at most %d redirect URIs", maxRedirectURIs))
	}
	for _, r := range m.RedirectURIs {
		if err := ValidateRedirectURI(r, o.AllowLocalhostRedirects); err != nil {
			return Client{}, "", err
		}
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = AuthMethodBasic // RFC 7591 §2 default
	}
	if method != AuthMethodNone && method != AuthMethodBasic && method != AuthMethodPost {
		return Client{}, "", badMetadata("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{GrantCode, GrantRefresh}
	}
	for _, g := range grants {
		if g != GrantCode && g != GrantRefresh {
			return Client{}, "", badMetadata("grant_types may only hold authorization_code and refresh_token")
		}
	}
	if !slices.Contains(grants, GrantCode) {
		return Client{}, "", badMetadata("grant_types must include authorization_code")
	}
	for _, rt := range m.ResponseTypes {
		if rt != ResponseTypeCode {
			return Client{}, "", badMetadata("response_types may only hold code")
		}
	}
	scope, err := NormalizeScope(m.Scope)
	if err != nil {
		return Client{}, "", badMetadata("scope: " + err.Error())
	}
	c := Client{ID: RandomToken(16), Name: name, RedirectURIs: m.RedirectURIs, AuthMethod: method,
		GrantTypes: slices.Compact(slices.Sorted(slices.Values(grants))), Scope: scope, CreatedAt: o.now().UTC()}
	secret := ""
	if method != AuthMethodNone {
		secret = RandomToken(32)
		c.secretHash = HashSecret(secret)
	}
	if o.record != nil {
		// The registration's record first: one PostgreSQL refused is registered nowhere.
		if err := o.record.insertClient(ctx, c, c.CreatedAt.Add(UnusedClientTTL)); err != nil {
			return Client{}, "", err
		}
		// Registrations are anonymous: each one clears those long past use.
		_ = o.record.purgeClients(ctx, c.CreatedAt)
	}
	if err := o.cacheClient(ctx, c, UnusedClientTTL); err != nil {
		return Client{}, "", err
	}
	return c, secret, nil
}

// cacheClient writes a registration's Redis copy, living ttl.
func (o *OAuth) cacheClient(ctx context.Context, c Client, ttl time.Duration) error {
	redirects, _ := json.Marshal(c.RedirectURIs)
	key := store.OAuthClient(c.ID)
	_, err := o.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, fClientID, c.ID, fClientName, c.Name, fClientRedirects, redirects, fClientMethod, c.AuthMethod,
			fClientGrants, strings.Join(c.GrantTypes, " "), fClientScope, c.Scope, fClientSecret, c.secretHash,
			fClientCreated, strconv.FormatInt(c.CreatedAt.UnixMilli(), 10))
		p.Expire(ctx, key, ttl)
		return nil
	})
	return err
}

// UnusedClientTTL is how long a registration lives until its first token: registration is
// anonymous, so clients that never complete a flow (abandoned, or an attacker's filler) go
// away after a day instead of a month. The first token grant (CreateAuthorization) moves
// the client to clientIdle, which every later grant slides.
const UnusedClientTTL = 24 * time.Hour

// clientIdle is how long a client that has obtained a token lives without another grant;
// every token grant slides it. It equals the refresh token lifetime, so a client outlives
// every token it holds.
const clientIdle = RefreshTokenLifetime

// GetClient reads a registered client.
func (o *OAuth) GetClient(ctx context.Context, id string) (Client, error) {
	if id == "" || len(id) > 64 {
		return Client{}, ErrNotFound
	}
	m, err := o.rdb.HGetAll(ctx, store.OAuthClient(id)).Result()
	if err != nil {
		return Client{}, err
	}
	if m[fClientID] == "" {
		return o.recallClient(ctx, id)
	}
	c := Client{ID: m[fClientID], Name: m[fClientName], AuthMethod: m[fClientMethod],
		GrantTypes: strings.Fields(m[fClientGrants]), Scope: m[fClientScope], secretHash: m[fClientSecret]}
	if err := json.Unmarshal([]byte(m[fClientRedirects]), &c.RedirectURIs); err != nil {
		return Client{}, errors.New("corrupt client record")
	}
	ms, _ := strconv.ParseInt(m[fClientCreated], 10, 64)
	c.CreatedAt = time.UnixMilli(ms).UTC()
	return c, nil
}

// recallClient reads from the record a registration Redis does not hold (a lost Redis) and
// copies it back for the rest of its life; ErrNotFound without a record or a registration.
func (o *OAuth) recallClient(ctx context.Context, id string) (Client, error) {
	if o.record == nil {
		return Client{}, ErrNotFound
	}
	now := o.now()
	c, expires, err := o.record.client(ctx, id, now)
	if err != nil {
		return Client{}, err
	}
	if err := o.cacheClient(ctx, c, expires.Sub(now)); err != nil {
		return Client{}, err
	}
	return c, nil
}

// RedirectHost is what the consent page shows of a redirect URI: its host and port.
func RedirectHost(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "?"
	}
	if u.Port() == "" {
		return u.Hostname()
	}
	return net.JoinHostPort(u.Hostname(), u.Port())
}
