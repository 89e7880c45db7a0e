package manifests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// redisPod runs one pod of the sigops-redis StatefulSet as local processes: its redis and
// sentinel containers' commands and args, unchanged, with the environment the StatefulSet
// sets pointed at 127.0.0.1, free ports and a directory standing for the pod's volume.
type redisPod struct {
	name      string
	port      int
	env       map[string]string
	dir       string
	redis     corev1.Container
	sentinel  corev1.Container
	processes []*exec.Cmd
}

func (p *redisPod) start(t *testing.T) {
	t.Helper()
	for _, c := range []corev1.Container{p.redis, p.sentinel} {
		cmd := exec.Command(c.Command[0], append(slices.Clone(c.Command[1:]), c.Args...)...)
		cmd.Env = os.Environ()
		for _, e := range c.Env {
			v, ok := p.env[e.Name]
			if !ok {
				t.Fatalf("container %s sets %s, which the test does not stand in for", c.Name, e.Name)
			}
			cmd.Env = append(cmd.Env, e.Name+"="+v)
		}
		log, err := os.OpenFile(filepath.Join(p.dir, c.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = log.Close()
		p.processes = append(p.processes, cmd)
	}
}

// kill ends the pod as a node failure does: SIGKILL to both containers.
func (p *redisPod) kill() {
	for _, cmd := range p.processes {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	p.processes = nil
}

func (p *redisPod) logs() string {
	var b strings.Builder
	for _, name := range []string{"redis", "sentinel"} {
		raw, _ := os.ReadFile(filepath.Join(p.dir, name+".log"))
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		fmt.Fprintf(&b, "--- %s %s (last lines)\n%s\n", p.name, name, strings.Join(lines[max(0, len(lines)-8):], "\n"))
	}
	return b.String()
}

// redisPods builds config/default and prepares its three Redis pods on free ports.
func redisPods(t *testing.T) ([]*redisPod, []string, string) {
	t.Helper()
	objs, err := Build(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var sts *appsv1.StatefulSet
	for _, s := range typed[appsv1.StatefulSet](t, objs, "StatefulSet") {
		if s.Name == "sigops-redis" {
			sts = s
		}
	}
	var scripts *corev1.ConfigMap
	for _, cm := range typed[corev1.ConfigMap](t, objs, "ConfigMap") {
		if cm.Name == "sigops-redis-scripts" {
			scripts = cm
		}
	}
	if sts == nil || scripts == nil || len(sts.Spec.Template.Spec.Containers) != 2 {
		t.Fatal("config/default: no sigops-redis StatefulSet with a redis and a sentinel container and its scripts")
	}
	base := t.TempDir()
	scriptDir, password := filepath.Join(base, "scripts"), filepath.Join(base, "password")
	if err := os.Mkdir(scriptDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts.Data {
		if err := os.WriteFile(filepath.Join(scriptDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(password, []byte("s3cret-for-the-test"), 0o600); err != nil {
		t.Fatal(err)
	}
	pods := make([]*redisPod, ptrValue(sts.Spec.Replicas))
	var sentinels []string
	for i := range pods {
		pods[i] = &redisPod{name: fmt.Sprintf("%s-%d", sts.Name, i), dir: filepath.Join(base, strconv.Itoa(i))}
		pods[i].port = freePort(t)
		sentinels = append(sentinels, "127.0.0.1:"+strconv.Itoa(freePort(t)))
		pods[i].redis, pods[i].sentinel = sts.Spec.Template.Spec.Containers[0], sts.Spec.Template.Spec.Containers[1]
		if err := os.Mkdir(pods[i].dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pods {
		p.env = map[string]string{
			"POD_NAME": p.name, "SELF": "127.0.0.1", "REDIS_PORT": strconv.Itoa(p.port),
			"SENTINEL_PORT": strings.TrimPrefix(sentinels[i], "127.0.0.1:"),
			"SENTINELS":     strings.Join(sentinels, " "), "REDIS_FIRST": "127.0.0.1 " + strconv.Itoa(pods[0].port),
			"REDIS_DATA": p.dir, "REDIS_PASSWORD_FILE": password, "SCRIPTS": scriptDir,
		}
	}
	return pods, sentinels, password
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// replication is a server's INFO replication as fields.
func replication(ctx context.Context, port int, password string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Password: password, MaxRetries: -1})
	defer c.Close()
	info, err := c.InfoMap(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	return info["Replication"], nil
}

// masterWith waits until the server on port is the master with want connected replicas.
func masterWith(ctx context.Context, port int, password string, want int) error {
	r, err := replication(ctx, port, password)
	if err != nil {
		return err
	}
	if r["role"] != "master" || r["connected_slaves"] != strconv.Itoa(want) {
		return fmt.Errorf("127.0.0.1:%d: role %s with %s replicas, want master with %d", port, r["role"], r["connected_slaves"], want)
	}
	return nil
}

// replicaOf says whether the server on port replicates the master on masterPort, link up.
func replicaOf(ctx context.Context, port, masterPort int, password string) error {
	r, err := replication(ctx, port, password)
	if err != nil {
		return err
	}
	if r["role"] != "slave" || r["master_port"] != strconv.Itoa(masterPort) || r["master_link_status"] != "up" {
		return fmt.Errorf("127.0.0.1:%d: role %s of port %s (link %s), want replica of %d", port, r["role"], r["master_port"], r["master_link_status"], masterPort)
	}
	return nil
}

// TestRedisSentinelFailsOver runs config/default's Redis StatefulSet (its start commands
// and scripts as shipped) as three local pods and checks what the manifests promise: pod 0
// becomes the master of the other two, a client configured as the daemons are follows a
// failover when the master's pod is killed, the killed pod comes back as a replica of the
// new master, and a restart of all three pods keeps the new master and its data.
func TestRedisSentinelFailsOver(t *testing.T) {
	ctx := t.Context()
	pods, sentinels, passwordFile := redisPods(t)
	const password = "s3cret-for-the-test"
	t.Cleanup(func() {
		for _, p := range pods {
			p.kill()
			if t.Failed() {
				t.Log(p.logs())
			}
		}
	})
	for _, p := range pods {
		p.start(t)
	}
	testkit.Eventually(t, 30*time.Second, "pod 0 master of two replicas", func() error {
		return masterWith(ctx, pods[0].port, password, 2)
	})
	// The servers and the Sentinels require the password: a client without it is refused.
	for _, addr := range []string{"127.0.0.1:" + strconv.Itoa(pods[0].port), sentinels[0]} {
		bare := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		err := bare.Ping(ctx).Err()
		_ = bare.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Fatalf("%s without the password: PING %v, want NOAUTH", addr, err)
		}
	}
	client, err := store.Connect(ctx, store.Options{SentinelAddrs: sentinels, MasterName: "sigops", PasswordFile: passwordFile,
		SentinelPasswordFile: passwordFile})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Set(ctx, "before-failover", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d replicas acknowledged (%v)", n, err)
	}
	testkit.Eventually(t, 30*time.Second, "three Sentinels that know each other", func() error {
		return sentinelsAgree(ctx, sentinels, password, pods[0].port)
	})

	pods[0].kill()
	var newMaster int
	testkit.Eventually(t, 60*time.Second, "a client write after the failover", func() error {
		if err := client.Set(ctx, "after-failover", "written", 0).Err(); err != nil {
			return err
		}
		for _, p := range pods[1:] {
			if masterWith(ctx, p.port, password, 1) == nil {
				newMaster = p.port
				return nil
			}
		}
		return errors.New("no surviving pod is master of the other")
	})
	if v, err := client.Get(ctx, "before-failover").Result(); err != nil || v != "kept" {
		t.Fatalf("after the failover before-failover = %q (%v)", v, err)
	}

	pods[0].start(t)
	testkit.Eventually(t, 30*time.Second, "pod 0 back as a replica of the new master", func() error {
		return replicaOf(ctx, pods[0].port, newMaster, password)
	})

	for _, p := range pods {
		p.kill()
	}
	for _, p := range pods {
		p.start(t)
	}
	testkit.Eventually(t, 30*time.Second, "the new master kept after all three pods restart", func() error {
		return masterWith(ctx, newMaster, password, 2)
	})
	for _, key := range []string{"before-failover", "after-failover"} {
		if err := client.Get(ctx, key).Err(); err != nil {
			t.Fatalf("after the restart %s: %v", key, err)
		}
	}
}

// sentinelsAgree says whether every Sentinel watches the master on masterPort with the two
// replicas and the two other Sentinels.
func sentinelsAgree(ctx context.Context, sentinels []string, password string, masterPort int) error {
	for _, addr := range sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1})
		m, err := s.Master(ctx, "sigops").Result()
		_ = s.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", addr, err)
		}
		if m["port"] != strconv.Itoa(masterPort) || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("sentinel %s: master port %s, %s replicas, %s other sentinels", addr, m["port"], m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}
