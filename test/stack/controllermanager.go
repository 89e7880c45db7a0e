package stack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllerManagerUser is the identity kube-controller-manager talks to kube-apiserver as.
// It is a member of system:masters: with --use-service-account-credentials=false every
// controller uses this one identity, and there is no RBAC bootstrap for a narrower one here.
const controllerManagerUser = "sigops-kube-controller-manager"

// controllerManagerControllers are the kube-controller-manager controllers the stack runs:
// enough for owned objects, namespaces and Deployments to behave as on a real cluster, and
// no more (no nodes, no kubelet, so nothing that schedules or mounts).
var controllerManagerControllers = []string{
	"garbage-collector-controller",    // deletes objects whose owners are gone
	"namespace-controller",            // empties a deleted namespace, then removes it
	"deployment-controller",           // Deployment -> ReplicaSet
	"replicaset-controller",           // ReplicaSet -> Pods
	"serviceaccount-controller",       // the "default" ServiceAccount of every namespace
	"serviceaccount-token-controller", // fills service-account-token Secrets
}

// startControllerManager runs kube-controller-manager against env's kube-apiserver and waits
// until its /healthz reports every enabled controller. Its credentials and serving
// certificate go into kube-apiserver's certificate directory, which envtest removes on Stop.
func startControllerManager(ctx context.Context, env *envtest.Environment, binary, logFile string, timeout time.Duration) (*Process, error) {
	dir := env.ControlPlane.APIServer.CertDir
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	user, err := env.AddUser(envtest.User{Name: controllerManagerUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provision user %s: %w", controllerManagerUser, err)
	}
	kc, err := user.KubeConfig()
	if err == nil {
		err = writeFileAtomic(kubeconfig, kc, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager kubeconfig: %w", err)
	}
	// Our own serving certificate, so that the health probe can verify what answers.
	certFile, keyFile := filepath.Join(dir, "kube-controller-manager.crt"), filepath.Join(dir, "kube-controller-manager.key")
	if err := SelfSignedCert(certFile, keyFile); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		// envtest's kube-apiserver publishes no front-proxy CA, so looking one up would only
		// log an error every few seconds; tokens are still checked through TokenReview.
		"--authentication-skip-lookup",
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--controllers=" + strings.Join(controllerManagerControllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		// envtest's kube-apiserver verifies service-account tokens with the certificate of
		// this key (--service-account-key-file), so the tokens this signs are accepted.
		"--service-account-private-key-file=" + filepath.Join(dir, "sa-signer.key"),
	}
	p, err := startProcess("kube-controller-manager", exec.Command(binary, args...), logFile)
	if err != nil {
		return nil, err
	}
	hc, err := pinnedClient(certFile)
	if err != nil {
		return nil, errors.Join(err, p.Stop(10*time.Second))
	}
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz?verbose"
	if err := waitHealthy(ctx, p, hc, url, timeout, controllersReported); err != nil {
		return nil, errors.Join(err, p.Stop(10*time.Second))
	}
	return p, nil
}

// controllersReported accepts a verbose /healthz only once every enabled controller has a
// passing check: kube-controller-manager answers 200 before it has built its controllers.
func controllersReported(body []byte) error {
	var missing []string
	for _, c := range controllerManagerControllers {
		if !strings.Contains(string(body), "[+]"+c+" ok") {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("controllers not running yet: %s", strings.Join(missing, ", "))
	}
	return nil
}

// pinnedClient trusts only the certificate in certFile.
func pinnedClient(certFile string) (*http.Client, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", certFile)
	}
	return &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}
