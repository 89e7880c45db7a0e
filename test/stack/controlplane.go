// Package stack starts the pieces of a local sigops installation as real processes: the
// Kubernetes control plane (etcd and kube-apiserver through envtest, and
// kube-controller-manager), redis-server and the manager binary. The local stack (`make
// run`, hack/localstack), the controller suite (controllers), the end-to-end tests
// (test/e2e) and the benchmarks (test/scale, test/load) share it, so all of them exercise
// what a user would run.
package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AdminUser is the user the stack provisions for kubectl and its own clients.
const AdminUser = "sigops-admin"

// ControlPlaneOptions configure StartControlPlane.
type ControlPlaneOptions struct {
	// Root is the repository root: CRDs come from Root/config/crd/bases and the binaries
	// from Root/bin/k8s, unless KUBEBUILDER_ASSETS names another directory.
	Root string
	// Kubeconfig is the file the admin user's kubeconfig is written to; empty writes none.
	Kubeconfig string
	// EtcdDataDir keeps the cluster's state across runs; empty uses a temporary directory
	// that Stop removes.
	EtcdDataDir string
	// ControllerManagerLog receives kube-controller-manager's output; empty keeps only its
	// last lines, for error messages.
	ControllerManagerLog string
}

// ControlPlane is a running etcd, kube-apiserver and kube-controller-manager with the
// sigops CRDs installed.
type ControlPlane struct {
	env *envtest.Environment
	// ControllerManager is kube-controller-manager: garbage collection of owned objects,
	// namespace deletion, Deployments (see controllerManagerControllers).
	ControllerManager *Process
	// Config is the admin user's (system:masters) REST config.
	Config *rest.Config
	// Kubeconfig is the file holding the admin user's kubeconfig, if one was written.
	Kubeconfig string
}

// AssetsDir is where the control-plane binaries are: KUBEBUILDER_ASSETS if set, else
// root/bin/k8s (built by hack/setup-envtest.sh).
func AssetsDir(root string) string {
	if v := os.Getenv("KUBEBUILDER_ASSETS"); v != "" {
		return v
	}
	return filepath.Join(root, "bin", "k8s")
}

// StartControlPlane starts etcd and kube-apiserver through envtest, installs the CRDs,
// provisions the admin user, writes its kubeconfig and starts kube-controller-manager.
// envtest alone runs no controllers, so owned objects would never be collected and deleted
// namespaces would stay Terminating for ever; kube-controller-manager makes the stack
// behave like a real cluster.
func StartControlPlane(o ControlPlaneOptions) (*ControlPlane, error) {
	assets := AssetsDir(o.Root)
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s missing in %s: run `make envtest` (hack/setup-envtest.sh)", b, assets)
		}
	}
	if v, ok := os.LookupEnv("KUBEBUILDER_ASSETS"); ok && v == "" {
		// envtest would take an empty value as the current directory.
		_ = os.Unsetenv("KUBEBUILDER_ASSETS")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(o.Root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	// envtest's 20 s default is tight for kube-apiserver on a small machine.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = 90 * time.Second
	}
	if o.EtcdDataDir != "" {
		if err := os.MkdirAll(o.EtcdDataDir, 0o700); err != nil {
			return nil, err
		}
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: o.EtcdDataDir}
	}
	if _, err := env.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start control plane: %w", err), env.Stop())
	}
	cp := &ControlPlane{env: env}
	user, err := env.AddUser(envtest.User{Name: AdminUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("provision user %s: %w", AdminUser, err), cp.Stop())
	}
	cp.Config = user.Config()
	if o.Kubeconfig != "" {
		kc, err := user.KubeConfig()
		if err == nil {
			err = writeFileAtomic(o.Kubeconfig, kc, 0o600)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("write kubeconfig: %w", err), cp.Stop())
		}
		cp.Kubeconfig = o.Kubeconfig
	}
	kcm, err := startControllerManager(context.Background(), env, filepath.Join(assets, "kube-controller-manager"),
		o.ControllerManagerLog, env.ControlPlaneStartTimeout)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start kube-controller-manager: %w", err), cp.Stop())
	}
	cp.ControllerManager = kcm
	return cp, nil
}

// KubectlPath is the kubectl binary matching the control plane.
func (c *ControlPlane) KubectlPath() string { return c.env.ControlPlane.KubectlPath }

// Stop stops kube-controller-manager, then kube-apiserver and etcd.
func (c *ControlPlane) Stop() error {
	var err error
	if c.ControllerManager != nil {
		err = c.ControllerManager.Stop(10 * time.Second)
	}
	return errors.Join(err, c.env.Stop())
}

// writeFileAtomic writes data to a temporary file beside path and renames it into place,
// so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
