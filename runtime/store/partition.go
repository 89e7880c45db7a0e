package store

// Partitions is how many partitions the bots are spread over. A bot's partition decides its
// queue streams (runtime/queue) and the Redis Cluster slot of every key about the bot or
// its signals (the hash tag "{N}", see keys.go). Changing it re-maps bots and renames their
// keys, so it is fixed: drain the queues and migrate the keys before changing it.
const Partitions = 32

// PartitionOf maps a bot to its partition: FNV-1a (32 bits) of the ID, modulo Partitions.
// It is hash/fnv's New32a written out, because every key about a bot computes it and the
// hash.Hash32 would cost an allocation each time.
func PartitionOf(botID string) int {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(botID); i++ {
		h ^= uint32(botID[i])
		h *= prime
	}
	return int(h % Partitions)
}

// partitionTags are the hash tags of the partitions, "{0}" to "{31}": Redis Cluster hashes
// only what is between the braces, so every key carrying one lives in that partition's slot.
var partitionTags = func() (t [Partitions]string) {
	for p := range t {
		t[p] = "{" + itoa(p) + "}"
	}
	return t
}()

// partitionTag is the hash tag of partition p.
func partitionTag(p int) string { return partitionTags[p] }

// botTag is the hash tag of a bot's partition.
func botTag(botID string) string { return partitionTags[PartitionOf(botID)] }
