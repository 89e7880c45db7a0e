package store

// Keys of the signal queue (runtime/queue), beside the streams named by QueueStream:
//
//	sigops:q:{partition}:lease   string   consumer name of the executor owning the partition (PX TTL)
//	sigops:q:executors           zset     live executor instances, score = last heartbeat (ms, Redis clock)
//	sigops:q:deadletter          stream   signals given up on, with reason, attempts and last error
//	sigops:q:attempts:{signalId} hash     failed handler calls of one signal (n, first, err), kept 24 h
//	sigops:result:{signalId}     string   result JSON of one signal, kept 24 h
//	sigops:reply:{instance}      channel  pub/sub channel of one webhookd instance waiting for results
//
// A lease carries its partition's hash tag ({partition}), like the partition's streams, so on
// Redis Cluster the lease and the streams share one slot and one script may touch both.

// QueueLease is the lease of one partition: whoever's name it holds may read the partition's
// streams.
func QueueLease(partition int) string { return prefix + "q:{" + itoa(partition) + "}:lease" }

// QueueExecutors is the heartbeat set of live executor instances. Each instance aims to hold
// its share of the partitions, Partitions / (members of this set), rounded up.
func QueueExecutors() string { return prefix + "q:executors" }

// SignalResult holds the result of one signal (runtime/result.Result as JSON), read by the
// API, MCP and the executor's "already done" check.
func SignalResult(signalID string) string { return prefix + "result:" + signalID }

// ReplyChannel is the pub/sub channel on which one webhookd instance hears the results of the
// signals it is waiting for (Envelope.ReplyTo).
func ReplyChannel(instanceID string) string { return prefix + "reply:" + instanceID }

// QueueDeadLetters is the dead-letter stream: signals the executor gave up on (retry budget
// spent, handler panic, undecodable entry), each with its reason, bot, attempts and last
// error, for an operator to inspect, retry or drop (runtime/queue deadletter.go).
func QueueDeadLetters() string { return prefix + "q:deadletter" }

// SignalAttempts counts a signal's failed handler calls and holds the time of the first, so
// that its retry budget survives a move to another executor.
func SignalAttempts(signalID string) string { return prefix + "q:attempts:" + signalID }
