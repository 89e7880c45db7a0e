package store

// Keys of copy signals (runtime/registry's followers index, runtime/executor's fan-out):
//
//	sigops:bot:{N}:<master>:followers  set     {N} of the master  IDs of the bots whose projection copies the master
//	sigops:copy:{N}:<copyName>         string  {N} of the follower marker: the fan-out enqueued this copy signal
//
// The followers set sits in the master's partition slot, beside the master's hash, so the
// executor reads it in the master signal's first pipeline. A marker sits in the follower's
// partition slot, beside the follower's streams, so that the script that sets it and XADDs
// the copy signal is one slot. A follower's last copy outcome lives in its own bot hash
// (registry.FieldCopyLast, registry.FieldCopyError), like the runtime pause.

// CopyFollowers is the set of bots copying the master bot (runtime/registry maintains it
// with the followers' projections).
func CopyFollowers(masterID string) string { return Bot(masterID) + ":followers" }

// CopyMarker marks the copy named copyName as enqueued for followerID. The name is the
// copy's before its signal ID is placed in the follower's partition, so that producers
// that place IDs and producers that do not name a copy's marker alike.
func CopyMarker(followerID, copyName string) string {
	return prefix + "copy:" + botTag(followerID) + ":" + copyName
}
