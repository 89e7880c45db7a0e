// Package manifests builds the kustomizations in config/ the way `kubectl apply -k` does, so
// that tests can apply what a platform team applies and check its properties.
package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Targets are the kustomizations an operator applies, relative to the repository root:
// config/default and every overlay under config/overlays.
func Targets(root string) ([]string, error) {
	overlays, err := subdirs(filepath.Join(root, "config", "overlays"))
	if err != nil {
		return nil, err
	}
	out := []string{filepath.Join("config", "default")}
	for _, o := range overlays {
		out = append(out, filepath.Join("config", "overlays", o))
	}
	return out, nil
}

// Components are the directory names under config/components.
func Components(root string) ([]string, error) {
	return subdirs(filepath.Join(root, "config", "components"))
}

func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Build runs kustomize on dir (as `kubectl kustomize dir`, with kustomize's default
// options) and returns the objects it produces, in its output order.
func Build(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON, so numbers are int64 and float64 as client-go's objects hold them.
		js, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		out = append(out, u)
	}
	return out, nil
}
