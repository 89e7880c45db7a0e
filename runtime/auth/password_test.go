package auth

import (
	"context"
	"strings"
	"testing"
)

func TestPasswordHashVerify(t *testing.T) {
	ctx := context.Background()
	h := newHasher(TestKDF, 2, 0)
	enc, err := h.Hash(ctx, "s3cret passphrase")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("encoding %q", enc)
	}
	if strings.Contains(enc, "s3cret") {
		t.Fatal("hash contains the password")
	}
	if ok, rehash, err := h.Verify(ctx, "s3cret passphrase", enc); !ok || rehash || err != nil {
		t.Fatalf("verify = %v %v %v", ok, rehash, err)
	}
	if ok, _, _ := h.Verify(ctx, "s3cret passphrasE", enc); ok {
		t.Fatal("wrong password accepted")
	}
	enc2, _ := h.Hash(ctx, "s3cret passphrase")
	if enc2 == enc {
		t.Fatal("salt not random")
	}
	// Parameters that differ from the current ones verify and ask for a rehash.
	if ok, rehash, _ := newHasher(KDFParams{MemoryKiB: 2048, Time: 1, Threads: 1}, 1, 0).Verify(ctx, "s3cret passphrase", enc); !ok || !rehash {
		t.Fatalf("old params: ok=%v rehash=%v", ok, rehash)
	}
}

func TestPasswordDecodeRefusesBadOrHostileHashes(t *testing.T) {
	h := newHasher(TestKDF, 1, 0)
	for _, enc := range []string{
		"", "plain", "$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=16$m=1024,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5", // 4 GiB
		"$argon2id$v=19$m=1024,t=99,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=1024,t=1,p=0$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
	} {
		if ok, _, err := h.Verify(context.Background(), "x", enc); ok || err == nil {
			t.Errorf("%q: ok=%v err=%v", enc, ok, err)
		}
	}
}

func TestPasswordPolicy(t *testing.T) {
	if CheckPasswordPolicy("short") == nil {
		t.Error("short password accepted")
	}
	if CheckPasswordPolicy(strings.Repeat("a", MaxPasswordLen+1)) == nil {
		t.Error("huge password accepted")
	}
	if CheckPasswordPolicy("long enough pw") != nil {
		t.Error("good password refused")
	}
}

func TestDefaultKDFIsMemoryHard(t *testing.T) {
	if DefaultKDF.MemoryKiB < 19*1024 || DefaultKDF.Time < 1 {
		t.Fatalf("DefaultKDF %+v is below OWASP's argon2id minimum (19 MiB, t=2 or 46 MiB, t=1)", DefaultKDF)
	}
}

// The dummy hash an unknown account is verified against costs what a real one costs (same
// parameters, so the same argon2id work) and matches no password.
func TestDummyHashCostsWhatARealOneCosts(t *testing.T) {
	h := newHasher(TestKDF, 1, 1)
	d := h.Dummy()
	p, salt, key, err := decodePHC(d)
	if err != nil {
		t.Fatal(err)
	}
	if p != TestKDF || len(salt) != saltLen || len(key) != keyLen {
		t.Fatalf("dummy %s: params %+v, salt %d bytes, key %d bytes", d, p, len(salt), len(key))
	}
	if d == h.Dummy() {
		t.Fatal("two dummies are equal: the salt is not random")
	}
	before := h.verifications.Load()
	ok, rehash, err := h.Verify(t.Context(), "", d)
	if err != nil || ok || rehash {
		t.Fatalf("Verify(dummy) = %v, %v, %v; want no match, no rehash", ok, rehash, err)
	}
	if h.verifications.Load() != before+1 {
		t.Fatal("verifying the dummy computed no argon2id")
	}
}
