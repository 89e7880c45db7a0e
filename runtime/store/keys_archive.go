package store

// Keys of the history archive (runtime/archive): the facts a partition's scripts commit
// (trades, order records, results) are appended, in the same script as the write they
// record, to the partition's archive stream, which the archiver copies to PostgreSQL and
// trims up to what PostgreSQL has committed.
//
//	sigops:archive:fence string   the archiver's fence write (a second's life)
//	sigops:archive:{N}   stream   facts of partition N not yet trimmed: fields k (kind: trade,
//	                              order, result, audit), v (the fact's JSON, as the book stores it),
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
)

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
