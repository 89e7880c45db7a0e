package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// Scheme knows the built-in kinds and the sigops kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registrations; cannot fail
	}
	if err := tradingv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewClient returns a client of cfg with the given client-side rate limits.
func NewClient(cfg *rest.Config, qps float32, burst int) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// ReadKustomization reads the objects of the files a kustomization.yaml lists under
// resources, in order. Only plain files are supported (no bases, patches or generators),
// which is all config/samples uses.
func ReadKustomization(dir string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		more, err := ReadObjects(filepath.Join(dir, r))
		if err != nil {
			return nil, err
		}
		for _, o := range more {
			if k.Namespace != "" {
				o.SetNamespace(k.Namespace)
			}
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

// ReadObjects decodes every object of a (multi-document) YAML or JSON file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue // an empty document
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion, kind or metadata.name", path)
		}
		objs = append(objs, o)
	}
}

// CreateAll creates objs in order; objects that already exist are left as they are.
// Namespaced objects without a namespace go to "default".
func CreateAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if namespaced && o.GetNamespace() == "" {
			o.SetNamespace("default")
		}
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// Condition is the Ready condition as read from an object's status.
type Condition struct {
	Status, Reason, Message string
}

// ReadyCondition reads status.conditions[type=Ready]; found is false when there is none yet.
func ReadyCondition(o *unstructured.Unstructured) (c Condition, found bool) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, raw := range conds {
		m, ok := raw.(map[string]any)
		if !ok || m["type"] != tradingv1.ConditionReady {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		return Condition{Status: str("status"), Reason: str("reason"), Message: str("message")}, true
	}
	return Condition{}, false
}

// WaitReady polls the object until its Ready condition is True, the context ends or the
// timeout passes, and returns the object as last read.
func WaitReady(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName, timeout time.Duration) (*unstructured.Unstructured, error) {
	deadline := time.After(timeout)
	last := "not found yet"
	for {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		err := c.Get(ctx, key, o)
		switch {
		case err == nil:
			cond, found := ReadyCondition(o)
			if cond.Status == "True" {
				return o, nil
			}
			if found {
				last = fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			} else {
				last = "no Ready condition yet"
			}
		case !apierrors.IsNotFound(err):
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("%s %s not Ready within %s: %s", gvk.Kind, key, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
