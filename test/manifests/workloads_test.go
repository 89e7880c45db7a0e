package manifests

import (
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// daemons are the sigops Deployments, by their app.kubernetes.io/component label.
var daemons = []string{"manager", "executor", "webhookd", "authd", "mcpd", "notifyd"}

func fromMap(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// built is one target's objects, built once per test.
type built struct {
	target string
	objs   []*unstructured.Unstructured
}

func buildAll(t *testing.T) []built {
	t.Helper()
	targets, err := Targets(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []built
	for _, target := range targets {
		objs, err := Build(filepath.Join(root, target))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, built{target, objs})
	}
	return out
}

// typed converts every object of kind in objs.
func typed[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := fromMap(o.Object, v); err != nil {
			t.Fatalf("%s %s: %v", kind, o.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}

// workload is a Deployment or StatefulSet reduced to what the checks read.
type workload struct {
	kind, name string
	replicas   int32
	pod        corev1.PodTemplateSpec
}

func workloads(t *testing.T, objs []*unstructured.Unstructured) []workload {
	t.Helper()
	var out []workload
	for _, d := range typed[appsv1.Deployment](t, objs, "Deployment") {
		out = append(out, workload{"Deployment", d.Name, ptrValue(d.Spec.Replicas), d.Spec.Template})
	}
	for _, s := range typed[appsv1.StatefulSet](t, objs, "StatefulSet") {
		out = append(out, workload{"StatefulSet", s.Name, ptrValue(s.Spec.Replicas), s.Spec.Template})
	}
	return out
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// TestWorkloadsAreProductionReady walks every Deployment and StatefulSet of every target:
// each runs at least two pods spread over nodes, under a PodDisruptionBudget, with the
// restricted securityContext, probes on ports it declares, and requests and memory limits.
func TestWorkloadsAreProductionReady(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.target, func(t *testing.T) {
			ws := workloads(t, b.objs)
			for _, h := range typed[autoscalingv2.HorizontalPodAutoscaler](t, b.objs, "HorizontalPodAutoscaler") {
				for i := range ws {
					if ws[i].name == h.Spec.ScaleTargetRef.Name && ws[i].replicas == 1 && h.Spec.MinReplicas != nil {
						ws[i].replicas = *h.Spec.MinReplicas // the autoscaler owns the count
					}
				}
			}
			pdbs := typed[policyv1.PodDisruptionBudget](t, b.objs, "PodDisruptionBudget")
			var components []string
			for _, w := range ws {
				components = append(components, w.pod.Labels["app.kubernetes.io/component"])
				checkWorkload(t, w)
				if !anySelects(t, pdbs, w.pod.Labels) {
					t.Errorf("%s %s: no PodDisruptionBudget selects its pods", w.kind, w.name)
				}
			}
			for _, d := range daemons {
				if !slices.Contains(components, d) {
					t.Errorf("no workload for the daemon %s", d)
				}
			}
		})
	}
}

func anySelects(t *testing.T, pdbs []*policyv1.PodDisruptionBudget, podLabels map[string]string) bool {
	t.Helper()
	for _, p := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			t.Fatalf("PodDisruptionBudget %s: %v", p.Name, err)
		}
		if !sel.Empty() && sel.Matches(labels.Set(podLabels)) {
			return true
		}
	}
	return false
}

func checkWorkload(t *testing.T, w workload) {
	t.Helper()
	if w.replicas < 2 {
		t.Errorf("%s %s: %d replica(s), want at least 2", w.kind, w.name, w.replicas)
	}
	if len(w.pod.Spec.TopologySpreadConstraints) == 0 {
		t.Errorf("%s %s: no topologySpreadConstraints", w.kind, w.name)
	}
	sc := w.pod.Spec.SecurityContext
	switch {
	case sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s %s: pod securityContext without runAsNonRoot: true", w.kind, w.name)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("%s %s: pod seccompProfile is not RuntimeDefault", w.kind, w.name)
	case slices.Contains(daemons, w.pod.Labels["app.kubernetes.io/component"]) && (sc.RunAsUser == nil || *sc.RunAsUser != 65532):
		t.Errorf("%s %s: a daemon runs as another user than 65532", w.kind, w.name)
	}
	for _, c := range w.pod.Spec.Containers {
		checkContainer(t, w.name+"/"+c.Name, c)
	}
}

func checkContainer(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation is not false", name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities are not drop [ALL]", name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: root filesystem is writable", name)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
		t.Errorf("%s: want CPU and memory requests and a memory limit, have %v / %v", name, req, lim)
	}
	if !lim.Cpu().IsZero() {
		t.Errorf("%s: a CPU limit throttles the signal path (limits %v)", name, lim)
	}
	checkProbe(t, name+" liveness", c.LivenessProbe, "/healthz", c.Ports)
	checkProbe(t, name+" readiness", c.ReadinessProbe, "/readyz", c.Ports)
}

// checkProbe holds an HTTP probe to the path the daemons serve and to a port the container
// declares; an exec probe (Redis) is accepted as it is.
func checkProbe(t *testing.T, name string, p *corev1.Probe, path string, ports []corev1.ContainerPort) {
	t.Helper()
	switch {
	case p == nil:
		t.Errorf("%s: no probe", name)
	case p.HTTPGet != nil:
		if p.HTTPGet.Path != path {
			t.Errorf("%s: path %q, want %q", name, p.HTTPGet.Path, path)
		}
		if !slices.ContainsFunc(ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.HTTPGet.Port.StrVal }) {
			t.Errorf("%s: port %q is not one of the container's named ports", name, p.HTTPGet.Port.String())
		}
	case p.Exec == nil:
		t.Errorf("%s: neither an HTTP nor an exec probe", name)
	}
}

// TestAutoscalers: webhookd and mcpd, stateless, scale on CPU between at least two replicas;
// nothing else is autoscaled (the executor's partitions move on every scale, the manager
// elects one leader).
func TestAutoscalers(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.target, func(t *testing.T) {
			deployments := map[string]bool{}
			for _, d := range typed[appsv1.Deployment](t, b.objs, "Deployment") {
				deployments[d.Name] = true
			}
			var targets []string
			for _, h := range typed[autoscalingv2.HorizontalPodAutoscaler](t, b.objs, "HorizontalPodAutoscaler") {
				ref := h.Spec.ScaleTargetRef
				if ref.Kind != "Deployment" || !deployments[ref.Name] {
					t.Errorf("HPA %s targets %s %s, not a Deployment of the build", h.Name, ref.Kind, ref.Name)
				}
				if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
					t.Errorf("HPA %s: minReplicas below 2", h.Name)
				}
				if _, set, _ := unstructured.NestedFieldNoCopy(deploymentObj(b.objs, ref.Name), "spec", "replicas"); set {
					t.Errorf("Deployment %s sets replicas, which every apply would reset under its HPA", ref.Name)
				}
				targets = append(targets, ref.Name)
			}
			slices.Sort(targets)
			if want := []string{"sigops-mcpd", "sigops-webhookd"}; !slices.Equal(targets, want) {
				t.Errorf("HPAs target %q, want %q", targets, want)
			}
		})
	}
}

// TestManagerElectsLeader: two manager replicas would both reconcile without --leader-elect.
func TestManagerElectsLeader(t *testing.T) {
	for _, b := range buildAll(t) {
		for _, w := range workloads(t, b.objs) {
			if w.pod.Labels["app.kubernetes.io/component"] != "manager" {
				continue
			}
			if args := w.pod.Spec.Containers[0].Args; !slices.Contains(args, "--leader-elect") {
				t.Errorf("%s: %d manager replicas without --leader-elect (args %q)", b.target, w.replicas, args)
			}
		}
	}
}

func deploymentObj(objs []*unstructured.Unstructured, name string) map[string]any {
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			return o.Object
		}
	}
	return nil
}
