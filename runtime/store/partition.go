package store

import "hash/fnv"

// Partitions is how many partitions the bots are spread over. A bot's partition decides its
// queue streams (runtime/queue) and the Redis Cluster slot of every key about the bot or
// its signals (the hash tag "{N}", see keys.go). Changing it re-maps bots and renames their
// keys, so it is fixed: drain the queues and migrate the keys before changing it.
const Partitions = 32

// PartitionOf maps a bot to its partition (FNV-1a of the ID).
func PartitionOf(botID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(botID))
	return int(h.Sum32() % Partitions)
}

// partitionTag is the hash tag of partition p: Redis Cluster hashes only what is between
// the braces, so every key carrying it lives in one slot.
func partitionTag(p int) string { return "{" + itoa(p) + "}" }

// botTag is the hash tag of a bot's partition.
func botTag(botID string) string { return partitionTag(PartitionOf(botID)) }
