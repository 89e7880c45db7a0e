package store

// The audit journal of runtime/audit: every tool call that changes something, per user.
//
//	sigops:user:{<id>}:audit   stream  one entry per call: client, channel, tool, redacted
//	                                   arguments, outcome; entry IDs are the call's time in ms
//
// The stream sits in the slot of the user's own hash, so the one script that appends an
// entry, trims entries past the retention (XADD MINID) and sets the key's TTL touches one
// key. A user reads only their own stream, and the page size and retention bound what one
// read costs; a global stream would need a filter per read and a shared hot key.

// UserAudit is the audit journal stream of user id.
func UserAudit(userID string) string { return User(userID) + ":audit" }
