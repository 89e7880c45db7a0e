package store

import "github.com/sigops/sigops/runtime/emails"

// Keys of authd and runtime/auth: accounts, dashboard sessions, bearer JWTs, the OAuth 2.1
// authorization server and the brute-force counters. Secrets (passwords, session cookies,
// codes, refresh tokens, client secrets) never appear in a key or a value: keys carry their
// SHA-256 (hex) and values carry KDF hashes.
//
//	sigops:users                               set    every user ID
//	sigops:users:cached                        string with PostgreSQL: every account of the record is cached (auth.Users.Restore)
//	sigops:user:{id}                           hash   account: name, email, password hash, tier, generation (the wallet: keys_lab.go)
//	sigops:user:email:<email>                  string lower-cased email -> user ID (uniqueness)
//	sigops:user:{id}:sessions                  set    session hashes of a user (clean-up on password change)
//	sigops:user:{id}:oauth                     set    OAuth authorization IDs of a user (connected apps)
//	sigops:user:{id}:apps-cached               string with PostgreSQL: the user's app policies and kill switch are copied (apppolicy)
//	sigops:session:<sha256>                    hash   dashboard session: user, generation, CSRF token; TTL 7 days sliding
//	sigops:bearer:<jti>                        string live bearer JWT (login/dashboard token) -> user ID; TTL 7 days sliding
//	sigops:oauth:client:<clientId>             hash   registered OAuth client
//	sigops:oauth:code:<sha256>                 hash   authorization code (60 s, single use; kept longer to catch replays)
//	sigops:oauth:pending:<userId>              hash   a user's authorization requests waiting for consent: request ID -> "<expires ms>:<JSON>"; at most auth.MaxPendingPerUser
//	sigops:oauth:auth:{authId}                 hash   one authorization (token family): user, client, scope, revokedAt
//	sigops:oauth:auth:{authId}:rt:<sha256>     hash   one refresh token of that family (current or used)
//	sigops:oauth:revoked:<jti>                 string one revoked access token until its expiry
//	sigops:ratelimit:{login}:<kind>:<subject>  string login attempt counter of a window (login-account, login-ip)
//	sigops:loginlock:{login}:<account>         string a password check of this account is running (SET NX PX)
//	sigops:ratelimit:{register}:<kind>:<subj>  string client registration counter of a window (address, /48, global)
//
// The braces are Redis Cluster hash tags ({login} and {register} are literal text); keys
// without one are in a slot of their own and only ever touched alone. A user's hash and its
// session and authorization sets share the tag {id}; the email index and the set of all
// users are single keys in other slots, so creating a user is a sequence of single-slot
// steps (runtime/auth users.go says in which order, and why a crash between them is
// harmless). An authorization's keys share the hash tag {authId}, so the refresh rotation
// script touches one slot. The login counters and locks share the literal tag {login}, and
// the registration counters {register}: each gate is one script over several keys (account
// and address; address, /48 and global), which Redis Cluster runs only when they hash to
// one slot. That puts all login counters on one shard; logins are human-paced, so one
// shard carries them easily.

// Users is the set of every user ID.
func Users() string { return prefix + "users" }

// UsersCached marks a Redis into which every account of PostgreSQL has been copied: its
// absence (a flushed or new Redis) makes authd and mcpd copy them again.
func UsersCached() string { return prefix + "users:cached" }

// User is one account, in the slot of its ID.
func User(id string) string { return prefix + "user:{" + id + "}" }

// UserByEmail maps a canonical email (emails.Canonical) to its user ID.
func UserByEmail(email string) string {
	return prefix + "user:email:" + emails.Canonical(email)
}

// UserSessions is the set of session hashes of one user.
func UserSessions(userID string) string { return User(userID) + ":sessions" }

// UserAuthorizations is the set of OAuth authorization IDs of one user.
func UserAuthorizations(userID string) string { return User(userID) + ":oauth" }

// UserAppsSuspended is set (to the time in ms) while user id's kill switch suspends every
// connected app's trading (runtime/apppolicy); absent otherwise.
func UserAppsSuspended(userID string) string { return User(userID) + ":apps-suspended" }

// UserAppsCached marks, with PostgreSQL, that Redis holds user id's app policies and kill
// switch as recorded there (runtime/apppolicy): its absence (a flushed or new Redis) makes
// the next admission copy them back before it decides anything.
func UserAppsCached(userID string) string { return User(userID) + ":apps-cached" }

// UserAppPolicy is the policy hash of user id's connected app clientID (runtime/apppolicy):
// live, bots, ordersPerHour, orderNotional, dayNotional.
func UserAppPolicy(userID, clientID string) string {
	return User(userID) + ":app:" + clientID + ":policy"
}

// UserAppOrders counts the orders user id's app clientID placed in the UTC hour (YYYYMMDDHH);
// it expires at the hour's end.
func UserAppOrders(userID, clientID, hour string) string {
	return User(userID) + ":app:" + clientID + ":orders:" + hour
}

// UserAppNotional is the notional (in 1e-8 USDT) of the live entries and wallet charges
// user id's app clientID committed in the UTC day (YYYYMMDD); it expires at the day's end.
func UserAppNotional(userID, clientID, day string) string {
	return User(userID) + ":app:" + clientID + ":notional:" + day
}

// Approval is one order of user id's connected app waiting for (or decided by) the user's
// approval (runtime/approval), by its signal ID: a hash of the record and its state.
func Approval(userID, signalID string) string { return User(userID) + ":approval:" + signalID }

// UserApprovals indexes user id's approvals: a sorted set of signal IDs scored by when each
// expires, so that the pending ones are a range from now.
func UserApprovals(userID string) string { return User(userID) + ":approvals" }

// ApprovalKey maps an app's idempotency key (SHA-256 hex of client and key) to the signal
// ID of the approval it asked for, so that a retry answers the same approval.
func ApprovalKey(userID, hash string) string { return User(userID) + ":approval-key:" + hash }

// ApprovalEvents is the channel on which the ID of a user whose approvals changed (one
// asked for, approved, rejected) is published, so that open dashboard pages update.
func ApprovalEvents() string { return prefix + "events:approvals" }

// Session is one dashboard session, by the SHA-256 (hex) of its cookie value.
func Session(hash string) string { return prefix + "session:" + hash }

// Bearer marks a live bearer JWT (login or dashboard token) by its jti.
func Bearer(jti string) string { return prefix + "bearer:" + jti }

// OAuthClient is one registered OAuth client.
func OAuthClient(clientID string) string { return prefix + "oauth:client:" + clientID }

// OAuthCode is one authorization code, by the SHA-256 (hex) of the code.
func OAuthCode(hash string) string { return prefix + "oauth:code:" + hash }

// OAuthPending holds a user's authorization requests waiting for consent, one field per
// request: one key per user, so capping them is one script on one key.
func OAuthPending(userID string) string { return prefix + "oauth:pending:" + userID }

// OAuthAuthorization is one authorization (a token family).
func OAuthAuthorization(authID string) string { return prefix + "oauth:auth:{" + authID + "}" }

// OAuthRefresh is one refresh token of an authorization, by the SHA-256 (hex) of its secret.
func OAuthRefresh(authID, hash string) string { return OAuthAuthorization(authID) + ":rt:" + hash }

// OAuthRevokedToken marks one revoked access token by its jti.
func OAuthRevokedToken(jti string) string { return prefix + "oauth:revoked:" + jti }

// LoginRateLimit is a login attempt counter of one kind (login-account, login-ip) and subject.
// The {login} hash tag keeps every login counter and lock in one Cluster slot.
func LoginRateLimit(kind, subject string) string {
	return prefix + "ratelimit:{login}:" + kind + ":" + subject
}

// LoginLock marks a running password check of one account (the SHA-256 of its email).
func LoginLock(account string) string { return prefix + "loginlock:{login}:" + account }

// RegisterRateLimit is a client registration counter of one kind (register-ip,
// register-net48, register-global) and subject. The {register} hash tag keeps them in one
// Cluster slot.
func RegisterRateLimit(kind, subject string) string {
	return prefix + "ratelimit:{register}:" + kind + ":" + subject
}
