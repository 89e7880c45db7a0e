package auth

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/wallet"
)

// Fields of a user hash (store.User).
const (
	fUserID       = "id"
	fUserName     = "name"
	fUserEmail    = "email"
	fUserPassword = "pw"
	fUserTier     = "tier"
	fUserTelegram = "telegramLinked"
	fUserGen      = "gen"
	fUserCreated  = "createdAt"
)

var (
	// ErrNotFound: no such user (or record).
	ErrNotFound = errors.New("not found")
	// ErrEmailTaken: another account has that email (case-insensitively).
	ErrEmailTaken = errors.New("an account with that email already exists")
	// ErrInvalidCredentials: wrong email or password; which one is never said.
	ErrInvalidCredentials = errors.New("invalid email or password")
)

// User is an account as the rest of the service sees it. The password hash stays inside
// this package.
type User struct {
	ID             string
	Name           string
	Email          string
	TelegramLinked bool
	Tier           Tier
	// StrategyLabBalanceUsd is the wallet that wallet-charging tools draw from, read from
	// runtime/wallet, which owns it.
	StrategyLabBalanceUsd decimal.Decimal
	// Generation is bumped by every password change; sessions and tokens carry the value they
	// were made under and die when it moves.
	Generation int64
	CreatedAt  time.Time

	passwordHash string
}

// NewUser is what Create needs.
type NewUser struct {
	Name     string
	Email    string
	Password string
	Tier     string
	Wallet   decimal.Decimal
}

// UsersOptions configure Users.
type UsersOptions struct {
	// KDF is argon2id's cost (zero: DefaultKDF).
	KDF KDFParams
	// HashConcurrency bounds simultaneous argon2id computations (0: DefaultHashConcurrency).
	HashConcurrency int
	// HashQueue bounds how many computations wait for a slot; one more is refused at once
	// with ErrHashBusy (0: DefaultHashQueue; negative: none wait).
	HashQueue int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// DB, when set, is PostgreSQL, the accounts' record: every change is made there first,
	// and an account missing from Redis (a lost Redis) is read there and cached again.
	DB *pgxpool.Pool
}

// Users stores accounts: in Redis, and with UsersOptions.DB in PostgreSQL as their record
// with Redis as its cache.
type Users struct {
	rdb   redis.UniversalClient
	h     *hasher
	now   func() time.Time
	dummy string // a hash verified for unknown emails, so both paths cost the same
	oauth *OAuth // revokes authorizations on a password change
	// record is PostgreSQL's table of accounts (nil without a database).
	record *userDB
	// Wallets is the Strategy Lab wallet store the accounts' balances are read from and
	// opened in.
	Wallets *wallet.Wallets
}

// NewUsers returns the account store.
func NewUsers(rdb redis.UniversalClient, o UsersOptions) *Users {
	if o.KDF == (KDFParams{}) {
		o.KDF = DefaultKDF
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	u := &Users{rdb: rdb, h: newHasher(o.KDF, o.HashConcurrency, o.HashQueue), now: o.Now}
	u.oauth = NewOAuth(rdb, OAuthOptions{Now: o.Now, DB: o.DB})
	u.Wallets = wallet.New(rdb, wallet.Options{Now: o.Now, DB: o.DB})
	u.dummy = u.h.Dummy()
	if o.DB != nil {
		u.record = &userDB{db: o.DB}
	}
	return u
}

// NormalizeEmail validates an email address and returns its canonical form (emails.Canonical).
func NormalizeEmail(email string) (string, error) {
	e := emails.Canonical(email)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 || !strings.Contains(e, "@") {
		return "", fmt.Errorf("%q is not a valid email address", email)
	}
	return e, nil
}

func cleanName(name, email string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	if len(name) > 100 {
		return "", errors.New("name is longer than 100 bytes")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", errors.New("name has control characters")
		}
	}
	return name, nil
}

// Create adds an account. The email is unique case-insensitively.
//
// The account, the set of all accounts, the wallet and the email index are in four Redis
// Cluster slots, so creating one is three steps: the account and its membership of the set,
// its wallet with the opening balance (runtime/wallet), then the claim of the email
// (SET NX), last because an account exists for the rest of the service only once its email
// leads to it. A crash before the claim leaves an account nobody can reach, which List skips
// as well; an email already taken undoes the first two steps.
func (u *Users) Create(ctx context.Context, n NewUser) (User, error) {
	email, err := NormalizeEmail(n.Email)
	if err != nil {
		return User{}, err
	}
	name, err := cleanName(n.Name, email)
	if err != nil {
		return User{}, err
	}
	if n.Tier == "" {
		n.Tier = TierFree
	}
	tier, err := TierOf(n.Tier)
	if err != nil {
		return User{}, err
	}
	if n.Wallet.IsNegative() {
		return User{}, errors.New("wallet cannot be negative")
	}
	if err := CheckPasswordPolicy(n.Password); err != nil {
		return User{}, err
	}
	hash, err := u.h.Hash(ctx, n.Password)
	if err != nil {
		return User{}, err
	}
	usr := User{ID: uuid.NewString(), Name: name, Email: email, Tier: tier, StrategyLabBalanceUsd: n.Wallet,
		Generation: 1, CreatedAt: u.now().UTC().Truncate(time.Millisecond), passwordHash: hash}
	if u.record != nil {
		// The record first: an email PostgreSQL holds is taken, whatever Redis says.
		if err := u.record.insert(ctx, usr); err != nil {
			return User{}, err
		}
	}
	if err := u.cache(ctx, usr); err != nil {
		return User{}, errors.Join(err, u.forget(ctx, usr.ID))
	}
	if _, err := u.Wallets.Open(ctx, usr.ID, n.Wallet); err != nil {
		return User{}, err
	}
	claimed, err := u.rdb.SetNX(ctx, store.UserByEmail(email), usr.ID, 0).Result()
	if err != nil {
		return User{}, errors.Join(err, u.forget(ctx, usr.ID))
	}
	if !claimed {
		_, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SRem(ctx, store.Users(), usr.ID)
			p.Del(ctx, store.User(usr.ID))
			p.Del(ctx, store.Wallet(usr.ID), store.WalletLedger(usr.ID))
			return nil
		})
		return User{}, errors.Join(ErrEmailTaken, err, u.forget(ctx, usr.ID))
	}
	return usr, nil
}

// cache writes usr's hash and its membership of the set of all accounts to Redis.
func (u *Users) cache(ctx context.Context, usr User) error {
	tg := "0"
	if usr.TelegramLinked {
		tg = "1"
	}
	_, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, store.User(usr.ID), fUserID, usr.ID, fUserName, usr.Name, fUserEmail, usr.Email, fUserPassword,
			usr.passwordHash, fUserTier, usr.Tier.Slug, fUserTelegram, tg, fUserGen, strconv.FormatInt(usr.Generation, 10),
			fUserCreated, strconv.FormatInt(usr.CreatedAt.UnixMilli(), 10))
		p.SAdd(ctx, store.Users(), usr.ID)
		return nil
	})
	return err
}

// recache puts back into Redis an account read from the record: its hash, its membership
// of the set of all accounts and, unless another account holds it, its email index.
func (u *Users) recache(ctx context.Context, usr User) error {
	if err := u.cache(ctx, usr); err != nil {
		return err
	}
	return u.rdb.SetNX(ctx, store.UserByEmail(usr.Email), usr.ID, 0).Err()
}

// forget undoes the record's half of a Create that failed in Redis.
func (u *Users) forget(ctx context.Context, id string) error {
	if u.record == nil {
		return nil
	}
	return u.record.remove(ctx, id)
}

// recall reads from the record an account Redis does not hold (by column id or email) and
// caches it again, email index included; ErrNotFound when the record has none either (or
// there is no record).
func (u *Users) recall(ctx context.Context, column, v string) (User, error) {
	if u.record == nil {
		return User{}, ErrNotFound
	}
	usr, err := u.record.get(ctx, column, v)
	if err != nil {
		return User{}, err
	}
	if err := u.recache(ctx, usr); err != nil {
		return User{}, err
	}
	usr.StrategyLabBalanceUsd, err = u.Wallets.Balance(ctx, usr.ID)
	return usr, err
}

// Get reads one account.
func (u *Users) Get(ctx context.Context, id string) (User, error) {
	if id == "" {
		return User{}, ErrNotFound
	}
	m, err := u.rdb.HGetAll(ctx, store.User(id)).Result()
	if err != nil {
		return User{}, err
	}
	if len(m) == 0 || m[fUserID] == "" {
		return u.recall(ctx, "id", id)
	}
	usr, err := decodeUser(m)
	if err != nil {
		return User{}, err
	}
	usr.StrategyLabBalanceUsd, err = u.Wallets.Balance(ctx, id)
	return usr, err
}

// ByEmail reads an account by email (case-insensitive).
func (u *Users) ByEmail(ctx context.Context, email string) (User, error) {
	id, err := u.rdb.Get(ctx, store.UserByEmail(email)).Result()
	if errors.Is(err, redis.Nil) {
		return u.recall(ctx, "email", emails.Canonical(email))
	}
	if err != nil {
		return User{}, err
	}
	return u.Get(ctx, id)
}

func decodeUser(m map[string]string) (User, error) {
	tier, err := TierOf(m[fUserTier])
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", m[fUserID], err)
	}
	gen, _ := strconv.ParseInt(m[fUserGen], 10, 64)
	created, _ := strconv.ParseInt(m[fUserCreated], 10, 64)
	return User{ID: m[fUserID], Name: m[fUserName], Email: m[fUserEmail], TelegramLinked: m[fUserTelegram] == "1",
		Tier: tier, Generation: gen, CreatedAt: time.UnixMilli(created).UTC(),
		passwordHash: m[fUserPassword]}, nil
}

// Authenticate checks an email and password. An unknown email costs the same argon2id
// computation as a known one and gives the same error, so neither timing nor message tells
// whether an account exists. ErrInvalidCredentials means a password was checked; any other
// error (ErrHashBusy, Redis, a cancelled context) means none was.
func (u *Users) Authenticate(ctx context.Context, email, password string) (User, error) {
	if len(password) > MaxPasswordLen {
		return User{}, ErrInvalidCredentials
	}
	usr, err := u.ByEmail(ctx, email)
	if errors.Is(err, ErrNotFound) {
		if _, _, err := u.h.Verify(ctx, password, u.dummy); isNotChecked(err) {
			return User{}, err
		}
		return User{}, ErrInvalidCredentials
	}
	if err != nil {
		return User{}, err
	}
	ok, rehash, err := u.h.Verify(ctx, password, usr.passwordHash)
	if isNotChecked(err) {
		return User{}, err
	}
	if err != nil || !ok {
		return User{}, ErrInvalidCredentials
	}
	if rehash {
		// Upgrade the stored parameters; only if the password did not change meanwhile.
		if h, err := u.h.Hash(ctx, password); err == nil {
			_ = rehashScript.Run(ctx, u.rdb, []string{store.User(usr.ID)}, usr.passwordHash, h).Err()
		}
	}
	return usr, nil
}

// isNotChecked tells the errors of Verify that mean no hash was computed (no slot, or the
// caller gave up waiting) from a malformed stored hash, which is a failed check.
func isNotChecked(err error) bool {
	return errors.Is(err, ErrHashBusy) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Verifications is how many argon2id verifications this store has computed (the dummy hash
// of unknown emails included); authd exports it as a metric, and tests count brute-force
// attempts that reached the password check with it.
func (u *Users) Verifications() uint64 { return u.h.verifications.Load() }

var rehashScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'pw') == ARGV[1] then redis.call('HSET', KEYS[1], 'pw', ARGV[2]) end
return 1
`)

// setPasswordScript stores a new hash (ARGV[1]) and moves the generation on: to ARGV[2],
// the record's new generation, or one past the cached one, whichever is higher (0: no
// record).
var setPasswordScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[1], 'pw', ARGV[1])
local gen = (tonumber(redis.call('HGET', KEYS[1], 'gen')) or 0) + 1
if tonumber(ARGV[2]) > gen then gen = tonumber(ARGV[2]) end
redis.call('HSET', KEYS[1], 'gen', gen)
return gen
`)

// SetPassword replaces a password. It bumps the user's generation, which invalidates every
// dashboard session, bearer JWT and OAuth access token of the user at once (the verifier
// compares generations), deletes the sessions and revokes every OAuth authorization, so no
// refresh token survives either.
func (u *Users) SetPassword(ctx context.Context, id, password string) error {
	if err := CheckPasswordPolicy(password); err != nil {
		return err
	}
	hash, err := u.h.Hash(ctx, password)
	if err != nil {
		return err
	}
	var recorded int64
	if u.record != nil {
		if _, err := u.Get(ctx, id); err != nil { // cached again if Redis lost it
			return err
		}
		if recorded, err = u.record.setPassword(ctx, id, hash); err != nil {
			return err
		}
	}
	gen, err := setPasswordScript.Run(ctx, u.rdb, []string{store.User(id)}, hash, recorded).Int64()
	if err != nil {
		return err
	}
	if gen < 0 {
		return ErrNotFound
	}
	return u.invalidateAll(ctx, id, "password_change")
}

func (u *Users) invalidateAll(ctx context.Context, id, reason string) error {
	sessions, err := u.rdb.SMembers(ctx, store.UserSessions(id)).Result()
	if err != nil {
		return err
	}
	// Each session is a key of its own slot: one DEL each, the user's set of them last, so
	// that a failure leaves the set for the next password change to go through again.
	if _, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, h := range sessions {
			p.Del(ctx, store.Session(h))
		}
		p.Del(ctx, store.UserSessions(id))
		return nil
	}); err != nil {
		return err
	}
	auths, err := u.rdb.SMembers(ctx, store.UserAuthorizations(id)).Result()
	if err != nil {
		return err
	}
	for _, a := range auths {
		if err := u.oauth.revoke(ctx, a, reason); err != nil {
			return err
		}
	}
	return nil
}

// TierChange reports what SetTier did.
type TierChange struct {
	From, To Tier
	// Paused are the live bots paused with reason Downgrade; Resumed those whose Downgrade
	// pause was lifted.
	Paused, Resumed []string
}

// SetTier changes a user's tier and keeps their live bots in line with it (decision 12 in
// docs/decisions.md): without live trading every live bot is paused with reason Downgrade;
// with it, Downgrade pauses (and only those) are lifted. See LiveBotGate.
func (u *Users) SetTier(ctx context.Context, id, slug string) (TierChange, error) {
	to, err := TierOf(slug)
	if err != nil {
		return TierChange{}, err
	}
	usr, err := u.Get(ctx, id)
	if err != nil {
		return TierChange{}, err
	}
	if u.record != nil {
		if err := u.record.set(ctx, id, "tier", to.Slug); err != nil {
			return TierChange{}, err
		}
	}
	if err := u.rdb.HSet(ctx, store.User(id), fUserTier, to.Slug).Err(); err != nil {
		return TierChange{}, err
	}
	ch := TierChange{From: usr.Tier, To: to}
	gate := NewLiveBotGate(u.rdb)
	if to.Capabilities.AllowLiveTrading {
		ch.Resumed, err = gate.Resume(ctx, usr.Email)
	} else {
		ch.Paused, err = gate.Pause(ctx, usr.Email)
	}
	return ch, err
}

// SetTelegramLinked records whether the user linked Telegram.
func (u *Users) SetTelegramLinked(ctx context.Context, id string, linked bool) error {
	v := "0"
	if linked {
		v = "1"
	}
	if _, err := u.Get(ctx, id); err != nil { // ErrNotFound, or cached again from the record
		return err
	}
	if u.record != nil {
		if err := u.record.set(ctx, id, "telegram_linked", linked); err != nil {
			return err
		}
	}
	return u.rdb.HSet(ctx, store.User(id), fUserTelegram, v).Err()
}

// EnsureResult says what Ensure did.
type EnsureResult string

// Ensure results.
const (
	EnsureCreated   EnsureResult = "created"
	EnsureUpdated   EnsureResult = "updated"
	EnsureUnchanged EnsureResult = "unchanged"
)

// Ensure makes an account match n, for bootstrapping: it creates the user when the email is
// unknown (with n.Wallet as the starting balance); for an existing user it sets the tier
// when it differs and the password when it does not verify, and leaves the wallet alone
// (crediting again would not be idempotent). Running it twice changes nothing.
func (u *Users) Ensure(ctx context.Context, n NewUser) (User, EnsureResult, error) {
	usr, err := u.ByEmail(ctx, n.Email)
	if errors.Is(err, ErrNotFound) {
		usr, err = u.Create(ctx, n)
		if errors.Is(err, ErrEmailTaken) { // lost a race with another Ensure
			return u.Ensure(ctx, n)
		}
		return usr, EnsureCreated, err
	}
	if err != nil {
		return User{}, "", err
	}
	res := EnsureUnchanged
	if n.Tier != "" {
		t, err := TierOf(n.Tier)
		if err != nil {
			return User{}, "", err
		}
		if t.Slug != usr.Tier.Slug {
			if _, err := u.SetTier(ctx, usr.ID, t.Slug); err != nil {
				return User{}, "", err
			}
			res = EnsureUpdated
		}
	}
	if n.Password != "" {
		ok, _, err := u.h.Verify(ctx, n.Password, usr.passwordHash)
		if err != nil || !ok {
			if err := u.SetPassword(ctx, usr.ID, n.Password); err != nil {
				return User{}, "", err
			}
			res = EnsureUpdated
		}
	}
	if res == EnsureUpdated {
		usr, err = u.Get(ctx, usr.ID)
	}
	return usr, res, err
}

// List returns every account (admin CLI): those of the set of all accounts whose email
// leads to them (an account whose creation stopped before its email claim does not exist).
func (u *Users) List(ctx context.Context) ([]User, error) {
	ids, err := u.rdb.SMembers(ctx, store.Users()).Result()
	if err != nil {
		return nil, err
	}
	var out []User
	for _, id := range ids {
		usr, err := u.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, usr)
	}
	owners := make([]*redis.StringCmd, len(out))
	if _, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, usr := range out {
			owners[i] = p.Get(ctx, store.UserByEmail(usr.Email))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	listed := out[:0]
	for i, usr := range out {
		if owners[i].Val() == usr.ID {
			listed = append(listed, usr)
		}
	}
	return listed, nil
}

// Backfill writes to the record every account Redis holds that the record does not (made
// before the accounts had a record), and returns how many; nothing without a record. The
// accounts' Strategy Lab wallets that Redis holds alone go to the record too
// (wallet.Wallets.Backfill), first: listing the accounts reads their balances.
func (u *Users) Backfill(ctx context.Context) (int, error) {
	if u.record == nil {
		return 0, nil
	}
	ids, err := u.rdb.SMembers(ctx, store.Users()).Result()
	if err != nil {
		return 0, err
	}
	if _, err := u.Wallets.Backfill(ctx, ids); err != nil {
		return 0, fmt.Errorf("wallets: %w", err)
	}
	all, err := u.List(ctx)
	if err != nil {
		return 0, err
	}
	return u.record.backfill(ctx, all)
}

// Restore copies into Redis every account of the record that Redis does not hold, unless
// Redis carries the mark of an earlier copy (store.UsersCached), and reports how many it
// copied. Run every few seconds by authd and mcpd, it puts every account back after Redis
// lost them (FLUSHALL, a new instance), so what reads accounts from Redis alone (the
// manager's tier check of live bots, a token's identity) finds them again without waiting
// for each owner's next sign-in. An account Redis holds is left as it is (its generation
// is never moved back). Nothing without a record.
func (u *Users) Restore(ctx context.Context) (int, error) {
	if u.record == nil {
		return 0, nil
	}
	if n, err := u.rdb.Exists(ctx, store.UsersCached()).Result(); err != nil || n == 1 {
		return 0, err
	}
	copied := 0
	err := u.record.all(ctx, func(batch []User) error {
		held := make([]*redis.IntCmd, len(batch))
		if _, err := u.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, usr := range batch {
				held[i] = p.Exists(ctx, store.User(usr.ID))
			}
			return nil
		}); err != nil {
			return err
		}
		for i, usr := range batch {
			if held[i].Val() == 1 {
				continue
			}
			if err := u.recache(ctx, usr); err != nil {
				return err
			}
			copied++
		}
		return nil
	})
	if err != nil {
		return copied, err
	}
	return copied, u.rdb.Set(ctx, store.UsersCached(), u.now().UTC().Format(time.RFC3339), 0).Err()
}
