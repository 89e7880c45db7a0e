package store

import "fmt"

// VersionedHashLua is the Lua statement that writes a recorded copy of a hash back over
// Redis's own unless Redis's is at least as new: the hash KEYS[keyAt] is replaced by the
// field/value pairs ARGV[argAt+3] to ARGV[argAt+2+n] (n = ARGV[argAt+2]) when it is absent
// or its version field (named ARGV[argAt+1]; absent counts as 0) is below the recorded
// version ARGV[argAt] ("" records nothing). It sets the Lua local `written` to 1 when it
// wrote.
//
// A copy kept outside Redis (PostgreSQL, a Kubernetes status) is behind Redis while Redis
// is whole and ahead of it after a loss; the version says which is which, so both the
// restore from PostgreSQL and the projection from the status can run at any time.
func VersionedHashLua(keyAt, argAt int) string {
	return fmt.Sprintf(`
local written = 0
local version = tonumber(ARGV[%[2]d])
if version then
  local have = redis.call('HGET', KEYS[%[1]d], ARGV[%[2]d + 1])
  if redis.call('EXISTS', KEYS[%[1]d]) == 0 or (tonumber(have or '0') or 0) < version then
    local n = tonumber(ARGV[%[2]d + 2])
    redis.call('DEL', KEYS[%[1]d])
    redis.call('HSET', KEYS[%[1]d], unpack(ARGV, %[2]d + 3, %[2]d + 2 + n))
    written = 1
  end
end
`, keyAt, argAt)
}

// VersionedHashArgs are VersionedHashLua's arguments for fields (field, value, ...) at
// version under versionField; nil fields record nothing (the arguments still take their
// three places).
func VersionedHashArgs(versionField string, version int64, fields []any) []any {
	if len(fields) == 0 {
		return []any{"", "", 0}
	}
	return append([]any{version, versionField, len(fields)}, fields...)
}
