// Package credentials keeps exchange API keys encrypted at rest. The manager seals a
// connection's credentials with AES-256-GCM under a master key (a 32-byte key from a
// Kubernetes Secret mounted as a file) and projects only the sealed blob into Redis; the
// executor opens it in memory when it connects to the exchange. Redis never holds a key in
// clear, and no error of this package carries key material or plaintext.
//
// A Ring holds the current master key and any previous ones. Sealing always uses the
// current key; opening picks the key by the ID written in the blob, so blobs sealed before a
// rotation stay readable until they are re-sealed (NeedsRotation says which).
package credentials

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the master key length: AES-256.
const KeySize = 32

const (
	blobVersion = "v1"
	nonceSize   = 12 // 96-bit GCM nonce, random per seal
	tagSize     = 16
	keyIDBytes  = 8 // key IDs are 16 hex characters
)

// Errors of Open (test with errors.Is). None of them carries key material or plaintext.
var (
	// ErrMalformed: the blob is not a v1 blob (wrong version, key ID or encoding).
	ErrMalformed = errors.New("sealed credentials are malformed")
	// ErrUnknownKey: the blob was sealed with a master key this ring does not hold.
	ErrUnknownKey = errors.New("sealed credentials use a master key this process does not hold")
	// ErrDecrypt: authentication failed: the blob was altered, sealed for another
	// connection, or sealed with another key of the same ID (never in practice).
	ErrDecrypt = errors.New("sealed credentials cannot be opened (altered, or sealed for another connection)")
)

// encoding of the blob's body: standard base64, strict, so that no two encodings decode to
// the same bytes and any edit of the text is an edit of the authenticated bytes.
var encoding = base64.StdEncoding.Strict()

// Ring is a current master key and the previous ones still accepted for opening. It holds
// only AES-GCM instances, never the key bytes, and prints as its key IDs.
type Ring struct {
	current string
	keys    map[string]cipher.AEAD
	ids     []string // current first, then previous in the order given
}

// NewRing builds a ring from a current key and previous keys, each exactly KeySize bytes.
// A previous key equal to the current one (or to another previous key) is ignored. The
// caller may clear its slices afterwards.
func NewRing(current []byte, previous ...[]byte) (*Ring, error) {
	r := &Ring{keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{current}, previous...) {
		what := "current master key"
		if i > 0 {
			what = fmt.Sprintf("previous master key %d", i)
		}
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		id := KeyID(k)
		if _, dup := r.keys[id]; dup {
			continue
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		r.keys[id] = aead
		r.ids = append(r.ids, id)
		if i == 0 {
			r.current = id
		}
	}
	return r, nil
}

// LoadRing reads the current key and previous keys from files (Kubernetes Secrets mounted
// as files). Each file holds 32 raw bytes, or their base64 (standard or URL alphabet,
// padded or not; surrounding whitespace is ignored). Anything else is refused with an error
// that names the file and its length, never its content.
func LoadRing(currentFile string, previousFiles ...string) (*Ring, error) {
	if currentFile == "" {
		return nil, errors.New("no master key file given")
	}
	var keys [][]byte
	defer func() {
		for _, k := range keys {
			clear(k)
		}
	}()
	for _, f := range append([]string{currentFile}, previousFiles...) {
		k, err := ReadKeyFile(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return NewRing(keys[0], keys[1:]...)
}

// FromFlags is LoadRing for the manager's and executor's flags: --master-key-file and the
// comma-separated --previous-master-key-files. With no current file it returns nil and no
// error (no master key configured: exchange connections cannot be used); previous files
// without a current one are an error.
func FromFlags(currentFile, previousFiles string) (*Ring, error) {
	var prev []string
	for _, f := range strings.Split(previousFiles, ",") {
		if f = strings.TrimSpace(f); f != "" {
			prev = append(prev, f)
		}
	}
	if currentFile == "" {
		if len(prev) > 0 {
			return nil, errors.New("--previous-master-key-files needs --master-key-file")
		}
		return nil, nil
	}
	return LoadRing(currentFile, prev...)
}

// ReadKeyFile reads one master key file (see LoadRing). The caller should clear the
// returned key once it has built a Ring from it.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// The *PathError names the path and the OS reason only.
		return nil, fmt.Errorf("master key file: %w", err)
	}
	defer clear(data)
	k, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	return k, nil
}

// ParseKey decodes a master key: exactly KeySize raw bytes, or the base64 of KeySize bytes.
// Errors describe lengths only.
func ParseKey(data []byte) ([]byte, error) {
	if len(data) == KeySize {
		k := bytes.Clone(data)
		if err := checkKey(k); err != nil {
			clear(k)
			return nil, err
		}
		return k, nil
	}
	text := bytes.TrimSpace(data)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		buf := make([]byte, enc.DecodedLen(len(text)))
		n, err := enc.Strict().Decode(buf, text)
		if err == nil && n == KeySize {
			k := bytes.Clone(buf[:n])
			clear(buf)
			if err := checkKey(k); err != nil {
				clear(k)
				return nil, err
			}
			return k, nil
		}
		clear(buf)
	}
	return nil, fmt.Errorf("holds %d bytes, which are neither a %d-byte key nor its base64 "+
		"(make one with: head -c 32 /dev/urandom | base64)", len(data), KeySize)
}

// checkKey refuses keys of the wrong length and degenerate ones (every byte the same, such
// as an all-zero file), which no random source produces.
func checkKey(k []byte) error {
	if len(k) != KeySize {
		return fmt.Errorf("is %d bytes, want %d", len(k), KeySize)
	}
	if bytes.Count(k, k[:1]) == KeySize {
		return errors.New("is degenerate (every byte the same); generate it from a random source")
	}
	return nil
}

// KeyID is the short public name of a key: the first 8 bytes of a domain-separated SHA-256,
// in hex. It identifies the key in blobs, status and logs and reveals nothing usable of it.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("sigops master key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:keyIDBytes])
}

// CurrentKeyID is the ID of the key Seal uses.
func (r *Ring) CurrentKeyID() string { return r.current }

// KeyIDs are the IDs of every key the ring opens with, current first.
func (r *Ring) KeyIDs() []string { return append([]string(nil), r.ids...) }

// String shows key IDs only.
func (r *Ring) String() string {
	if r == nil {
		return "credentials.Ring(nil)"
	}
	return "credentials.Ring{current: " + r.current + ", keys: [" + strings.Join(r.ids, " ") + "]}"
}

// GoString shows key IDs only, for %#v.
func (r *Ring) GoString() string { return r.String() }

// Seal encrypts plaintext under the current key with a fresh random nonce, binding aad (and
// the blob's own version and key ID) to it. The result is "v1:<keyID>:<base64(nonce|ciphertext|tag)>".
func (r *Ring) Seal(plaintext, aad []byte) (string, error) {
	if r == nil || r.current == "" {
		return "", errors.New("no master key configured")
	}
	aead := r.keys[r.current]
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return "", fmt.Errorf("random nonce: %w", err)
	}
	head := header(r.current)
	ad := additionalData(head, aad)
	out = aead.Seal(out, out[:nonceSize], plaintext, ad)
	return head + encoding.EncodeToString(out), nil
}

// Open decrypts a blob of Seal with the key its ID names (current or previous) and the same
// aad. It fails closed: any change to any part of the blob, or another aad, is an error.
// The caller should clear the plaintext when done.
func (r *Ring) Open(blob string, aad []byte) ([]byte, error) {
	id, body, err := split(blob)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, ErrUnknownKey
	}
	aead, ok := r.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w (key ID %s)", ErrUnknownKey, id)
	}
	raw, err := encoding.DecodeString(body)
	if err != nil || len(raw) < nonceSize+tagSize {
		return nil, ErrMalformed
	}
	pt, err := aead.Open(nil, raw[:nonceSize], raw[nonceSize:], additionalData(header(id), aad))
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

// NeedsRotation reports whether blob should be re-sealed: it was sealed with a key other
// than the current one (or is not a valid blob at all).
func (r *Ring) NeedsRotation(blob string) bool {
	id, err := BlobKeyID(blob)
	return err != nil || r == nil || id != r.current
}

// BlobKeyID is the ID of the key a blob was sealed with.
func BlobKeyID(blob string) (string, error) {
	id, _, err := split(blob)
	return id, err
}

func header(keyID string) string { return blobVersion + ":" + keyID + ":" }

// additionalData authenticates the blob's header with the caller's aad, so that the version
// and key ID cannot be edited either.
func additionalData(head string, aad []byte) []byte {
	ad := make([]byte, 0, len(head)+len(aad))
	return append(append(ad, head...), aad...)
}

func split(blob string) (id, body string, err error) {
	parts := strings.SplitN(blob, ":", 3)
	if len(parts) != 3 || parts[0] != blobVersion || !validKeyID(parts[1]) || parts[2] == "" {
		return "", "", ErrMalformed
	}
	return parts[1], parts[2], nil
}

func validKeyID(s string) bool {
	if len(s) != 2*keyIDBytes {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
