package store

// Keys of exchange connections (runtime/credentials).
//
//	sigops:xconn:<uid>   hash   projection of one ExchangeConnection: exchange, owner, testnet,
//	                            endpoints, ready, reason, permissions, validatedAt, and while
//	                            Ready only, the API key sealed with the master key (AES-256-GCM)
//	                            and that key's ID. Clear credentials never enter Redis.
//
// The key has no hash tag: it is its own slot, and the one transaction on it (Save: drop
// the sealed key and write the fields) touches it alone.

// ExchangeConnection is the projection of one ExchangeConnection, by its Kubernetes UID.
func ExchangeConnection(uid string) string { return prefix + "xconn:" + uid }
