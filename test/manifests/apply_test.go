package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sigops/sigops/test/stack"
)

// server is the API server every test in the package applies to: kube-apiserver and etcd
// with the sigops CRDs and the stand-in CRDs of testdata/crds (ServiceMonitor,
// PrometheusRule, Certificate). warnings collects the warnings it answers with (Pod
// Security's among them).
var (
	server   client.Client
	warnings = &warningLog{}
	root     string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = stack.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "test", "manifests", "testdata", "crds"),
		},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    stack.AssetsDir(root),
		ControlPlaneStartTimeout: 90 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "control plane (make envtest builds it): %v\n", err)
		_ = env.Stop()
		return 1
	}
	defer func() { _ = env.Stop() }()
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = warnings
	if server, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// warningLog keeps the API server's warnings (the Warning response headers).
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings since the last call and forgets them.
func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// applyDryRun applies objs as `kubectl apply --server-side --dry-run=server` does, after
// creating their Namespaces for real (a dry run into a namespace that does not exist is
// refused, and the namespace's Pod Security labels decide the warnings). It returns the
// first refusal and every warning.
func applyDryRun(ctx context.Context, objs []*unstructured.Unstructured) ([]string, error) {
	warnings.take()
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := apply(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		if err := apply(ctx, o, client.DryRunAll); err != nil {
			return warnings.take(), err
		}
	}
	return warnings.take(), nil
}

func apply(ctx context.Context, o *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner("sigops-manifests-test"), client.ForceOwnership)
	if err := server.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...); err != nil {
		return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// TestServerAcceptsEveryTarget applies config/default and every overlay with a server-side
// dry run: the API server validates each object (schemas, CRDs, admission, the restricted
// Pod Security profile of sigops-system) and must accept all of them without a warning.
func TestServerAcceptsEveryTarget(t *testing.T) {
	targets, err := Targets(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			objs, err := Build(filepath.Join(root, target))
			if err != nil {
				t.Fatal(err)
			}
			warns, err := applyDryRun(t.Context(), objs)
			if err != nil {
				t.Fatalf("the API server refuses %s: %v", target, err)
			}
			if len(warns) > 0 {
				t.Fatalf("the API server warns about %s:\n%s", target, strings.Join(warns, "\n"))
			}
		})
	}
}

// TestServerRefusesWhatItShould holds the dry run to account: a Deployment the API server
// must refuse is refused, and one that breaks the restricted profile draws Pod Security's
// warning, which TestServerAcceptsEveryTarget fails on.
func TestServerRefusesWhatItShould(t *testing.T) {
	objs, err := Build(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var ns, deploy *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Namespace":
			ns = o
		case o.GetKind() == "Deployment" && o.GetName() == "sigops-webhookd":
			deploy = o
		}
	}
	if ns == nil || deploy == nil {
		t.Fatal("config/default builds no Namespace or no sigops-webhookd Deployment")
	}

	invalid := deploy.DeepCopy()
	if err := unstructured.SetNestedField(invalid.Object, int64(-1), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := applyDryRun(t.Context(), []*unstructured.Unstructured{ns, invalid}); err == nil {
		t.Fatal("the API server accepted a Deployment with replicas -1")
	}

	privileged := deploy.DeepCopy()
	unstructured.RemoveNestedField(privileged.Object, "spec", "template", "spec", "securityContext")
	warns, err := applyDryRun(t.Context(), []*unstructured.Unstructured{ns, privileged})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "restricted") {
		t.Fatalf("no Pod Security warning for a pod without runAsNonRoot and seccomp; warnings: %q", warns)
	}
}
