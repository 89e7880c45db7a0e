package authd

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	logins        *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	tokenLatency  prometheus.Histogram
	registrations *prometheus.CounterVec
	me            *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_auth_logins_total",
			Help: "Logins by channel (form, api) and outcome (success, failure, locked, error).",
		}, []string{"channel", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_oauth_token_requests_total",
			Help: "Token endpoint requests by grant type and outcome (ok or the OAuth error code).",
		}, []string{"grant", "outcome"}),
		tokenLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sigops_oauth_token_seconds", Help: "Token endpoint latency.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5},
		}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_oauth_registrations_total",
			Help: "Dynamic client registrations by outcome (public, confidential, refused, limited).",
		}, []string{"outcome"}),
		me: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_auth_identity_requests_total",
			Help: "GET /api/user/me by credential (oauth, api, session, none) and outcome (ok, refused).",
		}, []string{"credential", "outcome"}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.logins, m.tokens, m.tokenLatency, m.registrations, m.me} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
