package egress

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries a delivery's signature.
const SignatureHeader = "Sigops-Signature"

// A signature is "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the
// destination's secret>". The time is inside what is signed, so a receiver that refuses
// old times (Verify's tolerance) refuses a replayed delivery; v1 names the scheme, so a
// later one can be sent beside it. The few lines are written here rather than taken from a
// library: the scheme is sigops's own (the receivers' documentation states it, with a
// recipe, in docs/notifications.md), and HMAC-SHA256 is the standard library's.

// Sign is the SignatureHeader value of body sent at t under secret.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("signature does not match")
	ErrStale        = errors.New("signature too old")
	ErrMalformed    = errors.New("malformed signature header")
)

// Verify checks header (a SignatureHeader value) against body and secret, and that its time
// is within tolerance of now: what a receiver does, and what the tests hold Sign to. Any
// of several v1 values may match (a secret being rotated).
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformed
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}

// NewSecret is a destination's signing secret: 32 random bytes, as the text the user is
// shown once ("whsec_" and their unpadded base64url), which is also the key Sign takes.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b), nil
}
