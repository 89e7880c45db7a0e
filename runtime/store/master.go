package store

import "sync/atomic"

// masterChanges counts the master changes the clients of this process have seen.
var masterChanges atomic.Uint64

// MasterChanges is how many times a client Connect made (a single server or a
// Sentinel-managed master) has found, on a new connection, a different Redis process as its
// master than on its previous one: a failover promoted a replica, or the server restarted.
// Either way writes the former master acknowledged may be missing on the new one (Redis
// replicates and persists asynchronously). A writer reads it before its writes and again
// after it confirmed them (WAIT): a different count means they may be gone, and must be
// checked on the master now serving. A Cluster client counts nothing: its nodes are many
// masters and it waits for no replica.
func MasterChanges() uint64 { return masterChanges.Load() }

// noteMaster records the run ID of the master a new connection reached. A run ID is new at
// every start of a Redis process, so a promoted replica and a restarted server both differ
// from the master the client knew.
func (p *ackPolicy) noteMaster(runID string) {
	if runID == "" {
		return
	}
	if old := p.master.Swap(&runID); old != nil && *old != runID {
		masterChanges.Add(1)
	}
}
