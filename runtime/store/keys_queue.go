package store

import "strings"

// Keys of the signal queue (runtime/queue), beside the streams named by QueueStream. All but
// the executor set, results and reply channels carry their partition's tag ({N}), like the
// streams, so that one script or transaction may touch a partition's lease, streams, dead
// letters and attempt counts: the dead-letter transaction (XACK, XDEL, XADD, DEL attempts)
// is one slot.
//
//	sigops:q:{N}:p{1-4}                stream   signals of one partition at one priority
//	sigops:q:{N}:lease                 string   consumer name of the executor owning the partition (PX TTL)
//	sigops:q:{N}:deadletter            stream   signals of the partition given up on, with reason, attempts and last error
//	sigops:q:{N}:attempts:<signalId>   hash     failed handler calls of one signal (n, first, err), kept 24 h
//	sigops:q:executors                 zset     {own}  live executor instances, score = last heartbeat (ms, Redis clock)
//	sigops:result:{N}:<signalId>       string   result JSON of one signal, kept 24 h; N = SignalPartition(signalId)
//	sigops:result:<signalId>           string   {own}  the same, as written before results joined the partition slot (read only)
//	sigops:reply:<instance>            channel  pub/sub channel of one webhookd instance waiting for results
//
// A signal's result is read by signal ID alone (webhookd's waiter, get_signal), which knows
// no bot, so its slot is computed from the ID: SignalPartition hashes the ID as PartitionOf
// hashes a bot ID. Every signal ID is chosen (runtime/queue SignalIDFor) so that this is the
// partition of its bot: the executor then stores the result in the same script as the
// booking, in the bot's slot.

// QueueLease is the lease of one partition: whoever's name it holds may read the partition's
// streams.
func QueueLease(partition int) string { return prefix + "q:" + partitionTag(partition) + ":lease" }

// QueueFence is a short-lived key the owner of a partition writes beside a finished
// signal's acknowledgement, so that the WAIT after it always has a write of its own to count
// replicas for, even when a script acknowledged the entry on another connection.
func QueueFence(partition int) string { return prefix + "q:" + partitionTag(partition) + ":fence" }

// QueueExecutors is the heartbeat set of live executor instances. Each instance aims to hold
// its share of the partitions, Partitions / (members of this set), rounded up.
func QueueExecutors() string { return prefix + "q:executors" }

// SignalResult holds the result of one signal (runtime/result.Result as JSON), read by the
// API, MCP and the executor's "already done" check, in partition SignalPartition(signalID).
func SignalResult(signalID string) string {
	return prefix + "result:" + partitionTag(SignalPartition(signalID)) + ":" + signalID
}

// LegacySignalResult is where a result was stored before results joined the partition
// slot: read as a fallback while such results can still exist (ResultTTL after an upgrade),
// never written.
func LegacySignalResult(signalID string) string { return prefix + "result:" + signalID }

// SignalResultPattern matches every result key, of every partition and legacy (SCAN MATCH).
func SignalResultPattern() string { return prefix + "result:*" }

// SignalOfResult is the signal ID whose result a key (SignalResult or LegacySignalResult)
// holds; false for any other key.
func SignalOfResult(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+"result:")
	if !ok {
		return "", false
	}
	if tag, id, ok := strings.Cut(rest, ":"); ok && tag == partitionTag(SignalPartition(id)) {
		return id, true
	}
	return rest, true
}

// SignalPartition is the partition whose slot holds signalID's result: the ID hashed like
// a bot ID (PartitionOf), so that a reader needs nothing but the ID.
func SignalPartition(signalID string) int { return PartitionOf(signalID) }

// BotRecent is the index of one bot's recent signals (list, newest first: an entry per
// signal whose result is stored, runtime/result's Entry), in the bot's partition slot;
// runtime/queue writes it with each result, capped and expiring with the results.
func BotRecent(botID string) string { return Bot(botID) + ":recent" }

// BotSignals is the index as it was before BotRecent (a sorted set scored by the time the
// intake accepted each signal): read beside BotRecent until it expires, never written.
func BotSignals(botID string) string { return Bot(botID) + ":signals" }

// ReplyChannel is the pub/sub channel on which one webhookd instance hears the results of the
// signals it is waiting for (Envelope.ReplyTo).
func ReplyChannel(instanceID string) string { return prefix + "reply:" + instanceID }

// QueueDeadLetters is one partition's dead-letter stream: signals the executor gave up on
// (retry budget spent, handler panic, undecodable entry), each with its reason, bot,
// attempts and last error, for an operator to inspect, retry or drop (runtime/queue
// deadletter.go reads all partitions' as one list).
func QueueDeadLetters(partition int) string {
	return prefix + "q:" + partitionTag(partition) + ":deadletter"
}

// SignalAttempts counts a signal's failed handler calls and holds the time of the first, so
// that its retry budget survives a move to another executor. It is in the slot of the bot's
// partition, whose streams hold the signal.
func SignalAttempts(botID, signalID string) string {
	return prefix + "q:" + botTag(botID) + ":attempts:" + signalID
}
