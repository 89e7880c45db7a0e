package bookstate

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	partitions, bots, papers, failures prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		partitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_book_restored_partitions_total",
			Help: "Partitions whose book marker Redis had lost, restored by this executor (from PostgreSQL, or only marked without a database): each is a Redis that lost data.",
		}),
		bots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_book_restored_bots_total",
			Help: "Bots whose recorded book state (positions, per-day analytics, risk counters) this executor put back into Redis.",
		}),
		papers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_book_restored_paper_accounts_total",
			Help: "Paper accounts whose recorded balance and holdings this executor's restore of their partition put back into Redis.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_book_restore_failures_total",
			Help: "Restores of a lost partition that failed (PostgreSQL or Redis unreachable); signals of the partition wait until one succeeds.",
		}),
	}
}

// Collectors are the restorer's metrics, for the executor's registry.
func (r *Restorer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.m.partitions, r.m.bots, r.m.papers, r.m.failures}
}
