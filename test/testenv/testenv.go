// Package testenv starts, once per test binary (from TestMain), what the suites that run the
// real controllers share: the control plane test/stack runs for `make run` (etcd,
// kube-apiserver and kube-controller-manager, so owned objects are garbage-collected and
// deleted namespaces go away as on a real cluster) and a Redis from storetest (one server, or
// a Redis Cluster under SIGOPS_TEST_REDIS=cluster). The controller suite and the end-to-end
// tests start them this one way.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/stack"
)

// Env is a running control plane with the sigops CRDs and a Redis.
type Env struct {
	// Config is the control plane's admin (system:masters) REST config; what a suite sets on
	// it (QPS, Burst) applies to the manager and clients made afterwards.
	Config *rest.Config
	// Redis is the Redis; RDB is a client of it that Stop closes.
	Redis *storetest.Server
	RDB   redis.UniversalClient
	cp    *stack.ControlPlane
}

// Start starts the control plane (binaries from bin/k8s or KUBEBUILDER_ASSETS, built by
// `make envtest`) and a Redis.
func Start() (*Env, error) {
	root, err := stack.RepoRoot()
	if err != nil {
		return nil, err
	}
	cp, err := stack.StartControlPlane(stack.ControlPlaneOptions{Root: root})
	if err != nil {
		return nil, fmt.Errorf("control plane (make envtest builds it): %w", err)
	}
	srv, err := storetest.Start()
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return &Env{Config: cp.Config, Redis: srv, RDB: srv.Client(), cp: cp}, nil
}

// Stop stops Redis, then the control plane.
func (e *Env) Stop() error {
	_ = e.RDB.Close()
	e.Redis.Stop()
	return e.cp.Stop()
}

// LiveOwners creates the accounts (password "correct horse battery") whose tier includes
// live trading, for the suites' live bots and connections, and returns the account store.
// Password hashing is as cheap as argon2id allows: these accounts never log in.
func (e *Env) LiveOwners(ctx context.Context, emails ...string) (*auth.Users, error) {
	users := auth.NewUsers(e.RDB, auth.UsersOptions{KDF: auth.KDFParams{MemoryKiB: 64, Time: 1, Threads: 1}})
	for _, email := range emails {
		if _, err := users.Create(ctx, auth.NewUser{Email: email, Password: "correct horse battery", Tier: auth.TierTeam}); err != nil {
			return nil, fmt.Errorf("owner %s: %w", email, err)
		}
	}
	return users, nil
}

// StartControllers runs a manager with the sigops controllers (controllers.Setup with o) on
// the control plane until ctx ends. The returned channel is closed once the manager has
// stopped, so that a suite can stop it before Redis and the control plane.
func (e *Env) StartControllers(ctx context.Context, o controllers.Options) (<-chan struct{}, error) {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  stack.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controllers.CacheOptions(),
	})
	if err != nil {
		return nil, err
	}
	if err := controllers.Setup(mgr, o); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return done, nil
}

// Client is a client without a cache, so that tests see what the API server holds.
func (e *Env) Client() (client.Client, error) {
	return client.New(e.Config, client.Options{Scheme: stack.Scheme()})
}
