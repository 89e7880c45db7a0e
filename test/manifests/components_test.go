package manifests

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
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

// TestMonitoringNamesRealMetrics builds the full overlay and holds its monitoring to what
// docs/deploy.md promises and the daemons export. The PrometheusRule's groups are parsed and
// validated as promtool does (rulefmt with the PromQL parser): every alert of deploy.md's
// "Alerts to wire" table is there with its severity. Every query of the rules and of the
// Grafana dashboard parses as PromQL and selects only metrics a daemon exports (sigops_*) or
// redis_exporter's (redis_*, which deploy.md says to run), and the dashboard shows each part
// of the signal path: intake, queue depth and age, fills, dead letters, failovers and
// exchange errors.
func TestMonitoringNamesRealMetrics(t *testing.T) {
	objs, err := Build(filepath.Join(root, "config", "overlays", "full"))
	if err != nil {
		t.Fatal(err)
	}
	names := exportedMetrics(t)
	promql := parser.NewParser(parser.Options{})
	var rules, dashboards int
	for _, o := range objs {
		switch {
		case o.GetKind() == "PrometheusRule":
			rules++
			alerts := ruleAlerts(t, o, promql)
			for name, severity := range documentedAlerts(t) {
				switch got, ok := alerts[name]; {
				case !ok:
					t.Errorf("docs/deploy.md lists the alert %s, which the PrometheusRule lacks", name)
				case got.severity != severity:
					t.Errorf("alert %s: severity %q, docs/deploy.md says %q", name, got.severity, severity)
				}
			}
			for name, a := range alerts {
				checkSelectors(t, "alert "+name, a.expr, names)
			}
		case o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] == "1":
			dashboards++
			panels := dashboardPanels(t, o)
			shown := map[string]bool{}
			for _, p := range panels {
				for _, q := range p.queries {
					expr, err := promql.ParseExpr(grafanaVariables.Replace(q))
					if err != nil {
						t.Errorf("panel %q: %q does not parse as PromQL: %v", p.title, q, err)
						continue
					}
					checkSelectors(t, "panel "+strconv.Quote(p.title), expr, names)
					for part, shows := range signalPath {
						if shows(expr) {
							shown[part] = true
						}
					}
				}
			}
			for part := range signalPath {
				if !shown[part] {
					t.Errorf("the dashboard has no panel for the signal path's %s", part)
				}
			}
		}
	}
	if rules != 1 || dashboards != 1 {
		t.Fatalf("config/overlays/full: %d PrometheusRules and %d dashboards, want one each", rules, dashboards)
	}
}

// alert is a rule of the PrometheusRule, parsed.
type alert struct {
	severity string
	expr     parser.Expr
}

// ruleAlerts parses the PrometheusRule's spec as a Prometheus rule file, as `promtool check
// rules` does (unknown fields refused, every expression and template checked), and returns
// its alerts by name.
func ruleAlerts(t *testing.T, rule *unstructured.Unstructured, promql parser.Parser) map[string]alert {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
	raw, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(raw, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("PrometheusRule %s: %v", rule.GetName(), err)
	}
	if groups == nil {
		t.FailNow()
	}
	out := map[string]alert{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				continue // rulefmt reported it
			}
			out[r.Alert] = alert{severity: r.Labels["severity"], expr: expr}
		}
	}
	return out
}

// documentedAlerts reads docs/deploy.md's "Alerts to wire" table: alert name to severity.
func documentedAlerts(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Alerts to wire\n")
	if !ok {
		t.Fatal(`docs/deploy.md has no section "Alerts to wire"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "Sigops") {
			continue
		}
		out[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
	}
	if len(out) < 10 {
		t.Fatalf("docs/deploy.md's alert table lists %d alerts; the parser no longer reads it", len(out))
	}
	return out
}

// checkSelectors fails t for every metric expr selects that no daemon exports, and for a
// selector without a metric name (it would match every series).
func checkSelectors(t *testing.T, where string, expr parser.Expr, names map[string]bool) {
	t.Helper()
	for _, vs := range selectors(expr) {
		switch name := vs.Name; {
		case name == "":
			t.Errorf("%s: selector %s names no metric", where, vs)
		case strings.HasPrefix(name, "redis_"): // redis_exporter's, deploy.md "Alerts to wire"
		case !exported(names, name):
			t.Errorf("%s queries %s, which no daemon exports", where, name)
		}
	}
}

func selectors(expr parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// selects says whether expr selects metric with every label matcher in want (name=value;
// a regexp matcher counts by its pattern).
func selects(metric string, want ...string) func(parser.Expr) bool {
	return func(expr parser.Expr) bool {
		for _, vs := range selectors(expr) {
			if vs.Name != metric {
				continue
			}
			all := true
			for _, w := range want {
				name, value, _ := strings.Cut(w, "=")
				all = all && slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == name && m.Value == value })
			}
			if all {
				return true
			}
		}
		return false
	}
}

// signalPath is what docs/deploy.md says the dashboard shows, each with a query that shows it.
var signalPath = map[string]func(parser.Expr) bool{
	"intake rate":     selects("sigops_webhook_signals_total"),
	"queue depth":     selects("sigops_queue_depth"),
	"queue age":       selects("sigops_queue_wait_seconds_bucket"),
	"fills":           selects("sigops_executor_signals_total", "outcome=success"),
	"dead letters":    selects("sigops_queue_dead_letters_total"),
	"failovers":       selects("sigops_redis_master_changes_total"),
	"exchange errors": selects("sigops_executor_signals_total", "outcome=failure", "code=EXCHANGE_.*"),
}

// grafanaVariables stands in for the variables Grafana fills into a query.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

type panel struct {
	title   string
	queries []string
}

func dashboardPanels(t *testing.T, cm *unstructured.Unstructured) []panel {
	t.Helper()
	var out []panel
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for file, raw := range data {
		var d struct {
			Panels []struct {
				Title   string
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
			if len(p.Targets) == 0 {
				t.Errorf("dashboard %s: panel %q has no query", file, p.Title)
			}
			q := panel{title: p.Title}
			for _, target := range p.Targets {
				q.queries = append(q.queries, target.Expr)
			}
			out = append(out, q)
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
