// Package daemon holds what every HTTP daemon's main does the same way: the ops endpoints
// (metrics and probes on their own plain-HTTP port) and serving until a signal, then a
// graceful shutdown.
package daemon

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sigops/sigops/runtime/store"
)

// NewRegistry is a Prometheus registry with the Go runtime and process collectors and the
// Redis client's (failed replica acknowledgements, master changes: runtime/store).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(store.Collectors()...)
	return reg
}

// profiling is the --pprof flag of every daemon whose ops port OpsServer serves. Off by
// default: profiles show the process's internals, and the ops port, though kept inside the
// cluster, asks for no credentials. On, it lets an operator take CPU and allocation
// profiles of a daemon under load, which a profile of the load generator cannot show.
var profiling = flag.Bool("pprof", false, profilingUsage)

const profilingUsage = "serve the Go profiler at /debug/pprof/ on the metrics port"

// ProfilingFlag registers --pprof on fs, for a daemon that parses its own flag set rather
// than the command line's.
func ProfilingFlag(fs *flag.FlagSet) { fs.BoolVar(profiling, "pprof", false, profilingUsage) }

// SetProfiling turns the profiler endpoints of the next OpsServer on or off, as --pprof
// does, for callers that build their flags themselves (tests).
func SetProfiling(on bool) { *profiling = on }

// OpsServer serves /metrics from reg and /healthz and /readyz from probes on addr, and the
// Go profiler under /debug/pprof/ when --pprof is set.
func OpsServer(addr string, reg *prometheus.Registry, probes http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", probes)
	mux.Handle("/readyz", probes)
	if *profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
}

// Serve runs api (over TLS when tlsCert is set) and ops until ctx ends or one of them
// fails, then stops taking requests and lets in-flight ones finish within grace.
func Serve(ctx context.Context, api, ops *http.Server, tlsCert, tlsKey string, grace time.Duration) error {
	errc := make(chan error, 2)
	go func() {
		if tlsCert != "" {
			errc <- api.ListenAndServeTLS(tlsCert, tlsKey)
		} else {
			errc <- api.ListenAndServe()
		}
	}()
	go func() { errc <- ops.ListenAndServe() }()
	var failed error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			failed = err
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	_ = ops.Shutdown(shutdown)
	return errors.Join(failed, api.Shutdown(shutdown))
}
