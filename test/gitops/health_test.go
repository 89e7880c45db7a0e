package gitops_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/test/stack"
)

// Argo CD health statuses.
const (
	argoHealthy     = "Healthy"
	argoProgressing = "Progressing"
	argoDegraded    = "Degraded"
	argoSuspended   = "Suspended"
)

// A PaperAccount is InProgress until the manager has observed its generation (as created,
// and after a spec change), then Current once Ready.
func TestPaperAccountHealth(t *testing.T) {
	ns := namespace(t)
	acct := create(t, &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"},
		Spec: tradingv1.PaperAccountSpec{Owner: owner}})
	// The API server's answer to the create: nothing reconciled yet.
	assertHealth(t, acct, status.InProgressStatus, argoProgressing)

	acct = waitFor(t, acct, tradingv1.ConditionReady, metav1.ConditionTrue, "Initialised")
	assertHealth(t, acct, status.CurrentStatus, argoHealthy)

	// The answer to a spec change holds the new generation and the old observedGeneration.
	if err := unstructured.SetNestedField(acct.Object, "20000", "spec", "initialBalance"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(context.Background(), acct); err != nil {
		t.Fatal(err)
	}
	if acct.GetGeneration() != 2 {
		t.Fatalf("generation %d after a spec change", acct.GetGeneration())
	}
	assertHealth(t, acct, status.InProgressStatus, argoProgressing)
	acct = waitFor(t, acct, tradingv1.ConditionReady, metav1.ConditionTrue, "Initialised")
	assertHealth(t, acct, status.CurrentStatus, argoHealthy)
}

// A SignalBot is Current and Healthy when it takes signals, Current and Suspended when
// paused, InProgress while its account is missing, and Failed (Degraded) when stalled on
// its webhook Secret.
func TestSignalBotHealth(t *testing.T) {
	ns := namespace(t)
	create(t, &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"},
		Spec: tradingv1.PaperAccountSpec{Owner: owner}})
	// A Secret in the name of the stalled bot's webhook Secret, holding no valid webhook ID.
	createTyped(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stalled-webhook",
		Labels: map[string]string{controllers.LabelSecretKind: "webhook"}},
		Data: map[string][]byte{controllers.WebhookSecretKeyID: []byte("not-a-uuid")}})
	bot := func(name, account string, suspend bool) *tradingv1.SignalBot {
		return &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: tradingv1.SignalBotSpec{Owner: owner, Symbol: "BTC/USDT", Suspend: suspend,
				PaperAccountRef: &tradingv1.LocalObjectReference{Name: account}}}
	}
	runCases(t, map[string]healthCase{
		"active":  {bot("active", "paper", false), tradingv1.ConditionReady, metav1.ConditionTrue, "Active", status.CurrentStatus, argoHealthy},
		"paused":  {bot("paused", "paper", true), tradingv1.ConditionReady, metav1.ConditionTrue, "Paused", status.CurrentStatus, argoSuspended},
		"waiting": {bot("waiting", "absent", false), tradingv1.ConditionReady, metav1.ConditionFalse, "PaperAccountNotFound", status.InProgressStatus, argoProgressing},
		"stalled": {bot("stalled", "paper", false), tradingv1.ConditionStalled, metav1.ConditionTrue, "WebhookSecretInvalid", status.FailedStatus, argoDegraded},
	})
}

// An ExchangeConnection is Current when validated, InProgress while the exchange is
// unreachable (Reconciling) and Failed (Degraded) when its Secret is missing (Stalled).
func TestExchangeConnectionHealth(t *testing.T) {
	ns := namespace(t)
	createTyped(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "key",
		Labels: map[string]string{controllers.LabelSecretKind: "credentials"}},
		StringData: map[string]string{tradingv1.CredentialsKeyAPIKey: binancefake.APIKey,
			tradingv1.CredentialsKeyAPISecret: binancefake.APISecret}})
	conn := func(name, secret, url string) *tradingv1.ExchangeConnection {
		return &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: tradingv1.ExchangeConnectionSpec{Owner: owner, Exchange: tradingv1.ExchangeBinance,
				CredentialsSecretRef: tradingv1.LocalObjectReference{Name: secret},
				Endpoints:            tradingv1.EndpointsSpec{Spot: url, Futures: url}}}
	}
	runCases(t, map[string]healthCase{
		"validated":   {conn("validated", "key", exchangeURL), tradingv1.ConditionReady, metav1.ConditionTrue, "Validated", status.CurrentStatus, argoHealthy},
		"unreachable": {conn("unreachable", "key", closedPortURL(t)), tradingv1.ConditionReconciling, metav1.ConditionTrue, "Unreachable", status.InProgressStatus, argoProgressing},
		"no-secret":   {conn("no-secret", "absent", exchangeURL), tradingv1.ConditionStalled, metav1.ConditionTrue, "SecretNotFound", status.FailedStatus, argoDegraded},
	})
}

// healthCase is one state of an object: the condition that shows it, and what kstatus and
// Argo CD must read of the object then.
type healthCase struct {
	obj       client.Object
	condition string
	status    metav1.ConditionStatus
	reason    string
	kstatus   status.Status
	argo      string
}

// runCases creates each case's object, checks that the API server's answer reads as in
// progress, waits for the case's condition and checks the object as the manager left it.
func runCases(t *testing.T, cases map[string]healthCase) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			obj := create(t, c.obj)
			assertHealth(t, obj, status.InProgressStatus, argoProgressing)
			obj = waitFor(t, obj, c.condition, c.status, c.reason)
			assertHealth(t, obj, c.kstatus, c.argo)
		})
	}
}

// assertHealth checks what kstatus and the Argo CD health script make of obj.
func assertHealth(t *testing.T, obj *unstructured.Unstructured, wantKstatus status.Status, wantArgo string) {
	t.Helper()
	res, err := status.Compute(obj)
	if err != nil {
		t.Fatal(err)
	}
	argo, msg := argoHealth(t, obj)
	if res.Status != wantKstatus || argo != wantArgo {
		t.Fatalf("%s %s: kstatus %s (%s), Argo CD %s (%s); want %s and %s; status %v",
			obj.GetKind(), obj.GetName(), res.Status, res.Message, argo, msg, wantKstatus, wantArgo, obj.Object["status"])
	}
	if msg == "" {
		t.Fatalf("%s %s: Argo CD %s without a message", obj.GetKind(), obj.GetName(), argo)
	}
}

// waitFor re-reads obj until its condition typ has the status and reason and, unless it
// is Reconciling (a retry leaves observedGeneration behind), its generation is observed;
// it returns obj as read.
func waitFor(t *testing.T, obj *unstructured.Unstructured, typ string, want metav1.ConditionStatus, reason string) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	testkit.Eventually(t, 20*time.Second, obj.GetName()+" "+typ+"="+string(want)+" "+reason, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return err
		}
		withConds, err := status.GetObjectWithConditions(got.Object)
		if err != nil {
			return err
		}
		for _, c := range withConds.Status.Conditions {
			if c.Type == typ && string(c.Status) == string(want) && c.Reason == reason {
				if typ == tradingv1.ConditionReconciling {
					return nil
				}
				return observed(got)
			}
		}
		return fmt.Errorf("conditions %+v", withConds.Status.Conditions)
	})
	return got
}

// observed fails until status.observedGeneration is the object's generation.
func observed(obj *unstructured.Unstructured) error {
	seen, _, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err != nil {
		return err
	}
	if seen != obj.GetGeneration() {
		return fmt.Errorf("observedGeneration %d, generation %d", seen, obj.GetGeneration())
	}
	return nil
}

// create creates a sigops object and returns the API server's answer, as a GitOps tool
// reads it: unstructured.
func create(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	gvk, err := apiutil.GVKForObject(obj, stack.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	createTyped(t, u)
	return u
}

func createTyped(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gitops-"}}
	createTyped(t, ns)
	return ns.Name
}

// closedPortURL is the URL of a 127.0.0.1 port nothing listens on: every call is refused.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
