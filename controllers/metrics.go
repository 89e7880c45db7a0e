package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics beyond controller-runtime's own (reconcile counts and latencies, work queues),
// served on the manager's --metrics-bind-address.
var (
	projections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sigops_bot_projections_total",
		Help: "SignalBot projections into Redis, by result (ok, conflict, error).",
	}, []string{"result"})
	regenerations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sigops_bot_webhook_regenerations_total",
		Help: "Webhook IDs regenerated on request.",
	})
	refills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sigops_paper_refills_total",
		Help: "Paper account refill requests, by result (applied, refused).",
	}, []string{"result"})
	reprojections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sigops_manager_reprojections_total",
		Help: "Times the leader found Redis without its projection marker and queued every object for projection again, by result (ok, error).",
	}, []string{"result"})
	prunedBots = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sigops_manager_pruned_bots_total",
		Help: "Bot projections found in Redis for bots Kubernetes no longer holds (a restored backup), removed with a tombstone.",
	})
)

func init() {
	metrics.Registry.MustRegister(projections, regenerations, refills, reprojections, prunedBots)
}
