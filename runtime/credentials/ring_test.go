package credentials_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
)

// Fixed keys (test only) and credentials that must never show in an error.
var (
	key1  = bytes.Repeat([]byte{0x11, 0x5a, 0xc3, 0x7e}, 8)
	key2  = bytes.Repeat([]byte{0x22, 0x9b, 0x04, 0xe1}, 8)
	key3  = bytes.Repeat([]byte{0x33, 0x17, 0x88, 0xfd}, 8)
	creds = exchange.Credentials{APIKey: "AK-plain-0123456789", APISecret: "SK-plain-very-secret-value", Passphrase: "pp-plain-pass"}
	aadA  = credentials.AAD("3c1e9d2a-0000-4000-8000-00000000000a")
	aadB  = credentials.AAD("3c1e9d2a-0000-4000-8000-00000000000b")
)

func ring(t *testing.T, current []byte, previous ...[]byte) *credentials.Ring {
	t.Helper()
	r, err := credentials.NewRing(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// secretsIn lists every form in which key material or plaintext could leak into a message.
func secretsIn(keys ...[]byte) []string {
	out := []string{creds.APIKey, creds.APISecret, creds.Passphrase}
	for _, k := range keys {
		out = append(out, string(k), hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k),
			base64.RawURLEncoding.EncodeToString(k), base64.StdEncoding.EncodeToString(k)[:16],
			strings.TrimSuffix(fmt.Sprint(k[:8]), "]"), fmt.Sprintf("%#v", k[:8])[:30])
	}
	return out
}

func assertClean(t *testing.T, what string, msg string, keys ...[]byte) {
	t.Helper()
	for _, s := range secretsIn(keys...) {
		if strings.Contains(msg, s) {
			t.Fatalf("%s leaks secret material: %q", what, msg)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	r := ring(t, key1)
	blob, err := r.SealCredentials(creds, aadA)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.OpenCredentials(blob, aadA)
	if err != nil || got != creds {
		t.Fatalf("open = %v, %v", got.APIKey == creds.APIKey, err)
	}
	assertClean(t, "blob", blob, key1)

	// Format: v1:<keyID>:<base64(nonce|ciphertext|tag)>.
	parts := strings.Split(blob, ":")
	if len(parts) != 3 || parts[0] != "v1" || parts[1] != credentials.KeyID(key1) || parts[1] != r.CurrentKeyID() {
		t.Fatalf("blob header = %q", parts[:2])
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	if id, err := credentials.BlobKeyID(blob); err != nil || id != r.CurrentKeyID() {
		t.Fatalf("BlobKeyID = %q, %v", id, err)
	}
	// A fresh nonce every time: the same plaintext never seals to the same blob.
	again, _ := r.SealCredentials(creds, aadA)
	if again == blob {
		t.Fatal("two seals produced the same blob (nonce reuse)")
	}
	raw2, _ := base64.StdEncoding.DecodeString(strings.Split(again, ":")[2])
	if bytes.Equal(raw[:12], raw2[:12]) {
		t.Fatal("nonce reused")
	}

	// Empty fields and non-ASCII survive; no passphrase stays no passphrase.
	for _, c := range []exchange.Credentials{{APIKey: "k", APISecret: "s"}, {APIKey: "ключ", APISecret: strings.Repeat("x", 5000), Passphrase: "p:p"}} {
		b, err := r.SealCredentials(c, aadB)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.OpenCredentials(b, aadB); err != nil || got != c {
			t.Fatalf("round trip of %d-byte secret failed: %v", len(c.APISecret), err)
		}
	}

	// Raw Seal/Open too.
	b, err := r.Seal([]byte("hello"), []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := r.Open(b, []byte("ad")); err != nil || string(pt) != "hello" {
		t.Fatalf("open = %q, %v", pt, err)
	}
	if !credentials.Equal(creds, got) || credentials.Equal(creds, exchange.Credentials{APIKey: creds.APIKey, APISecret: "other"}) {
		t.Fatal("Equal")
	}
}

// Every character of the blob, and every byte of the nonce, ciphertext and tag, is
// authenticated: any edit fails closed.
func TestTamperFailsClosed(t *testing.T) {
	r := ring(t, key1)
	blob, err := r.SealCredentials(creds, aadA)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for i := range blob {
		for _, c := range []byte{'A', 'b', '0', ':', '/'} {
			if blob[i] == c {
				continue
			}
			edited := blob[:i] + string(c) + blob[i+1:]
			if _, err := r.OpenCredentials(edited, aadA); err == nil {
				t.Fatalf("blob with character %d changed to %q opened", i, c)
			} else {
				msgs = append(msgs, err.Error())
			}
		}
	}
	head := blob[:strings.LastIndex(blob, ":")+1]
	raw, _ := base64.StdEncoding.DecodeString(blob[len(head):])
	regions := map[string][2]int{"nonce": {0, 12}, "ciphertext": {12, len(raw) - 16}, "tag": {len(raw) - 16, len(raw)}}
	for name, reg := range regions {
		for i := reg[0]; i < reg[1]; i++ {
			for _, bit := range []byte{0x01, 0x80} {
				b := bytes.Clone(raw)
				b[i] ^= bit
				_, err := r.OpenCredentials(head+base64.StdEncoding.EncodeToString(b), aadA)
				if !errors.Is(err, credentials.ErrDecrypt) {
					t.Fatalf("%s byte %d flipped: err = %v, want ErrDecrypt", name, i, err)
				}
				msgs = append(msgs, err.Error())
			}
		}
	}
	for _, edited := range []string{
		blob[:len(blob)-4], // truncated
		blob + "AAAA",      // extended
		head + base64.StdEncoding.EncodeToString(raw[:27]), // shorter than nonce+tag
		"v2" + blob[2:],                   // another version
		strings.Replace(blob, ":", "", 1), // no header
		"",
		"v1::" + blob[len(head):],
		"v1:" + strings.ToUpper(r.CurrentKeyID()) + ":" + blob[len(head):],
	} {
		if _, err := r.OpenCredentials(edited, aadA); err == nil {
			t.Fatalf("edited blob %q opened", edited)
		} else {
			msgs = append(msgs, err.Error())
		}
	}
	for _, m := range msgs {
		assertClean(t, "tamper error", m, key1)
	}
}

func TestWrongConnectionDoesNotOpen(t *testing.T) {
	r := ring(t, key1)
	blob, _ := r.SealCredentials(creds, aadA)
	for _, aad := range [][]byte{aadB, nil, []byte(""), append(bytes.Clone(aadA), 'x')} {
		if _, err := r.OpenCredentials(blob, aad); !errors.Is(err, credentials.ErrDecrypt) {
			t.Fatalf("aad %q: err = %v, want ErrDecrypt", aad, err)
		}
	}
	if _, err := r.SealCredentials(creds, nil); err == nil {
		t.Fatal("sealed credentials bound to nothing")
	}
}

func TestUnknownKeyAndRotation(t *testing.T) {
	old := ring(t, key1)
	blob, _ := old.SealCredentials(creds, aadA)

	if _, err := ring(t, key2).OpenCredentials(blob, aadA); !errors.Is(err, credentials.ErrUnknownKey) {
		t.Fatalf("other ring: err = %v, want ErrUnknownKey", err)
	}
	var nilRing *credentials.Ring
	if _, err := nilRing.OpenCredentials(blob, aadA); !errors.Is(err, credentials.ErrUnknownKey) {
		t.Fatalf("nil ring: err = %v", err)
	}
	if _, err := nilRing.SealCredentials(creds, aadA); err == nil {
		t.Fatal("nil ring sealed")
	}
	if old.NeedsRotation(blob) {
		t.Fatal("blob of the current key needs rotation")
	}

	// Rotation: the new ring's current key is key2, key1 stays for opening.
	rotated := ring(t, key2, key1, key3)
	if got := rotated.KeyIDs(); len(got) != 3 || got[0] != credentials.KeyID(key2) || got[1] != credentials.KeyID(key1) {
		t.Fatalf("KeyIDs = %v", got)
	}
	got, err := rotated.OpenCredentials(blob, aadA)
	if err != nil || got != creds {
		t.Fatalf("previous key does not open: %v", err)
	}
	if !rotated.NeedsRotation(blob) || !rotated.NeedsRotation("garbage") {
		t.Fatal("blob of a previous key does not need rotation")
	}
	resealed, err := rotated.SealCredentials(got, aadA)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.NeedsRotation(resealed) {
		t.Fatal("re-sealed blob still needs rotation")
	}
	if id, _ := credentials.BlobKeyID(resealed); id != credentials.KeyID(key2) {
		t.Fatalf("re-sealed with %s", id)
	}

	// The old key dropped: the new blob opens, the old one does not, and the old key alone
	// cannot open the new blob.
	final := ring(t, key2)
	if _, err := final.OpenCredentials(resealed, aadA); err != nil {
		t.Fatal(err)
	}
	if _, err := final.OpenCredentials(blob, aadA); !errors.Is(err, credentials.ErrUnknownKey) {
		t.Fatalf("dropped key still opens: %v", err)
	}
	if _, err := old.OpenCredentials(resealed, aadA); !errors.Is(err, credentials.ErrUnknownKey) {
		t.Fatalf("old ring opens the re-sealed blob: %v", err)
	}

	// A previous key equal to the current one is ignored.
	if ids := ring(t, key1, key1).KeyIDs(); len(ids) != 1 {
		t.Fatalf("duplicate kept: %v", ids)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := map[string][]byte{
		"raw":          key1,
		"base64":       []byte(base64.StdEncoding.EncodeToString(key1) + "\n"),
		"base64-raw":   []byte("  " + base64.RawStdEncoding.EncodeToString(key1) + "\r\n"),
		"base64-url":   []byte(base64.URLEncoding.EncodeToString(key1)),
		"base64-url-r": []byte(base64.RawURLEncoding.EncodeToString(key1)),
	}
	for name, data := range good {
		r, err := credentials.LoadRing(write(name, data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.CurrentKeyID() != credentials.KeyID(key1) {
			t.Fatalf("%s: decoded another key", name)
		}
	}

	zero := make([]byte, 32)
	bad := map[string][]byte{
		"empty":        nil,
		"raw-31":       key1[:31],
		"raw-33":       append(bytes.Clone(key1), 0x01),
		"base64-16":    []byte(base64.StdEncoding.EncodeToString(key1[:16])),
		"base64-48":    []byte(base64.StdEncoding.EncodeToString(append(bytes.Clone(key1), key2[:16]...))),
		"hex":          []byte(hex.EncodeToString(key1)),
		"text":         []byte("correct horse battery staple, not a key"),
		"zero-raw":     zero,
		"zero-base64":  []byte(base64.StdEncoding.EncodeToString(zero)),
		"same-bytes":   bytes.Repeat([]byte{0x41}, 32),
		"base64-noise": []byte(base64.StdEncoding.EncodeToString(key1)[:43] + "!"),
	}
	for name, data := range bad {
		p := write(name, data)
		_, err := credentials.LoadRing(p)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
		assertClean(t, name, err.Error(), key1, key2)
		if len(data) >= 8 && strings.Contains(err.Error(), string(data[:8])) {
			t.Fatalf("%s: error shows the file's content: %v", name, err)
		}
	}
	if _, err := credentials.LoadRing(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
	if _, err := credentials.LoadRing(dir); err == nil {
		t.Fatal("directory accepted")
	}
	if _, err := credentials.LoadRing(write("ok", key1), write("prev-bad", key1[:5])); err == nil ||
		!strings.Contains(err.Error(), "prev-bad") {
		t.Fatalf("bad previous key: %v", err)
	}
	if _, err := credentials.NewRing(key1[:16]); err == nil {
		t.Fatal("16-byte key accepted (AES-128 is not AES-256)")
	}

	// Flags: none means no ring; previous without current is an error; a list is split.
	if r, err := credentials.FromFlags("", ""); r != nil || err != nil {
		t.Fatalf("no flags: %v, %v", r, err)
	}
	if _, err := credentials.FromFlags("", write("p", key2)); err == nil {
		t.Fatal("previous without current accepted")
	}
	r, err := credentials.FromFlags(write("c", key2), " "+write("p1", key1)+", "+write("p3", key3)+",")
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.KeyIDs(); len(ids) != 3 || ids[0] != credentials.KeyID(key2) {
		t.Fatalf("ids = %v", ids)
	}
}

// No error, and no printed form of a Ring, shows key material or plaintext.
func TestNothingLeaks(t *testing.T) {
	r := ring(t, key1, key2)
	blob, _ := r.SealCredentials(creds, aadA)
	var msgs []string
	add := func(err error) {
		if err != nil {
			msgs = append(msgs, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		}
	}
	_, err := r.OpenCredentials(blob, aadB)
	add(err)
	_, err = ring(t, key3).OpenCredentials(blob, aadA)
	add(err)
	_, err = r.OpenCredentials(blob[:len(blob)-2], aadA)
	add(err)
	notCreds, _ := r.Seal([]byte(creds.APISecret), aadA) // a blob that is not a credentials layout
	_, err = r.OpenCredentials(notCreds, aadA)
	if !errors.Is(err, credentials.ErrMalformed) {
		t.Fatalf("foreign plaintext: err = %v", err)
	}
	add(err)
	_, err = credentials.NewRing(key1[:31])
	add(err)
	_, err = credentials.ParseKey(append(bytes.Clone(key1), '\n', 'x'))
	add(err)
	if len(msgs) < 6 {
		t.Fatalf("only %d messages", len(msgs))
	}
	msgs = append(msgs, fmt.Sprint(r), fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r), fmt.Sprintf("%v", *r),
		fmt.Sprintf("%+v", creds), fmt.Sprintf("%#v", creds))
	for _, m := range msgs {
		assertClean(t, "message", m, key1, key2, key3)
	}
}

func TestTradePermissionMatchesPermissionNames(t *testing.T) {
	if got := (exchange.Permissions{SpotTrade: true}).List(); len(got) != 1 || got[0] != credentials.TradePermission(exchange.Spot) {
		t.Fatalf("spot = %v", got)
	}
	if got := (exchange.Permissions{FuturesTrade: true}).List(); len(got) != 1 || got[0] != credentials.TradePermission(exchange.Futures) {
		t.Fatalf("futures = %v", got)
	}
}
