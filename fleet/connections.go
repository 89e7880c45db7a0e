package fleet

import (
	"context"
	"errors"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
)

// Credentials are an exchange API key as the user typed it. exchange.Credentials redacts
// itself in every format verb, so a value printed by mistake shows nothing.
type Credentials = exchange.Credentials

// Labels of the credentials Secrets fleet makes.
const (
	// LabelSecretKind with SecretKindCredentials is the label the ExchangeConnection
	// controller watches Secrets by (controllers.LabelSecretKind): set at creation, the
	// manager sees the Secret's later edits without labelling it first.
	LabelSecretKind       = "trading.sigops.dev/secret-kind"
	SecretKindCredentials = "credentials"
)

// Limits of CreateConnection.
const (
	// MaxConnections bounds the exchange connections CreateConnection makes in one user's
	// namespace.
	MaxConnections = 10
	// MaxCredentialLength bounds each credential value: the connectors sign with HMAC keys
	// (Binance, Bybit, OKX), whose keys and secrets are under 128 characters; anything longer
	// than this is not a key.
	MaxCredentialLength = 512
)

// CredentialsSecretName is the Secret that holds connection name's credentials.
func CredentialsSecretName(name string) string { return name + "-credentials" }

// connNotFound is the one answer for a connection that is missing or another owner's.
func connNotFound() *errs.Error { return errs.New(errs.NotFound, "exchange connection not found") }

// CreateConnection makes exchange connection name in the caller's namespace: first the
// Secret CredentialsSecretName(name) holding creds (apiKey, apiSecret, and passphrase when
// given), then the ExchangeConnection naming it, owned by the caller whatever spec.owner
// says and labelled managed-by sigops, then the connection becomes the Secret's owner so
// that deleting the connection deletes the Secret. It returns the connection as the API
// server stored it (its UID is the connection's ID); the controller validates the key with
// the exchange within moments and projects the verdict.
//
// The credentials go nowhere but the Secret: no error, log or returned value carries them.
func (f *Fleet) CreateConnection(ctx context.Context, c Caller, name string, spec tradingv1.ExchangeConnectionSpec, creds Credentials) (*tradingv1.ExchangeConnection, error) {
	creds = Credentials{APIKey: strings.TrimSpace(creds.APIKey), APISecret: strings.TrimSpace(creds.APISecret),
		Passphrase: strings.TrimSpace(creds.Passphrase)}
	if err := checkCredential("apiKey", creds.APIKey, true); err != nil {
		return nil, err
	}
	if err := checkCredential("apiSecret", creds.APISecret, true); err != nil {
		return nil, err
	}
	// OKX signs every request with the key's passphrase as well; the others have none.
	if err := checkCredential("passphrase", creds.Passphrase, spec.Exchange == tradingv1.ExchangeOKX); err != nil {
		return nil, err
	}
	ns, err := f.Namespace(ctx, c)
	if err != nil {
		return nil, err
	}
	var have tradingv1.ExchangeConnectionList
	if err := f.k8s.List(ctx, &have, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if len(have.Items) >= MaxConnections {
		return nil, errs.New(errs.InvalidParameter, "you have %d exchange connections, the most sigops makes for one user: delete one first", len(have.Items))
	}
	for _, x := range have.Items {
		if x.Name == name {
			return nil, errs.New(errs.InvalidParameter, "name: an exchange connection named %q already exists", name)
		}
	}

	secretName := CredentialsSecretName(name)
	data := map[string][]byte{tradingv1.CredentialsKeyAPIKey: []byte(creds.APIKey), tradingv1.CredentialsKeyAPISecret: []byte(creds.APISecret)}
	if creds.Passphrase != "" {
		data[tradingv1.CredentialsKeyPassphrase] = []byte(creds.Passphrase)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName,
			Labels: map[string]string{LabelManagedBy: ManagedBySigops, LabelSecretKind: SecretKindCredentials}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := f.k8s.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, errs.New(errs.InvalidParameter, "name: a Secret named %q already exists in your namespace; choose another connection name", secretName)
		}
		// The Secret's validation names fields (data keys, metadata.name), never values.
		return nil, specError(err, "the connection's name is invalid")
	}

	spec.Owner = c.Email
	spec.CredentialsSecretRef = tradingv1.LocalObjectReference{Name: secretName}
	conn := &tradingv1.ExchangeConnection{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelManagedBy: ManagedBySigops}},
		Spec:       spec,
	}
	if err := f.k8s.Create(ctx, conn); err != nil {
		// Without its connection the Secret serves nothing: the credentials go with it.
		_ = f.k8s.Delete(context.WithoutCancel(ctx), secret, client.Preconditions{UID: &secret.UID})
		if apierrors.IsAlreadyExists(err) {
			return nil, errs.New(errs.InvalidParameter, "name: an exchange connection named %q already exists", name)
		}
		return nil, specError(err, "the connection's settings are invalid")
	}

	// The owner reference makes the garbage collector delete the Secret with the connection,
	// however the connection is deleted (here, kubectl, a namespace's deletion). The
	// connection works without it, and DeleteConnection deletes the Secret itself, so a
	// failure here does not undo the connection.
	orig := secret.DeepCopy()
	if err := controllerutil.SetOwnerReference(conn, secret, f.k8s.Scheme()); err == nil {
		_ = f.k8s.Patch(ctx, secret, client.MergeFrom(orig))
	}
	return conn, nil
}

// checkCredential refuses an empty required value, an over-long one, and one with
// whitespace or control characters inside (a paste of two fields, a line break): no
// exchange key holds them. The message names the field only.
func checkCredential(field, v string, required bool) error {
	if v == "" {
		if required {
			return errs.New(errs.InvalidParameter, "%s is required", field)
		}
		return nil
	}
	if len(v) > MaxCredentialLength {
		return errs.New(errs.InvalidParameter, "%s is longer than %d characters: that is not an exchange key", field, MaxCredentialLength)
	}
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errs.New(errs.InvalidParameter, "%s holds spaces or line breaks: paste the value alone", field)
	}
	return nil
}

// Connection is the caller's ExchangeConnection id (its UID) as the API server has it,
// status included: the connection the controller has not projected yet is found here (in the
// caller's namespace), a projected one wherever its projection says it lives. A missing or
// another owner's connection answers NOT_FOUND.
func (f *Fleet) Connection(ctx context.Context, c Caller, id string) (*tradingv1.ExchangeConnection, error) {
	if id == "" {
		return nil, connNotFound()
	}
	var key types.NamespacedName
	p, err := credentials.NewConnections(f.rdb).OwnedBy(ctx, id, c.Email)
	switch {
	case err == nil:
		key = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	case errors.Is(err, credentials.ErrNotFound):
		ns, err := f.Namespace(ctx, c)
		if err != nil {
			return nil, err
		}
		var list tradingv1.ExchangeConnectionList
		if err := f.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, x := range list.Items {
			if string(x.UID) == id {
				key = types.NamespacedName{Namespace: x.Namespace, Name: x.Name}
			}
		}
		if key.Name == "" {
			return nil, connNotFound()
		}
	default:
		return nil, err
	}
	var conn tradingv1.ExchangeConnection
	err = f.k8s.Get(ctx, key, &conn)
	if apierrors.IsNotFound(err) || (err == nil && (string(conn.UID) != id || !emails.Same(conn.Spec.Owner, c.Email) || conn.DeletionTimestamp != nil)) {
		return nil, connNotFound()
	}
	if err != nil {
		return nil, err
	}
	return &conn, nil
}

// DeleteConnection deletes the caller's exchange connection id and the credentials Secret
// fleet made for it. A connection applied outside sigops is refused (MANAGED_BY_GITOPS), and
// so is one that any of the caller's bots trades on (INVALID_ACTION naming the bots): the
// controller would leave those bots disabled (ExchangeConnectionNotFound) with whatever
// they hold on the exchange unmanaged, so they are moved or deleted first.
func (f *Fleet) DeleteConnection(ctx context.Context, c Caller, id string) error {
	conn, err := f.Connection(ctx, c, id)
	if err != nil {
		return err
	}
	if conn.Labels[LabelManagedBy] != ManagedBySigops {
		return errs.New(errs.ManagedByGitOps,
			"exchange connection %s is managed by GitOps (applied outside sigops): delete it in its repository", conn.Name)
	}
	users, err := f.botsOn(ctx, c, conn)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return errs.New(errs.InvalidAction,
			"exchange connection %s is used by %s: delete those bots or move them to another account first", conn.Name, strings.Join(users, ", "))
	}
	uid := conn.UID
	if err := f.k8s.Delete(ctx, conn, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var secret corev1.Secret
	err = f.k8s.Get(ctx, types.NamespacedName{Namespace: conn.Namespace, Name: conn.Spec.CredentialsSecretRef.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// Only the Secret fleet made for this connection: a Secret the user made and named in a
	// connection is theirs to keep.
	if secret.Labels[LabelManagedBy] != ManagedBySigops || secret.Name != CredentialsSecretName(conn.Name) {
		return nil
	}
	suid := secret.UID
	if err := f.k8s.Delete(ctx, &secret, client.Preconditions{UID: &suid}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// botsOn names the caller's bots that trade on conn: by its UID, or by its namespace and
// name for a bot whose account the controller has not resolved yet.
func (f *Fleet) botsOn(ctx context.Context, c Caller, conn *tradingv1.ExchangeConnection) ([]string, error) {
	bots, err := f.registry.AllOwned(ctx, c.Email)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range bots {
		if b.Account.Kind != registry.AccountExchange {
			continue
		}
		if b.Account.ID == string(conn.UID) || (b.Namespace == conn.Namespace && b.Account.Name == conn.Name) {
			names = append(names, b.Name)
		}
	}
	return names, nil
}
