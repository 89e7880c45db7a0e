package auth

import (
	"context"
	"testing"
)

// BenchmarkVerifyCached is the verification of a token whose Redis facts are cached (the
// steady state of a busy token): HS256 signature, claims, one cache lookup.
func BenchmarkVerifyCached(b *testing.B) {
	for _, kind := range []string{KindOAuth, KindAPI} {
		b.Run(kind, func(b *testing.B) {
			f := newFixture(b)
			u, err := f.users.Create(context.Background(), NewUser{Email: "bench@example.com", Password: "correct horse battery"})
			if err != nil {
				b.Fatal(err)
			}
			tok := f.benchToken(b, u, kind)
			ctx := context.Background()
			if _, err := f.verifier.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := f.verifier.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		f := newFixture(b)
		u, _ := f.users.Create(context.Background(), NewUser{Email: "bench@example.com", Password: "correct horse battery"})
		tok := f.benchToken(b, u, KindOAuth)
		ctx := context.Background()
		_, _ = f.verifier.Verify(ctx, tok)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := f.verifier.Verify(ctx, tok); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkVerifyUncached is the first verification of a token each second: signature plus
// one pipelined Redis round trip on loopback.
func BenchmarkVerifyUncached(b *testing.B) {
	f := newFixture(b)
	u, _ := f.users.Create(context.Background(), NewUser{Email: "bench@example.com", Password: "correct horse battery"})
	tok := f.benchToken(b, u, KindOAuth)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.verifier.Purge()
		if _, err := f.verifier.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func (f *fixture) benchToken(b *testing.B, u User, kind string) string {
	if kind == KindAPI {
		it, err := f.issuer.IssueAPIToken(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		return it.Token
	}
	id := RandomToken(16)
	if _, err := f.oauth.CreateAuthorization(context.Background(), Authorization{ID: id, UserID: u.ID, ClientID: "c1",
		Scope: ScopeLive, Resource: testMCP, Gen: u.Generation}); err != nil {
		b.Fatal(err)
	}
	it, err := f.issuer.IssueAccessToken(AccessTokenRequest{UserID: u.ID, Gen: u.Generation, ClientID: "c1", Scope: ScopeLive,
		AuthorizationID: id, Audience: testMCP})
	if err != nil {
		b.Fatal(err)
	}
	return it.Token
}

// BenchmarkPasswordVerify is one login's argon2id cost with DefaultKDF.
func BenchmarkPasswordVerify(b *testing.B) {
	h := newHasher(DefaultKDF, 4, 0)
	enc, err := h.Hash(context.Background(), "correct horse battery")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if ok, _, _ := h.Verify(context.Background(), "correct horse battery", enc); !ok {
			b.Fatal("mismatch")
		}
	}
}
