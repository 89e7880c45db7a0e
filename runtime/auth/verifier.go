package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/expiring"
	"github.com/sigops/sigops/runtime/store"
)

// MaxCacheTTL bounds how stale a verifier's view of Redis may be: a revocation or a password
// change takes effect on every replica within this time (and at once on the replica that
// made it, which calls Purge).
const MaxCacheTTL = time.Second

// maxTokenLen refuses absurd inputs before any parsing.
const maxTokenLen = 4096

var (
	// ErrNoToken: the request carries no bearer token.
	ErrNoToken = errors.New("no bearer token")
	// ErrInvalidToken: the token is malformed, forged, expired, for another audience, revoked
	// or from before a password change. Callers answer 401 and never say which.
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnavailable: the revocation state could not be read (Redis down); answer 503.
	ErrUnavailable = errors.New("token state unavailable")
)

// InvalidTokenError carries why a token was refused, for logs and metrics only.
type InvalidTokenError struct{ Reason string }

func (e *InvalidTokenError) Error() string        { return "invalid token: " + e.Reason }
func (e *InvalidTokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(reason string) error { return &InvalidTokenError{Reason: reason} }

// Principal is who a verified token speaks for.
type Principal struct {
	UserID string
	// Kind is KindAPI (bearer JWT: full access, no scope) or KindOAuth.
	Kind string
	JTI  string
	// Scope is the OAuth scope; empty for KindAPI.
	Scope    string
	ClientID string
	// AuthorizationID is the OAuth token family (sid); empty for KindAPI.
	AuthorizationID string
	Audience        []string
	IssuedAt        time.Time
	ExpiresAt       time.Time
	Generation      int64
}

// Allows reports whether the principal may do what needs scope: bearer JWTs have full API
// access; OAuth tokens follow the scope hierarchy.
func (p *Principal) Allows(scope string) bool {
	if p.Kind == KindAPI {
		return true
	}
	return ScopeAllows(p.Scope, scope)
}

// VerifierOptions configure a Verifier.
type VerifierOptions struct {
	Redis redis.UniversalClient
	Keys  *Keyring
	// Issuer is the expected iss: {base_url}.
	Issuer string
	// Audiences are the resources this daemon serves; a token must name one of them
	// (mcpd: {mcp_url}/mcp; the API: {base_url}/api).
	Audiences []string
	// CacheTTL is how long Redis facts are reused (0 or above MaxCacheTTL: MaxCacheTTL).
	CacheTTL time.Duration
	// CacheEntries bounds the cache (0: 100,000 tokens).
	CacheEntries int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Verifier checks sigops tokens: the one implementation every daemon uses.
//
// A token passes when its signature verifies with a known key (kid) under HS256 and nothing
// else; it has iss, sub, jti, iat and exp, is unexpired and names one of the audiences; and
// Redis says it is live: for a bearer JWT its record exists (an idle window that each
// successful check slides by APITokenIdle), for an OAuth token its authorization exists
// and is not revoked and its jti is not revoked; for both, the user's password generation
// equals the token's. Those Redis facts are cached per jti for at most CacheTTL (≤ 1 s).
type Verifier struct {
	o      VerifierOptions
	parser *jwt.Parser
	// cache holds tokens' Redis facts by jti for CacheTTL (Verify); tokens the principals
	// of verified tokens by their whole text until they expire (Parse); stamped the last
	// write of each sliding stamp (touchDue).
	cache   *expiring.Cache[facts]
	tokens  *expiring.Cache[*Principal]
	stamped *expiring.Cache[struct{}]
}

// NewVerifier returns a verifier.
func NewVerifier(o VerifierOptions) (*Verifier, error) {
	if o.Redis == nil || o.Keys == nil || o.Issuer == "" || len(o.Audiences) == 0 {
		return nil, errors.New("verifier needs Redis, keys, an issuer and at least one audience")
	}
	if o.CacheTTL <= 0 || o.CacheTTL > MaxCacheTTL {
		o.CacheTTL = MaxCacheTTL
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 100_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(o.Issuer),
		jwt.WithAudience(o.Audiences...),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(o.Now),
		jwt.WithStrictDecoding(),
	)
	return &Verifier{o: o, parser: p, cache: expiring.New[facts](o.CacheEntries),
		tokens: expiring.New[*Principal](o.CacheEntries), stamped: expiring.New[struct{}](o.CacheEntries)}, nil
}

// VerifyRequest verifies the Authorization: Bearer token of r. A token anywhere else (query,
// body) is not looked at.
func (v *Verifier) VerifyRequest(r *http.Request) (*Principal, error) {
	raw, ok := BearerToken(r)
	if !ok {
		return nil, ErrNoToken
	}
	return v.Verify(r.Context(), raw)
}

// BearerToken extracts the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// Verify checks a raw token and returns its principal.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Principal, error) {
	p, err := v.Parse(raw)
	if err != nil {
		return nil, err
	}
	now := v.o.Now()
	if f, ok := v.cache.Get(p.JTI, now); ok {
		if !f.live {
			return nil, invalid(f.reason)
		}
		return p, nil
	}
	pipe := v.o.Redis.Pipeline()
	read := v.stageFacts(ctx, pipe, p, now, false)
	_, _ = pipe.Exec(ctx) // each read's error is its own
	f, _, err := read()
	if err != nil {
		return nil, err
	}
	v.cache.Put(p.JTI, f, now.Add(v.o.CacheTTL), now)
	if !f.live {
		return nil, invalid(f.reason)
	}
	return p, nil
}

// Parse checks everything about a raw token that needs no Redis: its signature, algorithm,
// typ, issuer, audience, times and claims. A token that passed is remembered (by its whole
// text, so only that exact token hits) until it expires, and its next Parse costs a map
// read instead of base64, JSON and HMAC work. The keyring cannot change while the process
// runs, so a remembered signature stays good; whether the token is still live is Redis's
// to say, on every call (Stage) or within CacheTTL (Verify).
func (v *Verifier) Parse(raw string) (*Principal, error) {
	if raw == "" || len(raw) > maxTokenLen {
		return nil, invalid("size")
	}
	now := v.o.Now()
	if p, ok := v.tokens.Get(raw, now); ok {
		cp := *p // a caller's change of its principal stays out of the cache
		return &cp, nil
	}
	var c Claims
	t, err := v.parser.ParseWithClaims(raw, &c, v.o.Keys.keyFunc)
	if err != nil {
		return nil, invalid(jwtReason(err))
	}
	// The typ header must agree with the kind (RFC 9068 at+jwt for OAuth access tokens).
	if typ, _ := t.Header["typ"].(string); (c.Kind == KindOAuth) != (typ == typOAuth) {
		return nil, invalid("typ")
	}
	p, err := v.principal(&c)
	if err != nil {
		return nil, err
	}
	v.tokens.Put(raw, p, p.ExpiresAt, now)
	cp := *p
	return &cp, nil
}

// Staged is a token's live state and its user's identity, queued on a caller's pipeline by
// Stage and read once the pipeline has run.
type Staged struct {
	read func() (facts, []any, error)
}

// Stage queues on pipe the reads that say whether p (from Parse) is still live: its user's
// password generation, and its bearer record or its authorization and revocation, with the
// user's email and tier beside them. Nothing is cached: a revocation or a password change
// made on any replica refuses the very next call. A daemon that checks a token on every
// request this way pays no round trip of its own for it (mcpd folds it into the pipeline
// that also counts the rate limit and reads the session).
func (v *Verifier) Stage(ctx context.Context, pipe redis.Pipeliner, p *Principal) *Staged {
	return &Staged{read: v.stageFacts(ctx, pipe, p, v.o.Now(), true)}
}

// Identity is nil when the token is live, with its user's tier and email; ErrInvalidToken
// when it is not (or its account is gone), ErrUnavailable when Redis could not say.
func (s *Staged) Identity() (Identity, error) {
	f, user, err := s.read()
	if err != nil {
		return Identity{}, err
	}
	if !f.live {
		return Identity{}, invalid(f.reason)
	}
	email, _ := user[1].(string)
	slug, _ := user[2].(string)
	return identityOf(email, slug)
}

func jwtReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "audience"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "issuer"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "signature"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	}
	return "claims"
}

// principal checks the claims sigops always sets and returns the principal.
func (v *Verifier) principal(c *Claims) (*Principal, error) {
	if c.ID == "" {
		// Tokens of the deprecated /api/oauth/mcp/token endpoint had no jti.
		return nil, invalid("no jti")
	}
	if c.Subject == "" || c.IssuedAt == nil || c.ExpiresAt == nil || c.Gen <= 0 {
		return nil, invalid("claims")
	}
	life := c.ExpiresAt.Sub(c.IssuedAt.Time)
	p := &Principal{UserID: c.Subject, Kind: c.Kind, JTI: c.ID, Audience: c.Audience, IssuedAt: c.IssuedAt.Time,
		ExpiresAt: c.ExpiresAt.Time, Generation: c.Gen}
	switch c.Kind {
	case KindAPI:
		if c.Scope != "" || c.ClientID != "" || c.SID != "" || life > APITokenMaxLifetime {
			return nil, invalid("claims")
		}
	case KindOAuth:
		if c.ClientID == "" || c.SID == "" || ScopeLevel(c.Scope) == 0 || life > AccessTokenLifetime {
			return nil, invalid("claims")
		}
		p.Scope, p.ClientID, p.AuthorizationID = c.Scope, c.ClientID, c.SID
	default:
		return nil, invalid("kind")
	}
	return p, nil
}

type facts struct {
	live   bool
	reason string
}

// stageFacts queues on pipe the reads of the token's live state (and its user's email and
// tier) and returns their reader. everyCall is set when nothing caches the answer, so that
// the bearer record's idle window is slid at most once a second instead of on every call.
func (v *Verifier) stageFacts(ctx context.Context, pipe redis.Pipeliner, p *Principal, now time.Time, everyCall bool) func() (facts, []any, error) {
	user := pipe.HMGet(ctx, store.User(p.UserID), fUserGen, fUserEmail, fUserTier)
	var bearer func() (bool, error) // the bearer record exists
	var auth *redis.SliceCmd
	var revoked *redis.IntCmd
	if p.Kind == KindAPI {
		// Sliding idle window: the record exists while the token is live, and a use pushes
		// its end APITokenIdle ahead (read on every call, at most once a second per token:
		// a write on every call would reach every replica for nothing).
		if !everyCall || v.touchDue("bearer:"+p.JTI, now, time.Second) {
			bearer = pipe.Expire(ctx, store.Bearer(p.JTI), APITokenIdle).Result
		} else {
			exists := pipe.Exists(ctx, store.Bearer(p.JTI))
			bearer = func() (bool, error) { n, err := exists.Result(); return n == 1, err }
		}
	} else {
		auth = pipe.HMGet(ctx, store.OAuthAuthorization(p.AuthorizationID), fAuthUser, fAuthRevokedAt)
		revoked = pipe.Exists(ctx, store.OAuthRevokedToken(p.JTI))
		if v.touchDue(p.AuthorizationID, now, touchEvery) {
			pipe.Eval(ctx, touchScript, []string{store.OAuthAuthorization(p.AuthorizationID)}, now.UnixMilli())
		}
	}
	return func() (facts, []any, error) {
		u, err := user.Result()
		if err != nil || len(u) != 3 {
			return facts{}, nil, ErrUnavailable
		}
		g, _ := u[0].(string)
		if g == "" {
			return facts{reason: "no user"}, u, nil
		}
		if n, _ := strconv.ParseInt(g, 10, 64); n != p.Generation {
			return facts{reason: "password changed"}, u, nil
		}
		if bearer != nil {
			ok, err := bearer()
			if err != nil {
				return facts{}, nil, ErrUnavailable
			}
			if !ok {
				return facts{reason: "bearer expired or revoked"}, u, nil
			}
			return facts{live: true}, u, nil
		}
		a, err := auth.Result()
		if err != nil || len(a) != 2 {
			return facts{}, nil, ErrUnavailable
		}
		if uid, _ := a[0].(string); uid != p.UserID {
			return facts{reason: "no authorization"}, u, nil
		}
		if r, _ := a[1].(string); r != "" {
			return facts{reason: "authorization revoked"}, u, nil
		}
		n, err := revoked.Result()
		if err != nil {
			return facts{}, nil, ErrUnavailable
		}
		if n != 0 {
			return facts{reason: "token revoked"}, u, nil
		}
		return facts{live: true}, u, nil
	}
}

// touchScript stamps an authorization's last use (Connected Apps) if it still exists.
const touchScript = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'lastUsed', ARGV[1]) end return 1`

// Purge drops every cached fact, so a revocation made by this process applies to its own
// next verification at once (other replicas follow within CacheTTL).
func (v *Verifier) Purge() { v.cache.Purge() }

// touchEvery is how often a verifier stamps an authorization's last-used time.
const touchEvery = time.Minute

// touchDue reports (and records) whether a write for key is due, every at most.
func (v *Verifier) touchDue(key string, now time.Time, every time.Duration) bool {
	return v.stamped.Claim(key, struct{}{}, now.Add(every), now)
}

type principalKey struct{}

// WithPrincipal stores p in ctx.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal Middleware stored, if any.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok
}

// Middleware requires a valid bearer token: 401 (with the RFC 6750/9728 challenge naming
// resourceMetadata) without one, 503 when Redis cannot be read; otherwise the principal is
// in the request's context (PrincipalFrom). Scope checks are the handler's, with
// Principal.Allows and WriteInsufficientScope.
func (v *Verifier) Middleware(resourceMetadata string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := v.VerifyRequest(r)
			switch {
			case errors.Is(err, ErrUnavailable):
				writeJSONError(w, http.StatusServiceUnavailable, map[string]any{
					"success": false, "error": "service unavailable", "code": "INTERNAL_ERROR", "timestamp": v.o.Now().UnixMilli()})
				return
			case err != nil:
				WriteUnauthorized(w, !errors.Is(err, ErrNoToken), resourceMetadata, v.o.Now().UnixMilli())
				return
			}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}
