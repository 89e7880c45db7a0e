package manifests

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// admittedNamespaces are the namespaces a NetworkPolicy may admit traffic from: the ingress
// controller's (the public ports) and the monitoring one (the metrics ports).
var admittedNamespaces = []string{"ingress-nginx", "monitoring"}

// TestNetworkPolicies: every pod of every target is selected by an ingress NetworkPolicy,
// and every rule admits named peers only: sigops pods of its own namespace (Redis), or the
// ingress controller's or monitoring namespace. No rule admits everyone or an address block.
// The executor's egress is limited too.
func TestNetworkPolicies(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.target, func(t *testing.T) {
			policies := typed[networkingv1.NetworkPolicy](t, b.objs, "NetworkPolicy")
			for _, p := range policies {
				checkPeers(t, p)
			}
			for _, w := range workloads(t, b.objs) {
				in := selecting(t, policies, w.pod.Labels, networkingv1.PolicyTypeIngress)
				if len(in) == 0 {
					t.Errorf("%s %s: no ingress NetworkPolicy selects its pods", w.kind, w.name)
				}
				if w.pod.Labels["app.kubernetes.io/component"] == "executor" &&
					len(selecting(t, policies, w.pod.Labels, networkingv1.PolicyTypeEgress)) == 0 {
					t.Errorf("the executor's egress is not limited")
				}
			}
		})
	}
}

func selecting(t *testing.T, policies []*networkingv1.NetworkPolicy, podLabels map[string]string, typ networkingv1.PolicyType) []*networkingv1.NetworkPolicy {
	t.Helper()
	var out []*networkingv1.NetworkPolicy
	for _, p := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			t.Fatalf("NetworkPolicy %s: %v", p.Name, err)
		}
		if sel.Matches(labels.Set(podLabels)) && slices.Contains(p.Spec.PolicyTypes, typ) {
			out = append(out, p)
		}
	}
	return out
}

func checkPeers(t *testing.T, p *networkingv1.NetworkPolicy) {
	t.Helper()
	for _, rule := range p.Spec.Ingress {
		if len(rule.From) == 0 {
			t.Errorf("NetworkPolicy %s admits every source", p.Name)
		}
		for _, peer := range rule.From {
			switch {
			case peer.IPBlock != nil:
				t.Errorf("NetworkPolicy %s admits an address block", p.Name)
			case peer.NamespaceSelector != nil:
				ns := peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
				if !slices.Contains(admittedNamespaces, ns) {
					t.Errorf("NetworkPolicy %s admits namespace %q (selector %v)", p.Name, ns, peer.NamespaceSelector)
				}
			case peer.PodSelector == nil || peer.PodSelector.MatchLabels["app.kubernetes.io/name"] != "sigops":
				t.Errorf("NetworkPolicy %s admits pods other than sigops's: %v", p.Name, peer.PodSelector)
			}
		}
	}
}
