package store

// Keys of the history archive (runtime/archive): the facts a partition's scripts commit
// (trades, order records, results) are appended, in the same script as the write they
// record, to the partition's archive stream, which the archiver copies to PostgreSQL and
// trims up to what PostgreSQL has committed.
//
//	sigops:archive:fence string   the archiver's fence write (a second's life)
//	sigops:restored:{N}  string   partition N's book state is in Redis (restored or nothing to restore)
//	sigops:restoring:{N} string   the token of a restore of partition N under way
//	sigops:archive:{N}   stream   facts of partition N not yet trimmed: fields k (kind: trade,
//	                              order, result, audit, state, purge), v (the fact's JSON, as the book stores it),
//	                              and for a result s (its signal index entry) and at
//	                              (when the intake accepted the signal, ms)

// ArchiveFence is a short-lived key the archiver writes before it copies, so that its WAIT
// has a write of its own to count replicas for: every entry it read was written before it.
func ArchiveFence() string { return prefix + "archive:fence" }

// Archive is the archive stream of partition p, in the partition's slot.
func Archive(partition int) string { return prefix + "archive:" + partitionTag(partition) }

// ArchiveOf is the archive stream of a bot's partition.
func ArchiveOf(botID string) string { return Archive(PartitionOf(botID)) }

// The kinds of fact an archive entry carries (its field k).
const (
	ArchiveTrade  = "trade"
	ArchiveOrder  = "order"
	ArchiveResult = "result"
	// ArchiveAudit is an audit journal entry (runtime/audit), appended to the archive
	// stream of its user's partition.
	ArchiveAudit = "audit"
	// ArchiveState is a bot's book state after a commit (runtime/bookstate): what a lost
	// Redis gets back from PostgreSQL.
	ArchiveState = "state"
	// ArchivePurge is a deleted bot: its recorded book state is dropped.
	ArchivePurge = "purge"
	// ArchivePaper is a paper account's change, on the account's own stream
	// (PaperArchive): fields v (balance), m (margin), f and h (a holding's field and its
	// value, "" when removed), r (last refill, ms) and n (the account's change number).
	ArchivePaper = "paper"
	// ArchivePaperGone is a deleted paper account (on its partition's archive stream): its
	// record is dropped.
	ArchivePaperGone = "paper-gone"
)

// Kinds of archive entry that are facts to tell a user and make no row (notifyd reads
// them, the archiver passes over them): a bot's runtime pause written or lifted (field b
// the bot, v {"r","u","at"}: runtime/registry), and a user's fact (field u the user ID,
// v the notify.Event's JSON) appended to the archive stream of the user's partition:
// an approval requested or decided, an exchange connection turned invalid.
const (
	ArchivePause    = "pause"
	ArchiveResume   = "resume"
	ArchiveUserFact = "tell"
)

// BookRestored marks partition p's book state (positions, per-day analytics, risk
// counters) as present in Redis: restored from PostgreSQL after a loss, or nothing to
// restore. Its absence makes the executor restore the partition before it decides or
// books anything there (runtime/bookstate).
func BookRestored(partition int) string { return prefix + "restored:" + partitionTag(partition) }

// BookRestoring holds the token of a restore of partition p under way: the marker is
// written only while it is still there, so a Redis lost again during the restore is
// restored again rather than marked.
func BookRestoring(partition int) string { return prefix + "restoring:" + partitionTag(partition) }

// ArchiveLua is the Lua statement that appends a fact of kind to the archive stream
// KEYS[keyAt], its JSON from ARGV[argAt], with further field/value pairs as Lua
// expressions: the one form of the append that every script recording a fact uses.
func ArchiveLua(keyAt int, kind string, argAt int, extra ...string) string {
	s := "redis.call('XADD', KEYS[" + itoa(keyAt) + "], '*', 'k', '" + kind + "', 'v', ARGV[" + itoa(argAt) + "]"
	for _, e := range extra {
		s += ", " + e
	}
	return s + ")\n"
}
