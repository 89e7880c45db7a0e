package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

const (
	testAPIKey    = "fleetTestKeyAbCdEf0123456789"
	testAPISecret = "fleetTestSecretZyXw9876543210"
)

func TestCreateConnectionMakesTheSecretAndTheConnection(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	conn, err := fl.CreateConnection(ctx, c, "main-binance", tradingv1.ExchangeConnectionSpec{
		Owner: "someone@else.io", Exchange: tradingv1.ExchangeBinance, Testnet: true,
		// Ignored: the Secret is always the one fleet makes.
		CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "other"},
	}, fleet.Credentials{APIKey: "  " + testAPIKey + "\n", APISecret: testAPISecret})
	if err != nil {
		t.Fatal(err)
	}
	ns := fleet.NamespaceFor(c.UserID)
	if conn.Namespace != ns || conn.Spec.Owner != c.Email || conn.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops ||
		conn.Spec.CredentialsSecretRef.Name != "main-binance-credentials" || !conn.Spec.Testnet || conn.UID == "" {
		t.Fatalf("connection %s/%s owner %s labels %v secret %s", conn.Namespace, conn.Name, conn.Spec.Owner, conn.Labels, conn.Spec.CredentialsSecretRef.Name)
	}
	var secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main-binance-credentials"}, &secret); err != nil {
		t.Fatal(err)
	}
	// The values are trimmed as the controller reads them; no passphrase key without one.
	if string(secret.Data["apiKey"]) != testAPIKey || string(secret.Data["apiSecret"]) != testAPISecret || len(secret.Data) != 2 {
		t.Fatalf("secret data keys %d", len(secret.Data))
	}
	if secret.Labels[fleet.LabelSecretKind] != fleet.SecretKindCredentials || secret.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops {
		t.Fatalf("secret labels %v", secret.Labels)
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != conn.UID || secret.OwnerReferences[0].Kind != "ExchangeConnection" {
		t.Fatalf("secret owners %+v", secret.OwnerReferences)
	}

	// The controller finds the Secret and judges the key: this suite's manager has no
	// connector, so the verdict is ExchangeNotSupported (not SecretNotFound), projected for
	// the owner.
	eventually(t, "projection", func() error {
		p, err := credentials.NewConnections(env.RDB).OwnedBy(ctx, string(conn.UID), c.Email)
		if err != nil {
			return err
		}
		if p.Reason != "ExchangeNotSupported" {
			return fmt.Errorf("reason %q", p.Reason)
		}
		return nil
	})
	got, err := fl.Connection(ctx, c, string(conn.UID))
	if err != nil || got.Name != "main-binance" {
		t.Fatalf("Connection: %v %v", got, err)
	}

	// Another owner, an unknown ID: one answer.
	other := newCaller()
	wantCode(t, "another owner's", mustErr(fl.Connection(ctx, other, string(conn.UID))), errs.NotFound)
	wantCode(t, "unknown", mustErr(fl.Connection(ctx, c, "no-such-uid")), errs.NotFound)
	wantCode(t, "another owner deletes", fl.DeleteConnection(ctx, other, string(conn.UID)), errs.NotFound)

	// The same name again.
	wantCode(t, "same name", mustErr(fl.CreateConnection(ctx, c, "main-binance", tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.ExchangeBinance},
		fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret})), errs.InvalidParameter)

	// Delete takes the Secret with the connection.
	if err := fl.DeleteConnection(ctx, c, string(conn.UID)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "connection and secret gone", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main-binance-credentials"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret: %v", err)
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main-binance"}, &tradingv1.ExchangeConnection{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("connection: %v", err)
		}
		return nil
	})
	wantCode(t, "deleted", mustErr(fl.Connection(ctx, c, string(conn.UID))), errs.NotFound)
}

// Refusals name the field and never echo a credential.
// An OKX key comes with its passphrase, which goes into the Secret beside the key (trimmed
// like them) and nowhere else.
func TestCreateOKXConnectionKeepsThePassphrase(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	const passphrase = "Okx-Passphrase-9"
	conn, err := fl.CreateConnection(ctx, c, "main-okx", tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.ExchangeOKX},
		fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret, Passphrase: " " + passphrase + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: conn.Namespace, Name: "main-okx-credentials"}, &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["passphrase"]) != passphrase || len(secret.Data) != 3 {
		t.Fatalf("secret data keys %d", len(secret.Data))
	}
	if strings.Contains(fmt.Sprintf("%+v", conn), passphrase) {
		t.Fatal("the returned connection holds the passphrase")
	}
}

func TestCreateConnectionRefusals(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	spec := tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.ExchangeBybit}
	for _, tc := range []struct {
		name  string
		conn  string
		spec  tradingv1.ExchangeConnectionSpec
		creds fleet.Credentials
		want  string
	}{
		{"no key", "a", spec, fleet.Credentials{APISecret: testAPISecret}, "apiKey is required"},
		{"no secret", "a", spec, fleet.Credentials{APIKey: testAPIKey}, "apiSecret is required"},
		{"two values pasted", "a", spec, fleet.Credentials{APIKey: testAPIKey + " " + testAPISecret, APISecret: testAPISecret}, "apiKey holds spaces"},
		{"too long", "a", spec, fleet.Credentials{APIKey: testAPIKey, APISecret: strings.Repeat("s", fleet.MaxCredentialLength+1)}, "apiSecret is longer"},
		{"bad name", "Bad_Name", spec, fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret}, "metadata.name"},
		{"unknown exchange", "a", tradingv1.ExchangeConnectionSpec{Exchange: "kraken"}, fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret}, "spec.exchange"},
		// OKX signs with the key's passphrase too: without it no request would be accepted.
		{"okx without passphrase", "a", tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.ExchangeOKX}, fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret}, "passphrase is required"},
	} {
		_, err := fl.CreateConnection(ctx, c, tc.conn, tc.spec, tc.creds)
		e := wantCode(t, tc.name, err, errs.InvalidParameter)
		if !strings.Contains(e.Message, tc.want) || strings.Contains(e.Message, testAPISecret) || strings.Contains(e.Message, testAPIKey) {
			t.Fatalf("%s: message %q", tc.name, e.Message)
		}
	}
	// A refused connection leaves no Secret behind.
	var secrets corev1.SecretList
	if err := k8s.List(ctx, &secrets, client.InNamespace(fleet.NamespaceFor(c.UserID))); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.HasSuffix(s.Name, "-credentials") {
			t.Fatalf("secret %s left behind", s.Name)
		}
	}
}

func TestDeleteConnectionRefusesGitOpsAndConnectionsInUse(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// A connection applied outside sigops, with the user's own Secret.
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-keys"},
		Data: map[string][]byte{"apiKey": []byte(testAPIKey), "apiSecret": []byte(testAPISecret)}}
	if err := k8s.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	gitops := &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitops"},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: c.Email, Exchange: tradingv1.ExchangeBinance,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "my-keys"}}}
	if err := k8s.Create(ctx, gitops); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "gitops", fl.DeleteConnection(ctx, c, string(gitops.UID)), errs.ManagedByGitOps)

	conn, err := fl.CreateConnection(ctx, c, "used", tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.ExchangeBinance},
		fleet.Credentials{APIKey: testAPIKey, APISecret: testAPISecret})
	if err != nil {
		t.Fatal(err)
	}
	bot, err := fl.Create(ctx, c, "live-one", tradingv1.SignalBotSpec{
		ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "used"}, Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	projected(t, c, string(bot.UID), "bot projected", func(registry.Bot) error { return nil })
	e := wantCode(t, "in use", fl.DeleteConnection(ctx, c, string(conn.UID)), errs.InvalidAction)
	if !strings.Contains(e.Message, "live-one") {
		t.Fatalf("message %q names no bot", e.Message)
	}
	if err := fl.Delete(ctx, c, string(bot.UID)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bot gone", func() error {
		if _, err := fl.Get(ctx, c, string(bot.UID)); err == nil {
			return fmt.Errorf("still projected")
		}
		return nil
	})
	if err := fl.DeleteConnection(ctx, c, string(conn.UID)); err != nil {
		t.Fatal(err)
	}
	// The user's own Secret of the GitOps connection is never touched.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-keys"}, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
}

func TestCreatePaperAccount(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	acct, err := fl.CreatePaperAccount(ctx, c, "big", tradingv1.PaperAccountSpec{Owner: "x@y.io", InitialBalance: "250000.5"})
	if err != nil {
		t.Fatal(err)
	}
	if acct.Namespace != fleet.NamespaceFor(c.UserID) || acct.Spec.Owner != c.Email || acct.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops ||
		acct.Spec.InitialBalance != "250000.5" || acct.Spec.Currency != "USDT" {
		t.Fatalf("created %s/%s owner %s labels %v spec %+v", acct.Namespace, acct.Name, acct.Spec.Owner, acct.Labels, acct.Spec)
	}
	for _, tc := range []struct{ name, balance, want string }{
		{"zero", "0", "initialBalance must be above 0"},
		{"negative", "-5", "spec.initialBalance"},
		{"not a number", "1e6", "spec.initialBalance"},
	} {
		e := wantCode(t, tc.name, mustErr(fl.CreatePaperAccount(ctx, c, "p-"+tc.name[:3], tradingv1.PaperAccountSpec{InitialBalance: tc.balance})), errs.InvalidParameter)
		if !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s: %q", tc.name, e.Message)
		}
	}
	wantCode(t, "same name", mustErr(fl.CreatePaperAccount(ctx, c, "big", tradingv1.PaperAccountSpec{})), errs.InvalidParameter)
	// Up to MaxPaperAccounts in the namespace ("big" is one).
	for i := 1; i < fleet.MaxPaperAccounts; i++ {
		if _, err := fl.CreatePaperAccount(ctx, c, fmt.Sprintf("p%d", i), tradingv1.PaperAccountSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	e := wantCode(t, "over the cap", mustErr(fl.CreatePaperAccount(ctx, c, "one-more", tradingv1.PaperAccountSpec{})), errs.InvalidParameter)
	if !strings.Contains(e.Message, fmt.Sprintf("%d paper accounts", fleet.MaxPaperAccounts)) {
		t.Fatalf("cap message %q", e.Message)
	}
}
