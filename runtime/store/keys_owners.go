package store

import "github.com/sigops/sigops/runtime/emails"

// Owner indexes of accounts (runtime/owners, written by the PaperAccount and
// ExchangeConnection controllers through runtime/exchange/paper and runtime/credentials).
//
//	sigops:owner:<email>:paper   set  paper account IDs (Kubernetes UIDs) per owner
//	sigops:owner:<email>:xconn   set  exchange connection UIDs per owner
//
// Each set has no hash tag: it is its own slot, touched only by single-key commands
// (SADD, SREM, SMEMBERS). Adding, moving and removing an account are sequences of
// single-slot steps; the account's own hash notes an owner being replaced, so that a crash
// between the steps is completed by the next write (runtime/owners). Readers check the
// owner named in the account's hash, so a member left behind by a crash shows nothing.

// OwnerPaperAccounts is the set of paper account IDs of one owner, by canonical email.
func OwnerPaperAccounts(owner string) string {
	return prefix + "owner:" + emails.Canonical(owner) + ":paper"
}

// OwnerConnections is the set of exchange connection UIDs of one owner, by canonical email.
func OwnerConnections(owner string) string {
	return prefix + "owner:" + emails.Canonical(owner) + ":xconn"
}
