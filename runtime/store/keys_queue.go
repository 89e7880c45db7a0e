package store

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
//	sigops:result:<signalId>           string   {own}  result JSON of one signal, kept 24 h
//	sigops:reply:<instance>            channel  pub/sub channel of one webhookd instance waiting for results
//
// A signal's result has its own slot: it is read by signal ID alone (webhookd's waiter,
// read APIs), which knows no bot. It is therefore written by a single SET before the
// partition's transaction that acknowledges the entry (runtime/queue results.go says why
// that keeps exactly-once).

// QueueLease is the lease of one partition: whoever's name it holds may read the partition's
// streams.
func QueueLease(partition int) string { return prefix + "q:" + partitionTag(partition) + ":lease" }

// QueueExecutors is the heartbeat set of live executor instances. Each instance aims to hold
// its share of the partitions, Partitions / (members of this set), rounded up.
func QueueExecutors() string { return prefix + "q:executors" }

// SignalResult holds the result of one signal (runtime/result.Result as JSON), read by the
// API, MCP and the executor's "already done" check.
func SignalResult(signalID string) string { return prefix + "result:" + signalID }

// BotSignals is the index of one bot's recent signals (sorted set: an entry per signal whose
// result is stored, scored by the time the intake accepted it), in the bot's partition
// slot; runtime/queue writes it with each result, capped and expiring with the results.
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
