package manifests

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestEveryComponentIsInAnOverlay: an overlay is what the server-side dry run applies, so a
// component no overlay uses would never be checked.
func TestEveryComponentIsInAnOverlay(t *testing.T) {
	components, err := Components(root)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := Targets(root)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, target := range targets {
		raw, err := os.ReadFile(filepath.Join(root, target, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k struct{ Components []string }
		if err := yaml.Unmarshal(raw, &k); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		for _, c := range k.Components {
			used[filepath.Base(c)] = true
		}
	}
	for _, c := range components {
		if !used[c] {
			t.Errorf("config/components/%s is in no overlay of config/overlays", c)
		}
	}
}

var metricName = regexp.MustCompile(`\bsigops_[a-z0-9_]+`)

// exportedMetrics are the sigops_* metric names registered in the repository's Go code
// (string literals outside tests).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	literal := regexp.MustCompile(`"(sigops_[a-z0-9_]+)"`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// exported says whether name is a series of an exported metric (a histogram's _bucket, _sum
// and _count included).
func exported(names map[string]bool, name string) bool {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// TestMonitoringNamesRealMetrics builds the full overlay: the PrometheusRule holds the
// alerts docs/operations.md asks for, and every sigops_* metric an alert or the Grafana
// dashboard queries is one the daemons export.
func TestMonitoringNamesRealMetrics(t *testing.T) {
	objs, err := Build(filepath.Join(root, "config", "overlays", "full"))
	if err != nil {
		t.Fatal(err)
	}
	names := exportedMetrics(t)
	var queries []string
	var alerts []string
	for _, o := range objs {
		switch o.GetKind() {
		case "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				for _, r := range g.(map[string]any)["rules"].([]any) {
					rule := r.(map[string]any)
					alerts = append(alerts, rule["alert"].(string))
					queries = append(queries, rule["expr"].(string))
				}
			}
		case "ConfigMap":
			if o.GetLabels()["grafana_dashboard"] == "1" {
				queries = append(queries, dashboardQueries(t, o)...)
			}
		}
	}
	want := []string{
		"SigopsBotProjectionErrors", "SigopsWebhookSecretConflict", "SigopsExchangeUnreachable",
		"SigopsMCPAuditFailures", "SigopsRetentionStale", "SigopsDeadLetters", "SigopsHandlerPanic",
		"SigopsStrategyEvaluationErrors", "SigopsRedisMemoryHigh", "SigopsWebhookErrors",
		"SigopsLoginsOverloaded", "SigopsArchiveLagging", "SigopsArchiveFailing", "SigopsRedisLostBooks",
		"SigopsBookRestoreFailing",
	}
	for _, a := range want {
		if !slices.Contains(alerts, a) {
			t.Errorf("no alert %s in the PrometheusRule", a)
		}
	}
	for _, q := range queries {
		for _, m := range metricName.FindAllString(q, -1) {
			if !exported(names, m) {
				t.Errorf("%q queries %s, which no daemon exports", q, m)
			}
		}
	}
}

func dashboardQueries(t *testing.T, cm *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for file, raw := range data {
		var d struct {
			Panels []struct {
				Targets []struct{ Expr string }
			}
		}
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("dashboard %s: %v", file, err)
		}
		if len(d.Panels) == 0 {
			t.Fatalf("dashboard %s has no panels", file)
		}
		for _, p := range d.Panels {
			for _, target := range p.Targets {
				out = append(out, target.Expr)
			}
		}
	}
	return out
}

// TestRoutesAndCertificates: every Ingress backend is a Service of the build with that
// port, every daemon Service the ServiceMonitor scrapes has a metrics port, and each
// cert-manager Certificate covers exactly the hosts of the Ingress TLS entry whose Secret it
// fills.
func TestRoutesAndCertificates(t *testing.T) {
	objs, err := Build(filepath.Join(root, "config", "overlays", "full"))
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string][]string{}
	for _, s := range typed[corev1.Service](t, objs, "Service") {
		for _, p := range s.Spec.Ports {
			ports[s.Name] = append(ports[s.Name], p.Name)
		}
	}
	tlsHosts := map[string][]string{}
	for _, ing := range typed[networkingv1.Ingress](t, objs, "Ingress") {
		for _, tls := range ing.Spec.TLS {
			tlsHosts[tls.SecretName] = tls.Hosts
		}
		for _, rule := range ing.Spec.Rules {
			if !slices.ContainsFunc(ing.Spec.TLS, func(tls networkingv1.IngressTLS) bool { return slices.Contains(tls.Hosts, rule.Host) }) {
				t.Errorf("Ingress %s: host %s has no TLS entry", ing.Name, rule.Host)
			}
			for _, p := range rule.HTTP.Paths {
				svc := p.Backend.Service
				if !slices.Contains(ports[svc.Name], svc.Port.Name) {
					t.Errorf("Ingress %s %s: Service %s has no port %q", ing.Name, p.Path, svc.Name, svc.Port.Name)
				}
			}
		}
	}
	for _, d := range daemons {
		if !slices.ContainsFunc([]string{"sigops-" + d, "sigops-" + d + "-metrics"}, func(s string) bool { return slices.Contains(ports[s], "metrics") }) {
			t.Errorf("no Service exposes %s's metrics port", d)
		}
	}
	var covered []string
	for _, c := range objs {
		if c.GetKind() != "Certificate" {
			continue
		}
		secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		hosts, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
		if !slices.Equal(hosts, tlsHosts[secret]) {
			t.Errorf("Certificate %s: dnsNames %q into %s, whose Ingress TLS hosts are %q", c.GetName(), hosts, secret, tlsHosts[secret])
		}
		covered = append(covered, secret)
	}
	for secret := range tlsHosts {
		if !slices.Contains(covered, secret) {
			t.Errorf("no Certificate fills the Ingress TLS Secret %s", secret)
		}
	}
}
