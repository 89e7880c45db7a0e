package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/internal/testkit"
)

// botYAML is what a user keeps in Git and applies again after deleting the bot.
const botYAML = `
apiVersion: trading.sigops.dev/v1alpha1
kind: SignalBot
metadata:
  name: again
  namespace: %s
spec:
  owner: trader@example.com
  paperAccountRef:
    name: paper
  symbol: BTC/USDT
`

// apply server-side-applies one YAML document, as `kubectl apply --server-side` would.
func apply(t *testing.T, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
		t.Fatalf("apply %s: %v", u.GetName(), err)
	}
}

// readyBot waits up to d for the bot to be Ready and returns it with its webhook path.
func readyBot(t *testing.T, key client.ObjectKey, d time.Duration) (bot *tradingv1.SignalBot, path string) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, d, "bot "+key.String()+" ready", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, key, b); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", c)
		}
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: b.Status.WebhookSecretName}, s); err != nil {
			return err
		}
		if owner := metav1.GetControllerOf(s); owner == nil || owner.UID != b.UID {
			return fmt.Errorf("Secret %s is controlled by %+v, not by bot %s", s.Name, owner, b.UID)
		}
		bot, path = b, strings.TrimPrefix(string(s.Data[controllers.WebhookSecretKeyURL]), "https://sigops.test")
		return nil
	})
	return bot, path
}

// Deleting a bot and applying the same YAML again gives a working bot at once, with a new
// URL; the old URL says the bot it belonged to is deleted.
func TestBotDeletedAndAppliedAgainWorksAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := paperNamespace(t)
	doc := fmt.Sprintf(botYAML, ns)
	key := client.ObjectKey{Namespace: ns, Name: "again"}

	apply(t, doc)
	old, oldPath := readyBot(t, key, 20*time.Second)
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bot deleted", func() error {
		if err := k8s.Get(ctx, key, &tradingv1.SignalBot{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})

	began := time.Now()
	apply(t, doc)
	bot, path := readyBot(t, key, 10*time.Second)
	t.Logf("re-applied bot Ready after %s", time.Since(began).Round(time.Millisecond))
	if bot.UID == old.UID {
		t.Fatal("the re-applied bot has the deleted bot's UID")
	}
	if path == oldPath {
		t.Fatalf("webhook URL %s reused by the re-applied bot", path)
	}

	pin(t, "BTC/USDT", "65000")
	if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT","size":"10%"}`); r.Status != 200 || !r.Body.Success {
		t.Fatalf("signal to the new URL: %+v", r)
	}
	if r := send(t, oldPath, `{"action":"buy","symbol":"BTCUSDT","size":"10%"}`); r.Status != 403 || r.Body.Code != "BOT_DELETED" {
		t.Fatalf("signal to the deleted bot's URL: %+v; want 403 BOT_DELETED", r)
	}
}

// The stack runs kube-controller-manager: dependents of a deleted owner are collected and a
// deleted namespace goes away (with envtest alone both would stay for ever).
func TestClusterCollectsGarbageAndDeletesNamespaces(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-gc-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}}
	if err := k8s.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := k8s.Create(ctx, owned); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owned ConfigMap collected", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(owned), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})

	if err := k8s.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The namespace controller rediscovers every resource type before it empties a
	// namespace, which is slower than the collector on a busy machine.
	testkit.Eventually(t, time.Minute, "namespace deleted", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
