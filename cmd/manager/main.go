// Command manager runs the sigops controllers: it projects SignalBots, PaperAccounts and
// ExchangeConnections into the Redis runtime state the daemons read.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/store"
)

func main() {
	var (
		metricsAddr, probeAddr, baseURL        string
		masterKeys                             credentials.KeyFlags
		leaderElect                            bool
		qps                                    float64
		burst, workers                         int
		tombstoneTTL, paperSync, credRetry     time.Duration
		revalidate, reprojectCheck, riskRecord time.Duration
		redisOpts                              store.Options
		logLevel                               slog.Level
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Prometheus metrics address (0 disables)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	flag.StringVar(&baseURL, "base-url", "https://127.0.0.1:8443", "public origin written into webhook URLs")
	flag.Float64Var(&qps, "kube-api-qps", 1000, "Kubernetes API requests per second (client side; the API server's priority and fairness is the real guard)")
	flag.IntVar(&burst, "kube-api-burst", 2000, "Kubernetes API request burst")
	flag.IntVar(&workers, "max-concurrent-reconciles", 32, "parallel SignalBot reconciles")
	flag.DurationVar(&tombstoneTTL, "tombstone-ttl", 90*24*time.Hour, "how long a deleted bot's URL answers BOT_DELETED")
	flag.DurationVar(&paperSync, "paper-sync-period", 30*time.Second, "how often paper account status re-reads the balance")
	flag.DurationVar(&credRetry, "credentials-retry-period", 30*time.Second, "how often a connection with a missing Secret looks again")
	masterKeys.Bind(flag.CommandLine, "seals exchange credentials; mount a Secret. Without it no exchange connection becomes Ready")
	flag.DurationVar(&revalidate, "exchange-revalidate-period", controllers.DefaultExchangeRevalidatePeriod, "how often an exchange connection's API key is checked with the exchange again")
	flag.DurationVar(&reprojectCheck, "reproject-check-period", controllers.DefaultReprojectCheckPeriod, "how often the leader checks that Redis still holds its projections (a marker key) and projects every object again when it does not")
	flag.DurationVar(&riskRecord, "risk-record-period", controllers.DefaultRiskRecordPeriod, "how often a bot with a daily-loss or consecutive-loss rule has its risk counters recorded in its status, from where a Redis that lost them gets them back (with PostgreSQL, the book record is used when later)")
	store.BindFlags(flag.CommandLine, &redisOpts)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level (DEBUG, INFO, WARN, ERROR)")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	// Rotation progress is each connection's status.encryptionKeyID.
	keys, err := masterKeys.Load(logger, "exchange connections stay not Ready (MasterKeyMissing)")
	if err != nil {
		logger.Error("manager stopped", "error", err)
		os.Exit(1)
	}
	exchanges := connectors.All()
	if err := run(ctrl.SetupSignalHandler(), logger, managerConfig{
		metricsAddr: metricsAddr, probeAddr: probeAddr, leaderElect: leaderElect, qps: qps, burst: burst,
		redis: redisOpts, controllers: controllers.Options{
			BaseURL: baseURL, TombstoneTTL: tombstoneTTL, MaxConcurrentReconciles: workers,
			PaperSyncPeriod: paperSync, CredentialsRetryPeriod: credRetry,
			MasterKeys: keys, Connectors: exchanges, ExchangeRevalidatePeriod: revalidate,
			ReprojectCheckPeriod: reprojectCheck,
			RiskRecordPeriod:     riskRecord,
		},
	}); err != nil {
		logger.Error("manager stopped", "error", err)
		os.Exit(1)
	}
}

type managerConfig struct {
	metricsAddr, probeAddr string
	leaderElect            bool
	qps                    float64
	burst                  int
	redis                  store.Options
	controllers            controllers.Options
}

func run(ctx context.Context, logger *slog.Logger, c managerConfig) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := tradingv1.AddToScheme(scheme); err != nil {
		return err
	}
	rdb, err := store.Connect(ctx, c.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(c.qps), c.burst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress: c.probeAddr,
		LeaderElection:         c.leaderElect,
		LeaderElectionID:       "manager.trading.sigops.dev",
		Cache:                  controllers.CacheOptions(),
	})
	if err != nil {
		return err
	}
	c.controllers.Redis = rdb
	if err := controllers.Setup(mgr, c.controllers); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready only while Redis answers: without it no bot can be projected.
	if err := mgr.AddReadyzCheck("redis", func(r *http.Request) error { return rdb.Ping(r.Context()).Err() }); err != nil {
		return err
	}
	logger.Info("starting manager", "redis", c.redis.String(), "baseURL", c.controllers.BaseURL)
	return mgr.Start(ctx)
}
