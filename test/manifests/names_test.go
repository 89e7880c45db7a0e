package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// eachString calls f with every string in v (an object's fields, nested), and where it is.
func eachString(v any, path string, f func(path, s string)) {
	switch v := v.(type) {
	case string:
		f(path, v)
	case map[string]any:
		for k, x := range v {
			eachString(x, path+"."+k, f)
		}
	case []any:
		for i, x := range v {
			eachString(x, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

// namespacedName is a DNS name under the namespace sigops-system (pod.service.sigops-system,
// service.sigops-system.svc, ...).
var namespacedName = regexp.MustCompile(`[a-z0-9-]\.sigops-system(\.svc|\b)`)

// TestNoNamespaceInNames: no DNS name in any build embeds the namespace (the pods reach each
// other by short names, which their search path completes), and config/overlays/full built
// into another namespace holds no "sigops-system" anywhere: a platform team installs sigops
// where it likes with kustomize's namespace field alone.
func TestNoNamespaceInNames(t *testing.T) {
	for _, b := range buildAll(t) {
		for _, o := range b.objs {
			eachString(o.Object, "", func(path, s string) {
				if m := namespacedName.FindString(s); m != "" {
					t.Errorf("%s: %s %s%s names %q, which embeds the namespace", b.target, o.GetKind(), o.GetName(), path, m)
				}
			})
		}
	}

	dir := t.TempDir()
	full, err := filepath.Rel(dir, filepath.Join(root, "config", "overlays", "full")) // kustomize takes no absolute base
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("namespace: trading-desk\nresources:\n- %s\n", full)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetName() == "trading-desk" {
			found++
		}
		eachString(o.Object, "", func(path, s string) {
			if strings.Contains(s, "sigops-system") {
				t.Errorf("in namespace trading-desk, %s %s%s still says %q", o.GetKind(), o.GetName(), path, s)
			}
		})
	}
	if found != 1 {
		t.Errorf("in namespace trading-desk: %d Namespace objects of that name, want 1", found)
	}
}

// TestImagesByVersion: no container of any build runs an image by :latest or by no tag at
// all. The sigops images are ghcr.io/sigops/<name>:dev, what `make images VERSION=dev`
// builds for a development cluster; `make release-manifests` writes a release's copy with
// each pinned by its version and digest (hack/release).
func TestImagesByVersion(t *testing.T) {
	for _, b := range buildAll(t) {
		for _, w := range workloads(t, b.objs) {
			for _, c := range append(w.pod.Spec.InitContainers, w.pod.Spec.Containers...) {
				repo, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
				switch {
				case !ok || tag == "" || tag == "latest":
					t.Errorf("%s: %s %s/%s runs %s, by no version", b.target, w.kind, w.name, c.Name, c.Image)
				case strings.HasPrefix(c.Image, "ghcr.io/sigops/") && c.Image != "ghcr.io/sigops/"+repo+":dev":
					t.Errorf("%s: %s %s/%s runs %s; config/ names the sigops images by :dev", b.target, w.kind, w.name, c.Name, c.Image)
				}
			}
		}
	}
}
