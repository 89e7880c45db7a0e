package authd

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	logins        *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	tokenLatency  prometheus.Histogram
	registrations *prometheus.CounterVec
	me            *prometheus.CounterVec
	verifications prometheus.CounterFunc
}

// newMetrics: verifications reads how many argon2id verifications the account store has
// computed, the work the brute-force limits bound.
func newMetrics(verifications func() uint64) *metrics {
	return &metrics{
		verifications: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sigops_auth_password_verifications_total",
			Help: "argon2id password verifications computed by this replica (unknown emails' dummy checks included).",
		}, func() float64 { return float64(verifications()) }),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_auth_logins_total",
			Help: "Logins by channel (form, api) and outcome (success, failure, locked, busy, overloaded, error).",
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
	for _, c := range []prometheus.Collector{m.logins, m.tokens, m.tokenLatency, m.registrations, m.me, m.verifications} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
