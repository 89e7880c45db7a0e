package store

import "github.com/prometheus/client_golang/prometheus"

// Topologies, as the acknowledgement metric labels them.
const (
	topologySingle   = "single"
	topologySentinel = "sentinel"
	topologyCluster  = "cluster"
)

var (
	replicaAckFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sigops_redis_replica_ack_failures_total",
		Help: "Writes that fewer replicas acknowledged than --redis-min-replicas-ack asks within --redis-replica-ack-timeout (WAIT), by topology (single, sentinel, cluster): each failed the operation it belonged to, which is retried or answered 503; a steady rate means a replica is down or far behind.",
	}, []string{"topology"})
	masterChangesSeen = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "sigops_redis_master_changes_total",
		Help: "Times this process found another Redis process serving what it wrote to (a failover, a restarted server, a Cluster slot on another node): operations begun before are checked against the new master.",
	}, func() float64 { return float64(MasterChanges()) })
)

func init() {
	for _, t := range []string{topologySingle, topologySentinel, topologyCluster} {
		replicaAckFailures.WithLabelValues(t)
	}
}

// Collectors are the Redis client metrics every daemon exports.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{replicaAckFailures, masterChangesSeen}
}
