package gitops_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/test/stack"
)

// argoCM is the argocd-cm ConfigMap as Argo CD's install.yaml ships it: no namespace, which
// the installing kustomization sets.
const argoCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels:
    app.kubernetes.io/part-of: argocd
data:
  url: https://argocd.example.com
`

// renderArgoCM builds, with kubectl kustomize, an Argo CD installation's kustomization that
// adds the config/argocd component to argoCM, and returns the ConfigMap built.
func renderArgoCM(root string) (*corev1.ConfigMap, error) {
	dir, err := os.MkdirTemp("", "sigops-argocd-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	component, err := filepath.Rel(dir, filepath.Join(root, "config", "argocd"))
	if err != nil {
		return nil, err
	}
	kustomization := "namespace: argocd\nresources:\n- argocd-cm.yaml\ncomponents:\n- " + component + "\n"
	if err := os.WriteFile(filepath.Join(dir, "argocd-cm.yaml"), []byte(argoCM), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(stack.AssetsDir(root), "kubectl"), "kustomize", dir).Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize: %w", err)
	}
	cm := &corev1.ConfigMap{}
	return cm, yaml.UnmarshalStrict(out, cm)
}

// argoHealth runs obj's health script from the rendered argocd-cm (the key Argo CD looks
// up: resource.customizations.health.<group>_<Kind>) the way Argo CD runs a custom health
// check: a Lua state without the standard libraries but base, table and package, the
// object as the global obj (nested tables, numbers as Lua numbers), and the returned
// table's status and message.
func argoHealth(t *testing.T, obj *unstructured.Unstructured) (status, message string) {
	t.Helper()
	gvk := obj.GroupVersionKind()
	script, ok := argoConfig.Data["resource.customizations.health."+gvk.Group+"_"+gvk.Kind]
	if !ok {
		t.Fatalf("argocd-cm has no health check for %s", gvk)
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		t.Fatalf("health.lua on %s: %v", obj.GetName(), err)
	}
	hs, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, not a table", l.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// luaValue converts a decoded JSON value into Lua: objects and arrays become tables.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(luaValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetString(key, luaValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// The component merges one health check per kind of api/v1alpha1 into argocd-cm, in the
// namespace the installation sets, leaving the rest of argocd-cm alone; each is health.lua.
func TestArgoCDComponentAddsAHealthCheckPerKind(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(repoRoot, "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if argoConfig.Namespace != "argocd" || argoConfig.Data["url"] != "https://argocd.example.com" ||
		argoConfig.Labels["app.kubernetes.io/part-of"] != "argocd" {
		t.Fatalf("argocd-cm = %+v", argoConfig.ObjectMeta)
	}
	scheme := runtime.NewScheme()
	if err := tradingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for gvk := range scheme.AllKnownTypes() {
		// A resource kind is one with a list kind (option and event types have none).
		if gvk.Group != tradingv1.GroupVersion.Group || !scheme.Recognizes(gvk.GroupVersion().WithKind(gvk.Kind+"List")) {
			continue
		}
		kinds++
		if got := argoConfig.Data["resource.customizations.health."+gvk.Group+"_"+gvk.Kind]; got != string(script) {
			t.Errorf("%s: health check %q", gvk.Kind, got)
		}
	}
	if kinds != 3 || len(argoConfig.Data) != kinds+1 {
		t.Errorf("%d kinds, argocd-cm keys %v", kinds, slices.Sorted(maps.Keys(argoConfig.Data)))
	}
}
