package executor

// CopyName is a copy's name before placement, which names its enqueue marker.
func CopyName(masterSignalID, leg, followerID string) string {
	return copyName(masterSignalID, leg, followerID)
}
