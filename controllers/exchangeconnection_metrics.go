package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// validations counts exchange connection checks by exchange and Ready reason (Validated,
// WithdrawalPermissionEnabled, InvalidCredentials, Unreachable, ...).
var validations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sigops_exchange_validations_total",
	Help: "Exchange connection checks, by exchange and resulting Ready reason.",
}, []string{"exchange", "reason"})

func init() { metrics.Registry.MustRegister(validations) }
