package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/sigops/sigops/runtime/errs"
)

// KDFParams are argon2id's cost parameters (RFC 9106).
type KDFParams struct {
	// MemoryKiB is the memory cost in KiB.
	MemoryKiB uint32
	// Time is the number of passes.
	Time uint32
	// Threads is the parallelism (lanes).
	Threads uint8
}

// DefaultKDF is what new passwords are hashed with: 64 MiB, 2 passes, 2 lanes, a 16-byte
// salt and a 32-byte key (above OWASP's argon2id minimums, RFC 9106's second recommended
// setting scaled to one login's budget). About 120 ms on the reference machine (2 vCPU
// EPYC, BenchmarkPasswordVerify); see docs/auth.md. Hashes with other parameters still verify and are re-hashed with these
// at the next successful login.
var DefaultKDF = KDFParams{MemoryKiB: 64 * 1024, Time: 2, Threads: 2}

// TestKDF is a cheap setting for tests only.
var TestKDF = KDFParams{MemoryKiB: 1024, Time: 1, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MinPasswordLen and MaxPasswordLen bound a password (characters / bytes).
	MinPasswordLen = 10
	MaxPasswordLen = 256
	// Bounds on stored parameters: a tampered record must not make a login use a gigabyte.
	maxStoredMemoryKiB = 1 << 20
	maxStoredTime      = 10
)

// ErrWeakPassword refuses a password outside the length bounds.
var ErrWeakPassword = fmt.Errorf("password must be %d to %d characters", MinPasswordLen, MaxPasswordLen)

// CheckPasswordPolicy refuses a password that is too short or too long.
func CheckPasswordPolicy(pw string) error {
	if utf8.RuneCountInString(pw) < MinPasswordLen || len(pw) > MaxPasswordLen {
		return ErrWeakPassword
	}
	return nil
}

// DefaultHashConcurrency and DefaultHashQueue bound the argon2id work of one process: at
// most 4 computations run at once (4 × 64 MiB with DefaultKDF), and at most 16 more wait for
// a slot. A waiter has at most 16 computations ahead of it, four rounds on four slots (about
// 0.5 s with DefaultKDF), so a login either starts soon or is refused at once with
// ErrHashBusy; it is never parked behind an unbounded queue.
const (
	DefaultHashConcurrency = 4
	DefaultHashQueue       = 16
)

// ErrHashBusy refuses a hash or verification at once because every slot is busy and the
// waiting queue is full. It is RATE_LIMITED (429) with a short Retry-After: the load is
// momentary, and nothing was checked, so the caller may simply try again.
var ErrHashBusy = &errs.Error{Code: errs.RateLimited, RetryAfter: time.Second,
	Message: "too many sign-ins are being checked right now; try again in a moment"}

// hasher bounds how many argon2id computations run at once: each takes MemoryKiB, so a
// burst of logins cannot exhaust memory; and how many wait, so a burst cannot pile up
// goroutines and latency either.
type hasher struct {
	params     KDFParams
	sem        chan struct{}
	maxWaiting int64
	waiting    atomic.Int64
	// verifications counts argon2id verifications actually computed (the dummy hash of an
	// unknown email included): what a brute-force limit is meant to bound.
	verifications atomic.Uint64
}

// newHasher: concurrency 0 means DefaultHashConcurrency; queue 0 means DefaultHashQueue and
// a negative queue means nobody waits.
func newHasher(p KDFParams, concurrency, queue int) *hasher {
	if concurrency <= 0 {
		concurrency = DefaultHashConcurrency
	}
	switch {
	case queue == 0:
		queue = DefaultHashQueue
	case queue < 0:
		queue = 0
	}
	return &hasher{params: p, sem: make(chan struct{}, concurrency), maxWaiting: int64(queue)}
}

// acquire takes a slot at once if one is free; otherwise it joins the waiting queue, or
// returns ErrHashBusy when the queue is full.
func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	default:
	}
	if h.waiting.Add(1) > h.maxWaiting {
		h.waiting.Add(-1)
		return ErrHashBusy
	}
	defer h.waiting.Add(-1)
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.sem }

// Hash returns the PHC string of pw: $argon2id$v=19$m=..,t=..,p=..$salt$key.
func (h *hasher) Hash(ctx context.Context, pw string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	p := h.params
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return encodePHC(p, salt, key), nil
}

// Verify checks pw against a PHC string in constant time; rehash reports that the stored
// parameters differ from the current ones.
func (h *hasher) Verify(ctx context.Context, pw, encoded string) (ok, rehash bool, err error) {
	p, salt, want, err := decodePHC(encoded)
	if err != nil {
		return false, false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, false, err
	}
	defer h.release()
	h.verifications.Add(1)
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	ok = subtle.ConstantTimeCompare(got, want) == 1
	return ok, p != h.params, nil
}

// Dummy is a PHC string with the hasher's parameters and random salt and key, for verifying
// against when there is no account: verifying it costs exactly what verifying a real hash
// costs (the work is argon2id over the given password and salt), and making it costs
// nothing, because no password needs to hash to its key.
func (h *hasher) Dummy() string {
	salt, key := make([]byte, saltLen), make([]byte, keyLen)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(key)
	return encodePHC(h.params, salt, key)
}

func encodePHC(p KDFParams, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

var errBadHash = errors.New("stored password hash is malformed")

func decodePHC(s string) (KDFParams, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return KDFParams{}, nil, nil, errBadHash
	}
	var p KDFParams
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return KDFParams{}, nil, nil, errBadHash
		}
		switch k {
		case "m":
			p.MemoryKiB = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return KDFParams{}, nil, nil, errBadHash
			}
			p.Threads = uint8(n)
		default:
			return KDFParams{}, nil, nil, errBadHash
		}
	}
	if p.MemoryKiB == 0 || p.MemoryKiB > maxStoredMemoryKiB || p.Time == 0 || p.Time > maxStoredTime || p.Threads == 0 {
		return KDFParams{}, nil, nil, errBadHash
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 {
		return KDFParams{}, nil, nil, errBadHash
	}
	return p, salt, key, nil
}
