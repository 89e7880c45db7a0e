package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/golang-jwt/jwt/v5"
)

// MinKeyLen is the shortest HS256 signing key accepted (RFC 7518 §3.2: at least the hash size).
const MinKeyLen = 32

// Keyring holds the HS256 signing key and, during a rotation, the previous one. Tokens are
// signed with the current key and carry its kid; the verifier accepts either key by kid, so
// tokens signed before a rotation stay valid until they expire (at most 60 minutes for OAuth
// access tokens, 30 days for bearer JWTs) and the previous key can then be dropped.
type Keyring struct {
	current  signingKey
	previous *signingKey
}

type signingKey struct {
	kid    string
	secret []byte
}

func newSigningKey(secret []byte) (signingKey, error) {
	if len(secret) < MinKeyLen {
		return signingKey{}, fmt.Errorf("JWT key is %d bytes; at least %d are needed", len(secret), MinKeyLen)
	}
	// The kid names the key without revealing it: a truncated hash under a fixed label.
	sum := sha256.Sum256(append([]byte("sigops jwt kid\x00"), secret...))
	return signingKey{kid: base64.RawURLEncoding.EncodeToString(sum[:9]), secret: bytes.Clone(secret)}, nil
}

// NewKeyring returns a keyring with current and an optional previous key.
func NewKeyring(current []byte, previous []byte) (*Keyring, error) {
	cur, err := newSigningKey(current)
	if err != nil {
		return nil, err
	}
	k := &Keyring{current: cur}
	if len(previous) > 0 {
		prev, err := newSigningKey(previous)
		if err != nil {
			return nil, fmt.Errorf("previous key: %w", err)
		}
		if prev.kid != cur.kid {
			k.previous = &prev
		}
	}
	return k, nil
}

// LoadKeyring reads the keys from files (a mounted Secret); surrounding whitespace is
// trimmed, the rest is the key. previousFile may be empty.
func LoadKeyring(currentFile, previousFile string) (*Keyring, error) {
	if currentFile == "" {
		return nil, errors.New("no JWT key file")
	}
	cur, err := os.ReadFile(currentFile)
	if err != nil {
		return nil, fmt.Errorf("read JWT key: %w", err)
	}
	var prev []byte
	if previousFile != "" {
		if prev, err = os.ReadFile(previousFile); err != nil {
			return nil, fmt.Errorf("read previous JWT key: %w", err)
		}
		prev = bytes.TrimSpace(prev)
	}
	return NewKeyring(bytes.TrimSpace(cur), prev)
}

// KID is the current key's identifier.
func (k *Keyring) KID() string { return k.current.kid }

func (k *Keyring) sign(claims jwt.Claims, typ string) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	t.Header["kid"] = k.current.kid
	t.Header["typ"] = typ
	return t.SignedString(k.current.secret)
}

// keyFunc selects the verification key by kid, and only for HS256: the algorithm is pinned
// here as well as by jwt.WithValidMethods, so neither "none" nor a public-key algorithm
// (key confusion) can reach a key.
func (k *Keyring) keyFunc(t *jwt.Token) (any, error) {
	if t.Method != jwt.SigningMethodHS256 {
		return nil, fmt.Errorf("algorithm %v refused", t.Header["alg"])
	}
	kid, _ := t.Header["kid"].(string)
	switch {
	case kid == k.current.kid:
		return k.current.secret, nil
	case k.previous != nil && kid == k.previous.kid:
		return k.previous.secret, nil
	}
	return nil, errors.New("unknown key id")
}
