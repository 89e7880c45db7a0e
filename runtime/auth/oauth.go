package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// OAuthOptions configure the OAuth store.
type OAuthOptions struct {
	// AllowLocalhostRedirects accepts http://localhost redirect URIs as loopback (off by
	// default: RFC 8252 §8.3).
	AllowLocalhostRedirects bool
	Now                     func() time.Time
	// DB, when set, is PostgreSQL, the record of registrations and consents (oauthdb.go).
	DB *pgxpool.Pool
}

// OAuth stores the authorization server's state: clients, pending consent requests, codes,
// authorizations (token families) and their refresh tokens.
type OAuth struct {
	rdb                     redis.UniversalClient
	now                     func() time.Time
	AllowLocalhostRedirects bool
	// record is PostgreSQL's registrations and consents (nil without a database).
	record *oauthDB
}

// NewOAuth returns the OAuth store.
func NewOAuth(rdb redis.UniversalClient, o OAuthOptions) *OAuth {
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &OAuth{rdb: rdb, now: o.Now, AllowLocalhostRedirects: o.AllowLocalhostRedirects}
	if o.DB != nil {
		a.record = &oauthDB{db: o.DB}
	}
	return a
}

// Errors of the grants. Each maps to invalid_grant on the wire, with the message as
// error_description.
var (
	ErrGrantUnknown  = errors.New("the grant is unknown, expired or already used")
	ErrGrantReplay   = errors.New("the grant was already used; everything it issued has been revoked")
	ErrGrantRevoked  = errors.New("the authorization was revoked")
	ErrGrantExpired  = errors.New("the grant has expired")
	ErrGrantClient   = errors.New("the grant was issued to another client")
	ErrGrantRedirect = errors.New("redirect_uri does not match the authorization request")
	ErrGrantPKCE     = errors.New("code_verifier does not match the code_challenge")
)

// retention is how long a revoked or expired authorization stays listed in Connected Apps
// (and how long a used refresh token is remembered after its family ends).
const retention = 30 * 24 * time.Hour

// codeKeep is how long a code's record is kept after issue: past its 60 s life, so a late
// replay of a used code still revokes what it issued.
const codeKeep = 10 * time.Minute

// PendingRequest is a validated authorization request waiting for consent.
type PendingRequest struct {
	ID          string `json:"-"`
	ClientID    string `json:"client"`
	RedirectURI string `json:"redirect"`
	State       string `json:"state"`
	Challenge   string `json:"challenge"`
	Scope       string `json:"scope"`
	Resource    string `json:"resource"`
	UserID      string `json:"uid"`
	// SessionHash binds the request to the session that made it.
	SessionHash string `json:"session"`
}

const pendingTTL = 10 * time.Minute

// MaxPendingPerUser caps a user's authorization requests waiting for consent. Saving one
// more drops the oldest rather than refusing the new one: the request the user is looking at
// is the newest, and refusing would let any page that sends the user's browser to the
// authorize endpoint a few times block the user's real consent for 10 minutes.
const MaxPendingPerUser = 10

// savePendingScript stores one request in its user's hash. KEYS: the user's pending hash.
// ARGV: request ID, "<expires ms>:<JSON>", now (ms), cap, TTL (ms). Expired requests are
// removed, then the oldest until there is room for the new one. Returns how many live
// requests were dropped.
var savePendingScript = redis.NewScript(`
local now, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  local exp = tonumber(string.match(all[i+1], '^(%d+):') or '0')
  if exp <= now then redis.call('HDEL', KEYS[1], all[i]) else live[#live+1] = {all[i], exp} end
end
table.sort(live, function(a, b) return a[2] < b[2] end)
local drop = #live - cap + 1
for i = 1, drop do redis.call('HDEL', KEYS[1], live[i][1]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if drop < 0 then drop = 0 end
return drop
`)

// SavePending stores a request for the consent page and returns its ID. At most
// MaxPendingPerUser requests of one user wait at once; the oldest gives way.
func (o *OAuth) SavePending(ctx context.Context, p PendingRequest) (string, error) {
	p.ID = RandomToken(24)
	body, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	now := o.now()
	val := strconv.FormatInt(now.Add(pendingTTL).UnixMilli(), 10) + ":" + string(body)
	err = savePendingScript.Run(ctx, o.rdb, []string{store.OAuthPending(p.UserID)}, p.ID, val, now.UnixMilli(),
		MaxPendingPerUser, pendingTTL.Milliseconds()).Err()
	return p.ID, err
}

// decodePending parses "<expires ms>:<JSON>"; an expired or malformed record is not found.
func (o *OAuth) decodePending(id, v string) (PendingRequest, error) {
	exp, body, ok := strings.Cut(v, ":")
	ms, err := strconv.ParseInt(exp, 10, 64)
	var p PendingRequest
	if !ok || err != nil || o.now().UnixMilli() >= ms || json.Unmarshal([]byte(body), &p) != nil || p.ClientID == "" {
		return PendingRequest{}, ErrNotFound
	}
	p.ID = id
	return p, nil
}

// GetPending reads a pending request of userID.
func (o *OAuth) GetPending(ctx context.Context, userID, id string) (PendingRequest, error) {
	if id == "" || len(id) > 64 || userID == "" {
		return PendingRequest{}, ErrNotFound
	}
	v, err := o.rdb.HGet(ctx, store.OAuthPending(userID), id).Result()
	if errors.Is(err, redis.Nil) {
		return PendingRequest{}, ErrNotFound
	}
	if err != nil {
		return PendingRequest{}, err
	}
	return o.decodePending(id, v)
}

var takePendingScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v
`)

// TakePending reads and deletes a pending request of userID (a consent answers it once).
func (o *OAuth) TakePending(ctx context.Context, userID, id string) (PendingRequest, error) {
	if id == "" || len(id) > 64 || userID == "" {
		return PendingRequest{}, ErrNotFound
	}
	v, err := takePendingScript.Run(ctx, o.rdb, []string{store.OAuthPending(userID)}, id).Text()
	if errors.Is(err, redis.Nil) {
		return PendingRequest{}, ErrNotFound
	}
	if err != nil {
		return PendingRequest{}, err
	}
	return o.decodePending(id, v)
}

func pairs(v []string) map[string]string {
	m := make(map[string]string, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		m[v[i]] = v[i+1]
	}
	return m
}

// CodeGrant is what an authorization code stands for.
type CodeGrant struct {
	ClientID    string
	UserID      string
	Gen         int64
	RedirectURI string
	Challenge   string
	Scope       string
	Resource    string
	ExpiresAt   time.Time
	// AuthorizationID is the family the exchange creates; set by ConsumeCode.
	AuthorizationID string
}

// CreateCode stores a code for g (CodeLifetime) and returns it.
func (o *OAuth) CreateCode(ctx context.Context, g CodeGrant) (string, error) {
	code := RandomToken(32)
	key := store.OAuthCode(HashSecret(code))
	exp := o.now().Add(CodeLifetime)
	_, err := o.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "client", g.ClientID, "uid", g.UserID, "gen", g.Gen, "redirect", g.RedirectURI,
			"challenge", g.Challenge, "scope", g.Scope, "resource", g.Resource, "exp", exp.UnixMilli(), "used", "0")
		p.Expire(ctx, key, codeKeep)
		return nil
	})
	return code, err
}

// consumeScript marks a code used and records the authorization its exchange will create.
// A code already used returns that authorization so the caller can revoke it.
var consumeScript = redis.NewScript(`
local c = redis.call('HMGET', KEYS[1], 'used', 'auth')
if not c[1] then return {0} end
if c[1] == '1' then return {2, c[2] or ''} end
redis.call('HSET', KEYS[1], 'used', '1', 'auth', ARGV[1])
return {1, unpack(redis.call('HGETALL', KEYS[1]))}
`)

// ConsumeCode marks a code used (single use) and returns its grant with a fresh
// AuthorizationID. A second use fails with ErrGrantReplay and revokes the authorization the
// first use created, with every token in it. The caller still checks expiry, client,
// redirect URI and PKCE (CheckCode); the code is spent either way.
func (o *OAuth) ConsumeCode(ctx context.Context, code string) (CodeGrant, error) {
	if code == "" || len(code) > 256 {
		return CodeGrant{}, ErrGrantUnknown
	}
	authID := RandomToken(16)
	v, err := consumeScript.Run(ctx, o.rdb, []string{store.OAuthCode(HashSecret(code))}, authID).Slice()
	if err != nil {
		return CodeGrant{}, err
	}
	status, _ := v[0].(int64)
	switch status {
	case 0:
		return CodeGrant{}, ErrGrantUnknown
	case 2:
		if prev, _ := v[1].(string); prev != "" {
			if err := o.revoke(ctx, prev, "code_replay"); err != nil {
				return CodeGrant{}, err
			}
		}
		return CodeGrant{}, ErrGrantReplay
	}
	fields := make([]string, 0, len(v)-1)
	for _, x := range v[1:] {
		s, _ := x.(string)
		fields = append(fields, s)
	}
	m := pairs(fields)
	gen, _ := strconv.ParseInt(m["gen"], 10, 64)
	exp, _ := strconv.ParseInt(m["exp"], 10, 64)
	return CodeGrant{ClientID: m["client"], UserID: m["uid"], Gen: gen, RedirectURI: m["redirect"], Challenge: m["challenge"],
		Scope: m["scope"], Resource: m["resource"], ExpiresAt: time.UnixMilli(exp), AuthorizationID: authID}, nil
}

// CheckCode applies the exchange rules to a consumed code: under 60 s old, same client,
// same redirect URI, and a code_verifier whose S256 is the challenge.
func (o *OAuth) CheckCode(g CodeGrant, clientID, redirectURI, verifier string) error {
	if !o.now().Before(g.ExpiresAt) {
		return ErrGrantExpired
	}
	if !EqualSecret(g.ClientID, clientID) {
		return ErrGrantClient
	}
	if g.RedirectURI != redirectURI {
		return ErrGrantRedirect
	}
	if !VerifyPKCE(g.Challenge, verifier) {
		return ErrGrantPKCE
	}
	return nil
}

// ValidPKCEValue reports whether s has the form of a code_verifier or an S256 challenge:
// 43 to 128 unreserved characters (RFC 7636 §4.1).
func ValidPKCEValue(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// VerifyPKCE checks a code_verifier against an S256 challenge in constant time.
func VerifyPKCE(challenge, verifier string) bool {
	if !ValidPKCEValue(verifier) || challenge == "" {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return EqualSecret(base64.RawURLEncoding.EncodeToString(sum[:]), challenge)
}

// Authorization is one grant of a user to a client: the family of a refresh chain and every
// access token issued from it. Connected Apps lists these.
type Authorization struct {
	ID         string
	UserID     string
	ClientID   string
	ClientName string
	// Scope is what the user granted; a refresh may ask for less, never more.
	Scope    string
	Resource string
	Gen      int64
	// CreatedAt is when it was issued; ExpiresAt when the refresh chain ends unless used.
	CreatedAt, LastUsed, ExpiresAt time.Time
	RevokedAt                      time.Time
	RevokedReason                  string
}

// Active reports an authorization neither revoked nor expired at now.
func (a Authorization) Active(now time.Time) bool {
	return a.RevokedAt.IsZero() && now.Before(a.ExpiresAt)
}

// Fields of an authorization hash.
const (
	fAuthUser       = "uid"
	fAuthClient     = "client"
	fAuthClientName = "clientName"
	fAuthScope      = "scope"
	fAuthResource   = "resource"
	fAuthGen        = "gen"
	fAuthCreated    = "createdAt"
	fAuthLastUsed   = "lastUsed"
	fAuthExpires    = "expiresAt"
	fAuthRevokedAt  = "revokedAt"
	fAuthRevokedBy  = "revokedReason"
)

// RefreshToken is "<authorization ID>.<secret>": the ID routes to the family's keys (one
// Cluster slot), the secret is stored only as its SHA-256.
func splitRefresh(tok string) (authID, hash string, ok bool) {
	a, s, found := strings.Cut(tok, ".")
	if !found || len(a) != 22 || len(s) < 32 || len(tok) > 200 {
		return "", "", false
	}
	return a, HashSecret(s), true
}

func newRefresh(authID string) (token, hash string) {
	s := RandomToken(32)
	return authID + "." + s, HashSecret(s)
}

// CreateAuthorization stores a new authorization (its ID from ConsumeCode) and returns its
// first refresh token. A revocation stamped on the ID before this (a code replayed while the
// first exchange ran) survives: creation never clears revokedAt.
func (o *OAuth) CreateAuthorization(ctx context.Context, a Authorization) (string, error) {
	now := o.now()
	refresh, hash := newRefresh(a.ID)
	key := store.OAuthAuthorization(a.ID)
	exp := now.Add(RefreshTokenLifetime)
	if o.record != nil {
		// The consent's record first: one PostgreSQL refused is issued nowhere.
		a.CreatedAt, a.ExpiresAt = now.UTC(), exp.UTC()
		if err := o.record.insertAuthorization(ctx, a); err != nil {
			return "", err
		}
		o.record.touchClient(ctx, a.ClientID, now.Add(clientIdle))
	}
	_, err := o.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, fAuthUser, a.UserID, fAuthClient, a.ClientID, fAuthClientName, a.ClientName, fAuthScope, a.Scope,
			fAuthResource, a.Resource, fAuthGen, a.Gen, fAuthCreated, now.UnixMilli(), fAuthLastUsed, now.UnixMilli(),
			fAuthExpires, exp.UnixMilli())
		p.Expire(ctx, key, RefreshTokenLifetime+retention)
		rk := store.OAuthRefresh(a.ID, hash)
		p.HSet(ctx, rk, "state", "current")
		p.Expire(ctx, rk, RefreshTokenLifetime)
		p.SAdd(ctx, store.UserAuthorizations(a.UserID), a.ID)
		p.Expire(ctx, store.OAuthClient(a.ClientID), clientIdle)
		return nil
	})
	if err != nil {
		return "", err
	}
	return refresh, nil
}

// rotateScript is the whole refresh rotation in one step. KEYS: authorization, presented
// refresh token, new refresh token. ARGV: client ID, now (ms), refresh lifetime (ms),
// retention (ms), requested scope level (0: the granted scope), requested resource (”: the
// granted one). Results: {0} unknown, {1, uid, scope, resource, gen, clientName} rotated,
// {2} reuse (family revoked now), {3} revoked, {4} other client, {5} expired, {6} scope
// wider than granted, {7} other resource. Only {1} spends the token; {2} revokes.
var rotateScript = redis.NewScript(`
local lv = {['mcp:read']=1, ['mcp:paper']=2, ['mcp:live']=3, ['mcp']=3}
local function level(s)
  local m = 0
  for w in string.gmatch(s or '', '%S+') do
    local l = lv[w] or 0
    if l > m then m = l end
  end
  return m
end
local st = redis.call('HGET', KEYS[2], 'state')
if not st then return {0} end
local a = redis.call('HMGET', KEYS[1], 'uid', 'client', 'revokedAt', 'expiresAt', 'scope', 'resource', 'gen', 'clientName')
if not a[1] then return {0} end
if a[2] ~= ARGV[1] then return {4} end
if a[3] and a[3] ~= '' then return {3} end
local now = tonumber(ARGV[2])
if st ~= 'current' then
  redis.call('HSET', KEYS[1], 'revokedAt', ARGV[2], 'revokedReason', 'refresh_reuse')
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
  return {2}
end
if tonumber(a[4]) <= now then return {5} end
if tonumber(ARGV[5]) > level(a[5]) then return {6} end
if ARGV[6] ~= '' and ARGV[6] ~= a[6] then return {7} end
redis.call('HSET', KEYS[2], 'state', 'used')
redis.call('HSET', KEYS[3], 'state', 'current')
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'expiresAt', now + tonumber(ARGV[3]), 'lastUsed', ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]))
return {1, a[1], a[5], a[6], a[7], a[8] or ''}
`)

// Errors of Rotate besides the grant errors.
var (
	// ErrScopeWiden: a refresh asked for more than the authorization granted (invalid_scope).
	ErrScopeWiden = errors.New("the requested scope exceeds the scope granted")
	// ErrTarget: a refresh named another resource (invalid_target).
	ErrTarget = errors.New("the requested resource is not the one granted")
)

// RotateRequest is a refresh: the presented token, the authenticated client, and optionally
// a narrower scope (normalized) and the resource.
type RotateRequest struct {
	Token, ClientID string
	Scope, Resource string
}

// Rotate spends a refresh token and returns its authorization and the next refresh token
// (rotation, sliding the family's 30 days). A token already spent is theft: the whole
// authorization is revoked (ErrGrantReplay), so its access tokens, refresh chain and
// siblings die together. A token presented by another client, or asking for a wider scope
// or another resource, is refused and not spent.
func (o *OAuth) Rotate(ctx context.Context, req RotateRequest) (Authorization, string, error) {
	authID, hash, ok := splitRefresh(req.Token)
	if !ok {
		return Authorization{}, "", ErrGrantUnknown
	}
	next, nextHash := newRefresh(authID)
	now := o.now()
	v, err := rotateScript.Run(ctx, o.rdb,
		[]string{store.OAuthAuthorization(authID), store.OAuthRefresh(authID, hash), store.OAuthRefresh(authID, nextHash)},
		req.ClientID, now.UnixMilli(), RefreshTokenLifetime.Milliseconds(), retention.Milliseconds(),
		ScopeLevel(req.Scope), req.Resource).Slice()
	if err != nil {
		return Authorization{}, "", err
	}
	status, _ := v[0].(int64)
	switch status {
	case 0:
		return Authorization{}, "", ErrGrantUnknown
	case 2:
		o.recordRevocation(ctx, authID, now, "refresh_reuse")
		return Authorization{}, "", ErrGrantReplay
	case 3:
		return Authorization{}, "", ErrGrantRevoked
	case 4:
		return Authorization{}, "", ErrGrantClient
	case 5:
		return Authorization{}, "", ErrGrantExpired
	case 6:
		return Authorization{}, "", ErrScopeWiden
	case 7:
		return Authorization{}, "", ErrTarget
	}
	if o.record != nil {
		o.record.slide(ctx, authID, now.Add(RefreshTokenLifetime))
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	gen, _ := strconv.ParseInt(str(4), 10, 64)
	return Authorization{ID: authID, UserID: str(1), ClientID: req.ClientID, Scope: str(2), Resource: str(3), Gen: gen,
		ClientName: str(5), LastUsed: now, ExpiresAt: now.Add(RefreshTokenLifetime)}, next, nil
}

// TouchClient slides a client registration's idle lifetime (each token grant).
func (o *OAuth) TouchClient(ctx context.Context, clientID string) error {
	if o.record != nil {
		o.record.touchClient(ctx, clientID, o.now().Add(clientIdle))
	}
	return o.rdb.Expire(ctx, store.OAuthClient(clientID), clientIdle).Err()
}

var revokeScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'revokedAt')
if cur and cur ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'revokedAt', ARGV[1], 'revokedReason', ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
`)

// revoke stamps revokedAt on an authorization (even one not yet created, see
// CreateAuthorization); every token of it fails verification from then on. Redis first:
// the tokens die whether or not PostgreSQL answers.
func (o *OAuth) revoke(ctx context.Context, authID, reason string) error {
	now := o.now()
	if err := revokeScript.Run(ctx, o.rdb, []string{store.OAuthAuthorization(authID)},
		now.UnixMilli(), reason, retention.Milliseconds()).Err(); err != nil {
		return err
	}
	o.recordRevocation(ctx, authID, now, reason)
	return nil
}

// recordRevocation writes a revocation Redis made to the record, best effort: one it
// misses is made again when the consent is listed without its Redis copy.
func (o *OAuth) recordRevocation(ctx context.Context, authID string, at time.Time, reason string) {
	if o.record == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, touchTimeout)
	defer cancel()
	_ = o.record.revoke(ctx, authID, at.UTC(), reason)
}

// TokensLost is the revocation reason of a consent whose Redis copy (and refresh tokens)
// were lost while it was active: the app must be authorized again.
const TokensLost = "tokens_lost"

// RevokeAuthorization revokes one authorization of userID (Connected Apps). Another user's
// authorization is ErrNotFound.
func (o *OAuth) RevokeAuthorization(ctx context.Context, userID, authID string) error {
	a, err := o.GetAuthorization(ctx, authID)
	if err != nil {
		return err
	}
	if a.UserID != userID {
		return ErrNotFound
	}
	return o.revoke(ctx, authID, "user")
}

// RevokeRefreshToken revokes the authorization of a refresh token presented by clientID
// (RFC 7009). An unknown token, or another client's, is ignored.
func (o *OAuth) RevokeRefreshToken(ctx context.Context, token, clientID string) error {
	authID, hash, ok := splitRefresh(token)
	if !ok {
		return nil
	}
	n, err := o.rdb.Exists(ctx, store.OAuthRefresh(authID, hash)).Result()
	if err != nil || n == 0 {
		return err
	}
	a, err := o.GetAuthorization(ctx, authID)
	if errors.Is(err, ErrNotFound) || (err == nil && a.ClientID != clientID) {
		return nil
	}
	if err != nil {
		return err
	}
	return o.revoke(ctx, authID, "client")
}

// RevokeAccessToken revokes one access token by jti until it would have expired.
func (o *OAuth) RevokeAccessToken(ctx context.Context, jti string, exp time.Time) error {
	ttl := exp.Sub(o.now()) + time.Minute
	if ttl <= 0 {
		return nil
	}
	return o.rdb.Set(ctx, store.OAuthRevokedToken(jti), "1", ttl).Err()
}

// GetAuthorization reads one authorization.
func (o *OAuth) GetAuthorization(ctx context.Context, authID string) (Authorization, error) {
	if authID == "" {
		return Authorization{}, ErrNotFound
	}
	m, err := o.rdb.HGetAll(ctx, store.OAuthAuthorization(authID)).Result()
	if err != nil {
		return Authorization{}, err
	}
	if m[fAuthUser] == "" {
		return Authorization{}, ErrNotFound
	}
	return decodeAuthorization(authID, m), nil
}

func decodeAuthorization(id string, m map[string]string) Authorization {
	ms := func(k string) time.Time {
		n, _ := strconv.ParseInt(m[k], 10, 64)
		if n == 0 {
			return time.Time{}
		}
		return time.UnixMilli(n).UTC()
	}
	gen, _ := strconv.ParseInt(m[fAuthGen], 10, 64)
	return Authorization{ID: id, UserID: m[fAuthUser], ClientID: m[fAuthClient], ClientName: m[fAuthClientName],
		Scope: m[fAuthScope], Resource: m[fAuthResource], Gen: gen, CreatedAt: ms(fAuthCreated), LastUsed: ms(fAuthLastUsed),
		ExpiresAt: ms(fAuthExpires), RevokedAt: ms(fAuthRevokedAt), RevokedReason: m[fAuthRevokedBy]}
}

// ListAuthorizations returns a user's authorizations, newest first, revoked and expired ones
// included until their retention ends.
func (o *OAuth) ListAuthorizations(ctx context.Context, userID string) ([]Authorization, error) {
	ids, err := o.rdb.SMembers(ctx, store.UserAuthorizations(userID)).Result()
	if err != nil {
		return nil, err
	}
	pipe := o.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, store.OAuthAuthorization(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	var out []Authorization
	var gone []any
	for i, id := range ids {
		m := cmds[i].Val()
		if m[fAuthUser] != userID {
			gone = append(gone, id)
			continue
		}
		out = append(out, decodeAuthorization(id, m))
	}
	if len(gone) > 0 {
		_ = o.rdb.SRem(ctx, store.UserAuthorizations(userID), gone...).Err()
	}
	out = append(out, o.recordedOnly(ctx, userID, out)...)
	slices.SortFunc(out, func(a, b Authorization) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// recordedOnly is the user's consents that the record holds and Redis does not (a lost
// Redis, or a copy past its retention). One that was active lost its refresh tokens with
// Redis: it is recorded and shown as revoked (TokensLost) from now. With PostgreSQL down
// it is nothing: Redis holds every consent that can still be used.
func (o *OAuth) recordedOnly(ctx context.Context, userID string, inRedis []Authorization) []Authorization {
	if o.record == nil {
		return nil
	}
	now := o.now()
	all, err := o.record.authorizations(ctx, userID, now)
	if err != nil {
		return nil
	}
	var out []Authorization
	for _, a := range all {
		if slices.ContainsFunc(inRedis, func(r Authorization) bool { return r.ID == a.ID }) {
			continue
		}
		if a.Active(now) {
			a.RevokedAt, a.RevokedReason = now.UTC().Truncate(time.Millisecond), TokensLost
			o.recordRevocation(ctx, a.ID, a.RevokedAt, TokensLost)
		}
		out = append(out, a)
	}
	return out
}
