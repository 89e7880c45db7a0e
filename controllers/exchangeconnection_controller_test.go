package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

const (
	fakeKey    = "AKIA-test-key-0123456789"
	fakeSecret = "s3cr3t-value-never-shown-anywhere"
)

func connection(ns, name, owner, secret string) *tradingv1.ExchangeConnection {
	return &tradingv1.ExchangeConnection{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: owner, Exchange: tradingv1.ExchangeBinance,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: secret}},
	}
}

// testCreds are a connection's credentials, unique to one test so that the stub exchange
// can answer per key and leak checks know what to look for.
type testCreds struct{ key, secret, passphrase string }

func newCreds(ns, what string) testCreds {
	return testCreds{key: "AK-" + ns + "-" + what, secret: "SK-" + ns + "-" + what + "-never-shown", passphrase: "PP-" + ns + "-" + what}
}

func (c testCreds) values() []string { return []string{c.key, c.secret, c.passphrase} }

func (c testCreds) exchange() exchange.Credentials {
	return exchange.Credentials{APIKey: c.key, APISecret: c.secret, Passphrase: c.passphrase}
}

// credentialsSecret is a credentials Secret; labelled, the manager watches it from the start.
func credentialsSecret(ns, name string, c testCreds, labelled bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{
			tradingv1.CredentialsKeyAPIKey:     []byte(c.key + "\n"), // --from-file leaves a newline
			tradingv1.CredentialsKeyAPISecret:  []byte(c.secret),
			tradingv1.CredentialsKeyPassphrase: []byte(c.passphrase),
		}}
	if labelled {
		s.Labels = map[string]string{controllers.LabelSecretKind: "credentials"}
	}
	return s
}

func setSecretCreds(t *testing.T, ns, name string, c testCreds) {
	t.Helper()
	eventually(t, "update secret", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(context.Background(), keyOf(ns, name), s); err != nil {
			return err
		}
		s.Data[tradingv1.CredentialsKeyAPIKey] = []byte(c.key)
		s.Data[tradingv1.CredentialsKeyAPISecret] = []byte(c.secret)
		s.Data[tradingv1.CredentialsKeyPassphrase] = []byte(c.passphrase)
		return k8s.Update(context.Background(), s)
	})
}

func exchangeBot(ns, name, owner, conn string, market tradingv1.Market) *tradingv1.SignalBot {
	return &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tradingv1.SignalBotSpec{Owner: owner, Symbol: "ETH/USDT", Market: market,
			ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: conn}},
	}
}

func waitConnection(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *tradingv1.ExchangeConnection {
	t.Helper()
	return waitFor(t, &tradingv1.ExchangeConnection{}, ns, name, "connection "+reason, func(c *tradingv1.ExchangeConnection) error {
		cond := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("ready = %+v", cond)
		}
		return nil
	})
}

// waitXconn waits until the connection's projection satisfies ok.
func waitXconn(t *testing.T, uid string, ok func(credentials.Connection) error) credentials.Connection {
	t.Helper()
	var c credentials.Connection
	eventually(t, "connection projection", func() error {
		var err error
		if c, err = credentials.NewConnections(rdb).Get(context.Background(), uid); err != nil {
			return err
		}
		return ok(c)
	})
	return c
}

// refused checks a projection of a refused key: not ready, the reason, no credentials.
func refused(reason string) func(credentials.Connection) error {
	return func(c credentials.Connection) error {
		if c.Ready || c.Reason != reason || c.Sealed != "" || c.KeyID != "" {
			return fmt.Errorf("projection ready=%v reason=%s sealed=%v", c.Ready, c.Reason, c.Sealed != "")
		}
		fields, err := rdb.HKeys(context.Background(), store.ExchangeConnection(c.UID)).Result()
		if err != nil {
			return err
		}
		if slices.Contains(fields, "credentials") {
			return fmt.Errorf("refused connection keeps its sealed credentials")
		}
		return nil
	}
}

func conditionOf(c *tradingv1.ExchangeConnection, typ string) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, typ)
}

// assertNoLeak checks that no credential value appears in the namespace's connections'
// status, bots' status, events, in the manager's logs, or anywhere in Redis.
func assertNoLeak(t *testing.T, ns string, values ...string) {
	t.Helper()
	ctx := context.Background()
	var texts []string
	var conns tradingv1.ExchangeConnectionList
	var bots tradingv1.SignalBotList
	var evs eventsv1.EventList
	for _, l := range []client.ObjectList{&conns, &bots, &evs} {
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns.Items {
		texts = append(texts, fmt.Sprintf("%+v", c.Status))
	}
	for _, b := range bots.Items {
		texts = append(texts, fmt.Sprintf("%+v", b.Status))
	}
	for _, e := range evs.Items {
		texts = append(texts, e.Note)
	}
	texts = append(texts, logs.String())
	for _, v := range values {
		for _, s := range texts {
			if strings.Contains(s, v) {
				t.Fatalf("credential leaked: %.300s", s)
			}
		}
		assertNotInRedis(t, v)
	}
}

func TestExchangeConnectionFollowsItsSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, connection(ns, "binance", "a@x.io", "creds"))
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live"},
		Spec: tradingv1.SignalBotSpec{Owner: "a@x.io", Symbol: "ETH/USDT",
			ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "binance"}},
	}
	create(t, bot)

	// No Secret yet: the connection is not Ready and the bot is disabled, projected with a
	// reason webhookd turns into EXCHANGE_DISCONNECTED.
	waitConnection(t, ns, "binance", metav1.ConditionFalse, "SecretNotFound")
	waitBot(t, ns, "live", "disabled", readyIs(metav1.ConditionFalse, "ExchangeConnectionNotReady"))
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledReason == "ExchangeConnectionNotReady" &&
			p.DisabledCode == registry.DisabledExchangeDisconnected && p.Account.Kind == registry.AccountExchange
	})

	// The Secret appears (without our label; the controller finds it and labels it).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{tradingv1.CredentialsKeyAPIKey: []byte(fakeKey), tradingv1.CredentialsKeyAPISecret: []byte(fakeSecret)}}
	create(t, secret)
	waitConnection(t, ns, "binance", metav1.ConditionTrue, "Validated")
	waitBot(t, ns, "live", "active", readyIs(metav1.ConditionTrue, "Active"))
	eventually(t, "secret labelled", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "creds"), s); err != nil {
			return err
		}
		if s.Labels[controllers.LabelSecretKind] != "credentials" {
			return fmt.Errorf("labels = %v", s.Labels)
		}
		return nil
	})

	// A key removed from the Secret: the watch notices, the bot is disabled again.
	eventually(t, "edit secret", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "creds"), s); err != nil {
			return err
		}
		delete(s.Data, tradingv1.CredentialsKeyAPISecret)
		return k8s.Update(ctx, s)
	})
	c := waitConnection(t, ns, "binance", metav1.ConditionFalse, "SecretMissingKeys")
	cond := meta.FindStatusCondition(c.Status.Conditions, tradingv1.ConditionReady)
	if !strings.Contains(cond.Message, "apiSecret") {
		t.Fatalf("message does not name the missing key: %q", cond.Message)
	}
	waitBot(t, ns, "live", "disabled again", readyIs(metav1.ConditionFalse, "ExchangeConnectionNotReady"))
	waitXconn(t, string(c.UID), refused("SecretMissingKeys"))

	// Secrets never leak into status, conditions, events, logs or Redis.
	assertNoLeak(t, ns, fakeKey, fakeSecret)
}

// A valid key: Ready, permissions and lastValidatedAt in status, the projection in Redis
// with the credentials sealed for this connection only; deleting the connection removes it.
func TestExchangeConnectionValidated(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "ok")
	exchanges.answer(cr.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", cr, false))
	xc := connection(ns, "bn", "Trader@X.io", "creds")
	xc.Spec.Testnet = true
	xc.Spec.Endpoints = tradingv1.EndpointsSpec{Spot: "http://127.0.0.1:18080", Futures: "http://127.0.0.1:18081"}
	create(t, xc)

	c := waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if got := c.Status.Permissions; !slices.Equal(got, []string{"futures", "read", "spot"}) {
		t.Fatalf("permissions = %v", got)
	}
	if c.Status.LastValidatedAt == nil || time.Since(c.Status.LastValidatedAt.Time) > time.Minute {
		t.Fatalf("lastValidatedAt = %v", c.Status.LastValidatedAt)
	}
	if c.Status.EncryptionKeyID != masterKeys.CurrentKeyID() || c.Status.ObservedGeneration != c.Generation {
		t.Fatalf("status = %+v", c.Status)
	}
	for _, typ := range []string{tradingv1.ConditionReconciling, tradingv1.ConditionStalled} {
		if conditionOf(c, typ) != nil {
			t.Fatalf("%s present on a validated connection", typ)
		}
	}
	if !slices.Contains(c.Finalizers, tradingv1.FinalizerRuntimeCleanup) {
		t.Fatalf("finalizers = %v", c.Finalizers)
	}

	// The exchange saw the trimmed credentials and the spec's endpoints.
	calls := exchanges.calls(cr.key)
	if len(calls) == 0 {
		t.Fatal("the exchange was never asked")
	}
	last := calls[len(calls)-1]
	if last.creds != cr.exchange() {
		t.Fatal("the exchange got other credentials than the Secret's (untrimmed?)")
	}
	if last.ep != (exchange.Endpoints{Spot: "http://127.0.0.1:18080", Futures: "http://127.0.0.1:18081", Testnet: true}) {
		t.Fatalf("endpoints = %+v", last.ep)
	}

	// The projection: everything the executor needs, the credentials only sealed. It is
	// compared with the connection's status as it reads at the same moment: a validation
	// after the one waited for above (another reconcile) moves both.
	p := waitXconn(t, string(c.UID), func(p credentials.Connection) error {
		if !p.Ready || p.Sealed == "" {
			return fmt.Errorf("not ready: %+v", p.Reason)
		}
		var cur tradingv1.ExchangeConnection
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "bn"}, &cur); err != nil {
			return err
		}
		if cur.Status.LastValidatedAt == nil || p.ValidatedAt != cur.Status.LastValidatedAt.UnixMilli() {
			return fmt.Errorf("projection validated at %d, status at %v", p.ValidatedAt, cur.Status.LastValidatedAt)
		}
		c = &cur
		return nil
	})
	if p.Exchange != "binance" || p.Owner != "trader@x.io" || !p.Testnet || p.SpotEndpoint != "http://127.0.0.1:18080" ||
		p.FuturesEndpoint != "http://127.0.0.1:18081" || p.Reason != "Validated" || !slices.Equal(p.Permissions, c.Status.Permissions) ||
		p.KeyID != masterKeys.CurrentKeyID() || p.ValidatedAt != c.Status.LastValidatedAt.UnixMilli() || p.Namespace != ns || p.Name != "bn" {
		t.Fatalf("projection = %+v", p)
	}
	got, err := masterKeys.OpenCredentials(p.Sealed, credentials.AAD(string(c.UID)))
	if err != nil || got != cr.exchange() {
		t.Fatalf("sealed credentials do not open to the Secret's: %v", err)
	}
	if _, err := masterKeys.OpenCredentials(p.Sealed, credentials.AAD("another-connection")); !errors.Is(err, credentials.ErrDecrypt) {
		t.Fatalf("blob opens for another connection: %v", err)
	}
	if strings.Contains(p.Sealed, cr.key) || strings.Contains(p.Sealed, cr.secret) {
		t.Fatal("blob shows the credentials")
	}
	assertNoLeak(t, ns, cr.values()...)

	// Deleted: the finalizer removes the projection, sealed credentials included.
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "connection gone", func() error {
		if err := k8s.Get(ctx, keyOf(ns, "bn"), &tradingv1.ExchangeConnection{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	if n, _ := rdb.Exists(ctx, store.ExchangeConnection(string(c.UID))).Result(); n != 0 {
		t.Fatal("projection survives the connection")
	}
}

// Every refusal: Ready=False with its reason, Stalled (a new key or setting is needed), the
// projection without credentials.
func TestExchangeConnectionRefusals(t *testing.T) {
	ns := namespace(t)
	leaky := newCreds(ns, "leaky")
	cases := []struct {
		name   string
		perms  exchange.Permissions
		err    error
		reason string
		perms2 []string // status.permissions expected
		stall  bool
	}{
		{"withdraw", permsWithdraw, nil, "WithdrawalPermissionEnabled", []string{"read", "spot", "withdraw"}, true},
		{"transfer", exchange.Permissions{Read: true, FuturesTrade: true, Transfer: true}, nil, "WithdrawalPermissionEnabled", []string{"futures", "read", "transfer"}, true},
		{"notrade", exchange.Permissions{Read: true, IPRestricted: true}, nil, "MissingTradePermission", []string{"ipRestricted", "read"}, true},
		{"noread", exchange.Permissions{SpotTrade: true}, nil, "MissingReadPermission", []string{"spot"}, true},
		{"invalid", exchange.Permissions{}, fmt.Errorf("binance: code -2015: %w", exchange.ErrInvalidCredentials), "InvalidCredentials", nil, true},
		// A careless connector puts the key and secret in its error: they are redacted.
		{"leaky", exchange.Permissions{}, fmt.Errorf("HTTP 418 for key %s secret %s", leaky.key, leaky.secret), "ValidationFailed", nil, false},
	}
	uids := map[string]string{}
	var all []string
	for _, c := range cases {
		cr := newCreds(ns, c.name)
		all = append(all, cr.values()...)
		exchanges.answer(cr.key, c.perms, c.err)
		create(t, credentialsSecret(ns, c.name, cr, true))
		xc := connection(ns, c.name, "a@x.io", c.name)
		create(t, xc)
		uids[c.name] = string(xc.UID)
	}
	// No connector for the exchange.
	create(t, credentialsSecret(ns, "bybit", newCreds(ns, "bybit"), true))
	by := connection(ns, "bybit", "a@x.io", "bybit")
	by.Spec.Exchange = tradingv1.ExchangeBybit
	create(t, by)
	all = append(all, newCreds(ns, "bybit").values()...)

	for _, c := range cases {
		xc := waitConnection(t, ns, c.name, metav1.ConditionFalse, c.reason)
		if !slices.Equal(xc.Status.Permissions, c.perms2) {
			t.Errorf("%s: permissions = %v, want %v", c.name, xc.Status.Permissions, c.perms2)
		}
		if stalled := conditionOf(xc, tradingv1.ConditionStalled) != nil; stalled != c.stall {
			t.Errorf("%s: stalled = %v", c.name, stalled)
		}
		if reconciling := conditionOf(xc, tradingv1.ConditionReconciling) != nil; reconciling == c.stall {
			t.Errorf("%s: reconciling = %v", c.name, reconciling)
		}
		if c.err == nil || errors.Is(c.err, exchange.ErrInvalidCredentials) {
			if xc.Status.LastValidatedAt == nil {
				t.Errorf("%s: the exchange answered but lastValidatedAt is unset", c.name)
			}
		}
		if xc.Status.EncryptionKeyID != "" {
			t.Errorf("%s: encryptionKeyID on a refused key", c.name)
		}
		waitXconn(t, uids[c.name], refused(c.reason))
	}
	msg := conditionOf(waitConnection(t, ns, "leaky", metav1.ConditionFalse, "ValidationFailed"), tradingv1.ConditionReady).Message
	if !strings.Contains(msg, "[redacted]") || !strings.Contains(msg, "HTTP 418") {
		t.Fatalf("leaky message = %q", msg)
	}
	w := conditionOf(waitConnection(t, ns, "withdraw", metav1.ConditionFalse, "WithdrawalPermissionEnabled"), tradingv1.ConditionReady)
	if !strings.Contains(w.Message, "withdraw") {
		t.Fatalf("withdraw message = %q", w.Message)
	}
	b := waitConnection(t, ns, "bybit", metav1.ConditionFalse, "ExchangeNotSupported")
	if conditionOf(b, tradingv1.ConditionStalled) == nil {
		t.Fatal("unsupported exchange not Stalled")
	}
	eventually(t, "refusal events", func() error {
		var evs eventsv1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "WithdrawalPermissionEnabled" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "withdraw" {
				return nil
			}
		}
		return fmt.Errorf("no WithdrawalPermissionEnabled warning among %d events", len(evs.Items))
	})
	assertNoLeak(t, ns, all...)
}

// A key that can withdraw is refused, its bot disabled (EXCHANGE_DISCONNECTED at
// webhookd), and a previously usable key's sealed credentials leave Redis.
func TestWithdrawEnabledKeyDisablesItsBot(t *testing.T) {
	ns := namespace(t)
	good, bad := newCreds(ns, "good"), newCreds(ns, "withdraw")
	exchanges.answer(good.key, permsSpot, nil)
	exchanges.answer(bad.key, permsWithdraw, nil)
	create(t, credentialsSecret(ns, "creds", good, true))
	xc := connection(ns, "bn", "a@x.io", "creds")
	create(t, xc)
	bot := exchangeBot(ns, "bot", "a@x.io", "bn", tradingv1.MarketSpot)
	create(t, bot)
	waitBot(t, ns, "bot", "active", readyIs(metav1.ConditionTrue, "Active"))
	waitXconn(t, string(xc.UID), func(p credentials.Connection) error {
		if !p.Ready || p.Sealed == "" {
			return fmt.Errorf("not usable yet")
		}
		return nil
	})

	// The user swaps in a key that can withdraw: the Secret watch re-validates at once.
	setSecretCreds(t, ns, "creds", bad)
	waitConnection(t, ns, "bn", metav1.ConditionFalse, "WithdrawalPermissionEnabled")
	waitXconn(t, string(xc.UID), refused("WithdrawalPermissionEnabled"))
	b := waitBot(t, ns, "bot", "disabled", readyIs(metav1.ConditionFalse, "ExchangeConnectionNotReady"))
	if b.Status.Availability != tradingv1.AvailabilityDisabled {
		t.Fatalf("availability = %s", b.Status.Availability)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); !strings.Contains(c.Message, "withdraw") {
		t.Fatalf("bot message does not say why: %q", c.Message)
	}
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledCode == registry.DisabledExchangeDisconnected
	})
	assertNoLeak(t, ns, append(good.values(), bad.values()...)...)
}

// Unreachable is transient: Reconciling, retried with backoff until the exchange answers.
func TestUnreachableExchangeIsRetried(t *testing.T) {
	ns := namespace(t)
	cr := newCreds(ns, "down")
	exchanges.answer(cr.key, exchange.Permissions{}, fmt.Errorf("dial tcp: i/o timeout: %w", exchange.ErrUnreachable))
	create(t, credentialsSecret(ns, "creds", cr, true))
	create(t, connection(ns, "bn", "a@x.io", "creds"))

	c := waitConnection(t, ns, "bn", metav1.ConditionFalse, "Unreachable")
	if conditionOf(c, tradingv1.ConditionReconciling) == nil || conditionOf(c, tradingv1.ConditionStalled) != nil {
		t.Fatalf("conditions = %+v", c.Status.Conditions)
	}
	waitXconn(t, string(c.UID), refused("Unreachable"))
	eventually(t, "retries", func() error {
		if n := len(exchanges.calls(cr.key)); n < 3 {
			return fmt.Errorf("%d calls", n)
		}
		return nil
	})

	exchanges.answer(cr.key, permsSpot, nil) // back up
	c = waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if conditionOf(c, tradingv1.ConditionReconciling) != nil {
		t.Fatal("still Reconciling")
	}
	assertNoLeak(t, ns, cr.values()...)
}

// A bot needs its market's trade permission on the key; a new key in the Secret is
// re-validated at once and lets it trade.
func TestBotNeedsItsMarketsPermission(t *testing.T) {
	ns := namespace(t)
	spotOnly, both := newCreds(ns, "spot"), newCreds(ns, "both")
	exchanges.answer(spotOnly.key, permsSpot, nil)
	exchanges.answer(both.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", spotOnly, true))
	create(t, connection(ns, "bn", "a@x.io", "creds"))
	fut := exchangeBot(ns, "fut", "a@x.io", "bn", tradingv1.MarketFutures)
	create(t, fut)
	create(t, exchangeBot(ns, "spot", "a@x.io", "bn", tradingv1.MarketSpot))

	waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	waitBot(t, ns, "spot", "spot bot active", readyIs(metav1.ConditionTrue, "Active"))
	b := waitBot(t, ns, "fut", "futures bot disabled", readyIs(metav1.ConditionFalse, "MissingTradePermission"))
	if c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); !strings.Contains(c.Message, "futures") {
		t.Fatalf("message = %q", c.Message)
	}
	waitProjection(t, string(fut.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledReason == "MissingTradePermission" &&
			p.DisabledCode == registry.DisabledPermissionMissing
	})

	setSecretCreds(t, ns, "creds", both)
	waitFor(t, &tradingv1.ExchangeConnection{}, ns, "bn", "futures permission", func(c *tradingv1.ExchangeConnection) error {
		if !slices.Contains(c.Status.Permissions, "futures") {
			return fmt.Errorf("permissions = %v", c.Status.Permissions)
		}
		return nil
	})
	waitBot(t, ns, "fut", "futures bot active", readyIs(metav1.ConditionTrue, "Active"))
	if len(exchanges.calls(both.key)) == 0 {
		t.Fatal("the new key was never validated")
	}
	assertNoLeak(t, ns, append(spotOnly.values(), both.values()...)...)
}

// directReconciler is a second ExchangeConnection reconciler outside the manager, as a
// restarted manager with other flags would be.
func directReconciler(keys *credentials.Ring) *controllers.ExchangeConnectionReconciler {
	return &controllers.ExchangeConnectionReconciler{
		Client: k8s, APIReader: k8s, Connections: credentials.NewConnections(rdb), Keys: keys,
		Connectors: map[string]exchange.Connector{"binance": exchanges},
	}
}

// validatedConnection creates a connection the suite's manager validates and leaves alone
// afterwards (its Secret is labelled, so no later label patch wakes it up).
func validatedConnection(t *testing.T, ns string, cr testCreds) (*tradingv1.ExchangeConnection, ctrl.Request) {
	t.Helper()
	exchanges.answer(cr.key, permsSpot, nil)
	create(t, credentialsSecret(ns, "creds", cr, true))
	create(t, connection(ns, "bn", "a@x.io", "creds"))
	c := waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	waitXconn(t, string(c.UID), func(p credentials.Connection) error {
		if p.KeyID != masterKeys.CurrentKeyID() {
			return fmt.Errorf("key %s", p.KeyID)
		}
		return nil
	})
	// Let any reconcile still queued from the creation events finish first.
	for n := -1; n != len(exchanges.calls(cr.key)); {
		n = len(exchanges.calls(cr.key))
		time.Sleep(300 * time.Millisecond)
	}
	return c, ctrl.Request{NamespacedName: keyOf(ns, "bn")}
}

func TestMasterKeyMissingAndRevalidation(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "k")
	c, req := validatedConnection(t, ns, cr)

	// A manager without a master key never stores credentials and says why.
	if _, err := directReconciler(nil).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := waitConnection(t, ns, "bn", metav1.ConditionFalse, "MasterKeyMissing")
	if conditionOf(got, tradingv1.ConditionStalled) == nil || got.Status.EncryptionKeyID != "" {
		t.Fatalf("status = %+v", got.Status)
	}
	waitXconn(t, string(c.UID), refused("MasterKeyMissing"))

	// With a key: validated again, and the next check is scheduled one period later.
	before := len(exchanges.calls(cr.key))
	r := directReconciler(masterKeys)
	// The period is spread by up to a fifth, so that connections do not all call at once.
	inPeriod := func(d, p time.Duration) bool { return d >= p && d <= p+p/5 }
	res, err := r.Reconcile(ctx, req)
	if err != nil || !inPeriod(res.RequeueAfter, controllers.DefaultExchangeRevalidatePeriod) {
		t.Fatalf("result = %+v, %v; want a re-validation in %s", res, err, controllers.DefaultExchangeRevalidatePeriod)
	}
	r.RevalidatePeriod = 3 * time.Minute
	if res, _ = r.Reconcile(ctx, req); !inPeriod(res.RequeueAfter, 3*time.Minute) {
		t.Fatalf("requeue = %s", res.RequeueAfter)
	}
	if after := len(exchanges.calls(cr.key)); after != before+2 {
		t.Fatalf("exchange calls %d -> %d; every reconcile must re-validate", before, after)
	}
	waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	waitXconn(t, string(c.UID), func(p credentials.Connection) error {
		if !p.Ready || p.Sealed == "" {
			return fmt.Errorf("not usable")
		}
		return nil
	})
}

// Master-key rotation: a manager restarted with a new current key (the old one as
// previous) re-seals the credentials on its first reconcile; afterwards the old key is no
// longer needed, and alone it can no longer open them.
func TestMasterKeyRotation(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "rot")
	c, req := validatedConnection(t, ns, cr)
	aad := credentials.AAD(string(c.UID))
	oldBlob := waitXconn(t, string(c.UID), func(credentials.Connection) error { return nil }).Sealed

	// The suite's manager keeps the blob while nothing changed (executors keep their clients).
	if _, err := directReconciler(masterKeys).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if p := waitXconn(t, string(c.UID), func(credentials.Connection) error { return nil }); p.Sealed != oldBlob {
		t.Fatal("an unchanged connection was re-sealed")
	}

	newKey := []byte("0123456789abcdef0123456789ABCDEF")
	rotated, err := credentials.NewRing(newKey, masterKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := directReconciler(rotated).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	p := waitXconn(t, string(c.UID), func(p credentials.Connection) error {
		if p.KeyID != rotated.CurrentKeyID() {
			return fmt.Errorf("key %s", p.KeyID)
		}
		return nil
	})
	if p.Sealed == oldBlob || rotated.NeedsRotation(p.Sealed) {
		t.Fatal("not re-sealed with the new key")
	}
	xc := waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	if xc.Status.EncryptionKeyID != rotated.CurrentKeyID() {
		t.Fatalf("status key = %s", xc.Status.EncryptionKeyID)
	}

	// The old key dropped: the new key alone opens the credentials; the old key alone cannot.
	newOnly, _ := credentials.NewRing(newKey)
	if got, err := newOnly.OpenCredentials(p.Sealed, aad); err != nil || got != cr.exchange() {
		t.Fatalf("new key alone: %v", err)
	}
	if _, err := masterKeys.OpenCredentials(p.Sealed, aad); !errors.Is(err, credentials.ErrUnknownKey) {
		t.Fatalf("old key alone: %v", err)
	}
	// A manager on the new key alone keeps the re-sealed blob.
	if _, err := directReconciler(newOnly).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if again := waitXconn(t, string(c.UID), func(credentials.Connection) error { return nil }); again.Sealed != p.Sealed {
		t.Fatal("re-sealed again without a reason")
	}
	assertNoLeak(t, ns, cr.values()...)
	if logs.Contains(string(newKey)) || logs.Contains(string(masterKey)) {
		t.Fatal("a master key was logged")
	}
}

// A working connection whose key the exchange starts refusing tells its owner once
// (a connection_invalid fact on the archive stream of the owner's partition, for notifyd),
// with the connection's name and no credential.
func TestRevokedKeyTellsItsOwner(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "tell")
	exchanges.answer(cr.key, permsTrade, nil)
	const user = "u-tell-owner"
	if err := rdb.Set(ctx, store.UserByEmail("tell-owner@x.io"), user, 0).Err(); err != nil {
		t.Fatal(err)
	}
	create(t, credentialsSecret(ns, "creds", cr, false))
	create(t, connection(ns, "bn-tell", "tell-owner@x.io", "creds"))
	waitConnection(t, ns, "bn-tell", metav1.ConditionTrue, "Validated")

	exchanges.answer(cr.key, exchange.Permissions{}, fmt.Errorf("binance: code -2015: %w", exchange.ErrInvalidCredentials))
	eventually(t, "touch the Secret", func() error {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "creds"), s); err != nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["touched"] = "1"
		return k8s.Update(ctx, s)
	})
	waitConnection(t, ns, "bn-tell", metav1.ConditionFalse, "InvalidCredentials")
	eventually(t, "the owner told", func() error {
		msgs, err := rdb.XRange(ctx, store.Archive(store.PartitionOf(user)), "-", "+").Result()
		if err != nil {
			return err
		}
		var told []string
		for _, m := range msgs {
			if m.Values["k"] == store.ArchiveUserFact && m.Values["u"] == user {
				told = append(told, m.Values["v"].(string))
			}
		}
		if len(told) != 1 || !strings.Contains(told[0], `"kind":"connection_invalid"`) || !strings.Contains(told[0], `"connection":"bn-tell"`) ||
			!strings.Contains(told[0], `"reason":"KeyRevoked"`) || strings.Contains(told[0], cr.key) || strings.Contains(told[0], cr.secret) {
			return fmt.Errorf("facts told: %q", told)
		}
		return nil
	})
}
