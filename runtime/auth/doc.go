// Package auth is the identity core of sigops: accounts and tiers (Users), dashboard
// sessions (Sessions), the signing keys (Keyring), bearer JWTs and OAuth access tokens
// (Issuer), the one token verifier every daemon uses (Verifier), the OAuth 2.1 authorization
// server's storage (OAuth) and the brute-force counters (Limiter). authd serves it over HTTP;
// mcpd and webhookd only need Verifier, ScopeAllows and the error helpers.
//
// Secrets never reach Redis or a log in the clear: passwords are argon2id hashes, cookies,
// codes, refresh tokens and client secrets are stored by their SHA-256 (they carry 256
// random bits, so a fast hash is enough), and keys name them by that hash.
package auth
