package auth

import (
	"context"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Lifetimes of credentials.
const (
	// APITokenIdle is how long a bearer JWT (login/dashboard token) lives without use; every
	// use slides it (see Verifier).
	APITokenIdle = 7 * 24 * time.Hour
	// APITokenMaxLifetime is the bearer JWT's exp: however active, it is re-issued by then.
	APITokenMaxLifetime = 30 * 24 * time.Hour
	// AccessTokenLifetime is an OAuth access token's lifetime (expires_in 3600).
	AccessTokenLifetime = time.Hour
	// RefreshTokenLifetime is the sliding lifetime of an OAuth refresh token (and its family).
	RefreshTokenLifetime = 30 * 24 * time.Hour
	// CodeLifetime is an authorization code's lifetime.
	CodeLifetime = 60 * time.Second
	// SessionIdle is a dashboard session's sliding lifetime; SessionMaxLifetime caps it.
	SessionIdle        = 7 * 24 * time.Hour
	SessionMaxLifetime = 30 * 24 * time.Hour
)

// Token kinds (the "knd" claim).
const (
	// KindAPI is a bearer JWT from POST /api/auth/login or the dashboard: full API access.
	KindAPI = "api"
	// KindOAuth is an OAuth access token: scoped, bound to a client and an authorization.
	KindOAuth = "oauth"
)

// JWT "typ" headers: RFC 9068 for OAuth access tokens.
const (
	typAPI   = "JWT"
	typOAuth = "at+jwt"
)

// Claims are the claims sigops puts in every token it signs. Registered: iss, sub (user ID),
// aud, exp, iat, jti.
type Claims struct {
	jwt.RegisteredClaims
	Kind     string `json:"knd"`
	Scope    string `json:"scope,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// SID is the OAuth authorization (token family) the token belongs to.
	SID string `json:"sid,omitempty"`
	// Gen is the user's password generation when the token was issued.
	Gen int64 `json:"gen"`
}

// IssuerOptions configure an Issuer.
type IssuerOptions struct {
	Redis redis.UniversalClient
	Keys  *Keyring
	// Issuer is the iss claim: {base_url}.
	Issuer string
	// APIAudience is the aud of bearer JWTs: {base_url}/api.
	APIAudience string
	Now         func() time.Time
}

// Issuer signs bearer JWTs and OAuth access tokens.
type Issuer struct {
	o IssuerOptions
}

// NewIssuer returns an Issuer.
func NewIssuer(o IssuerOptions) *Issuer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Issuer{o: o}
}

// IssuedToken is a signed token and its facts.
type IssuedToken struct {
	Token string
	JTI   string
	// ExpiresAt is when the token dies if unused: for a bearer JWT the end of its current
	// idle window (each use moves it), for an access token its exp.
	ExpiresAt time.Time
}

// IssueAPIToken signs a bearer JWT for u (full API access) and registers it as live for
// APITokenIdle; the verifier slides that window on use.
func (i *Issuer) IssueAPIToken(ctx context.Context, u User) (IssuedToken, error) {
	now := i.o.Now()
	jti := RandomToken(16)
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: i.o.Issuer, Subject: u.ID, Audience: jwt.ClaimStrings{i.o.APIAudience},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(APITokenMaxLifetime)), ID: jti,
	}, Kind: KindAPI, Gen: u.Generation}
	tok, err := i.o.Keys.sign(c, typAPI)
	if err != nil {
		return IssuedToken{}, err
	}
	if err := i.o.Redis.Set(ctx, store.Bearer(jti), u.ID, APITokenIdle).Err(); err != nil {
		return IssuedToken{}, err
	}
	return IssuedToken{Token: tok, JTI: jti, ExpiresAt: now.Add(APITokenIdle)}, nil
}

// RevokeAPIToken kills one bearer JWT at once (logout).
func (i *Issuer) RevokeAPIToken(ctx context.Context, jti string) error {
	if jti == "" {
		return errors.New("no jti")
	}
	return i.o.Redis.Del(ctx, store.Bearer(jti)).Err()
}

// AccessTokenRequest describes an OAuth access token.
type AccessTokenRequest struct {
	UserID   string
	Gen      int64
	ClientID string
	Scope    string
	// AuthorizationID is the token family (sid).
	AuthorizationID string
	// Audience is the resource the token is bound to (RFC 8707).
	Audience string
}

// IssueAccessToken signs an OAuth access token (AccessTokenLifetime). It writes nothing:
// its revocation state lives in the authorization.
func (i *Issuer) IssueAccessToken(r AccessTokenRequest) (IssuedToken, error) {
	now := i.o.Now()
	jti := RandomToken(16)
	exp := now.Add(AccessTokenLifetime)
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: i.o.Issuer, Subject: r.UserID, Audience: jwt.ClaimStrings{r.Audience},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp), ID: jti,
	}, Kind: KindOAuth, Scope: r.Scope, ClientID: r.ClientID, SID: r.AuthorizationID, Gen: r.Gen}
	tok, err := i.o.Keys.sign(c, typOAuth)
	if err != nil {
		return IssuedToken{}, err
	}
	return IssuedToken{Token: tok, JTI: jti, ExpiresAt: exp}, nil
}
