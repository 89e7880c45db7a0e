package manifests

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sigops/sigops/runtime/store"
)

// redisOptions is what a daemon container's flags tell runtime/store: its --redis-* args
// with $(VAR) expanded from the ConfigMaps it reads with envFrom, as the kubelet expands
// them, parsed by store.BindFlags.
func redisOptions(c corev1.Container, configMaps map[string]*corev1.ConfigMap) (store.Options, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		cm := configMaps[from.ConfigMapRef.Name]
		if cm == nil {
			return store.Options{}, fmt.Errorf("envFrom names ConfigMap %s, which the build lacks", from.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o store.Options
	store.BindFlags(fs, &o)
	var args []string
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "--redis-") {
			continue
		}
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		if strings.Contains(a, "$(") {
			return o, fmt.Errorf("%q names a variable no ConfigMap of the container sets", a)
		}
		args = append(args, a)
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// TestDaemonsReachRedis parses every daemon's Redis flags as the daemon does. In
// config/default they name the three Sentinels of the sigops-redis StatefulSet (by the pods'
// DNS names under its headless Service), the master name the Sentinels monitor, and the
// password file for the servers and the Sentinels; with external Redis they name one server
// and the StatefulSet is gone.
func TestDaemonsReachRedis(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.target, func(t *testing.T) {
			configMaps := map[string]*corev1.ConfigMap{}
			for _, cm := range typed[corev1.ConfigMap](t, b.objs, "ConfigMap") {
				configMaps[cm.Name] = cm
			}
			sentinels, master := sentinelsOf(t, typed[appsv1.StatefulSet](t, b.objs, "StatefulSet"), configMaps)
			for _, w := range workloads(t, b.objs) {
				if !slices.Contains(daemons, w.pod.Labels["app.kubernetes.io/component"]) {
					continue
				}
				o, err := redisOptions(w.pod.Spec.Containers[0], configMaps)
				if err != nil {
					t.Fatalf("%s: %v", w.name, err)
				}
				switch {
				case sentinels != nil && (!slices.Equal(o.SentinelAddrs, sentinels) || o.MasterName != master):
					t.Errorf("%s reaches Redis at %s; want master %s via sentinels %q", w.name, o, master, sentinels)
				case sentinels == nil && b.target == "config/overlays/external-redis" && o.Addr == "":
					t.Errorf("%s: with external Redis, want --redis-addr; have %s", w.name, o)
				case o.PasswordFile == "":
					t.Errorf("%s: no --redis-password-file", w.name)
				case sentinels != nil && o.SentinelPasswordFile != o.PasswordFile:
					t.Errorf("%s: the Sentinels require the servers' password; --redis-sentinel-password-file is %q", w.name, o.SentinelPasswordFile)
				}
			}
		})
	}
}

// sentinelsOf returns the Sentinel addresses of the sigops-redis StatefulSet, one per pod
// (pod.service:26379, which the search path completes in the pods' namespace), and the
// master name its Sentinel script monitors; nil when the build has no such StatefulSet.
func sentinelsOf(t *testing.T, sets []*appsv1.StatefulSet, configMaps map[string]*corev1.ConfigMap) ([]string, string) {
	t.Helper()
	for _, s := range sets {
		if s.Name != "sigops-redis" {
			continue
		}
		var addrs []string
		for i := range ptrValue(s.Spec.Replicas) {
			addrs = append(addrs, fmt.Sprintf("%s-%d.%s:26379", s.Name, i, s.Spec.ServiceName))
		}
		scripts := configMaps["sigops-redis-scripts"]
		if scripts == nil {
			t.Fatal("StatefulSet sigops-redis without its ConfigMap sigops-redis-scripts")
		}
		for _, line := range strings.Split(scripts.Data["sentinel.sh"], "\n") {
			// sentinel monitor <name> $master <quorum>, $master being "host port"
			if f := strings.Fields(line); len(f) == 5 && f[0] == "sentinel" && f[1] == "monitor" {
				if f[4] != "2" {
					t.Errorf("Sentinel quorum %s, want 2 of 3", f[4])
				}
				return addrs, f[2]
			}
		}
		t.Fatal("sentinel.sh monitors no master")
	}
	return nil, ""
}
