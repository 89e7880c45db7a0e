// Package emails holds the one rule that makes e-mail addresses comparable, wherever one
// names a person: a user's login, the owner of a SignalBot, PaperAccount or
// ExchangeConnection, and the Redis keys indexed by them. Addresses are case-insensitive
// here and surrounding spaces are never part of one, so two spellings that differ only in
// those name the same owner everywhere, and the same key.
package emails

import "strings"

// Canonical is the form of an address that is stored, indexed and compared: trimmed of
// surrounding spaces, lower-cased.
func Canonical(addr string) string { return strings.ToLower(strings.TrimSpace(addr)) }

// Same reports whether a and b name the same address.
func Same(a, b string) bool { return Canonical(a) == Canonical(b) }
