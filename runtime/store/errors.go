package store

import "github.com/redis/go-redis/v9"

// Redis answers some conditions only as error text. The tests of that text live here, so
// that no other package matches Redis error strings.

// IsBusyGroup reports Redis's answer to XGROUP CREATE when the group exists already.
func IsBusyGroup(err error) bool { return redis.HasErrorPrefix(err, "BUSYGROUP") }

// IsNoGroup reports that a stream or its consumer group does not exist (deleted by FLUSHDB
// or by hand).
func IsNoGroup(err error) bool { return redis.HasErrorPrefix(err, "NOGROUP") }

// IsOutOfMemory reports a write Redis refused because maxmemory is reached (policy
// noeviction).
func IsOutOfMemory(err error) bool { return redis.HasErrorPrefix(err, "OOM") }

// IsNoSuchKey reports Redis's answer to RENAME (and RENAMENX) of a key that does not exist.
func IsNoSuchKey(err error) bool { return redis.HasErrorPrefix(err, "no such key") }
