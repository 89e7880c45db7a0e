package controllers

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/exchange"
)

// credentialsSecret reads the connection's Secret from the API server (nil when it does not
// exist) and labels it, so that the cache, and so this controller, sees its later changes.
func (r *ExchangeConnectionReconciler) credentialsSecret(ctx context.Context, conn *tradingv1.ExchangeConnection) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: conn.Namespace, Name: conn.Spec.CredentialsSecretRef.Name}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if secret.Labels[LabelSecretKind] == "" {
		orig := secret.DeepCopy()
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[LabelSecretKind] = secretKindCredentials
		if err := r.Patch(ctx, secret, client.MergeFrom(orig)); err != nil {
			return nil, err
		}
	}
	return secret, nil
}

// missingCredentialKeys names the required keys that are absent or empty (names only): the
// key and the secret always, and the passphrase for the exchanges that sign with one (OKX).
func missingCredentialKeys(s *corev1.Secret, ex tradingv1.Exchange) []string {
	var missing []string
	required := []string{tradingv1.CredentialsKeyAPIKey, tradingv1.CredentialsKeyAPISecret}
	if ex == tradingv1.ExchangeOKX {
		required = append(required, tradingv1.CredentialsKeyPassphrase)
	}
	for _, k := range required {
		if len(strings.TrimSpace(string(s.Data[k]))) == 0 {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	return missing
}

// credentialsOf takes the key, secret and passphrase from the Secret. Surrounding
// whitespace is dropped: a Secret made with --from-file usually ends in a newline, which no
// exchange key contains.
func credentialsOf(s *corev1.Secret) exchange.Credentials {
	return exchange.Credentials{
		APIKey:     strings.TrimSpace(string(s.Data[tradingv1.CredentialsKeyAPIKey])),
		APISecret:  strings.TrimSpace(string(s.Data[tradingv1.CredentialsKeyAPISecret])),
		Passphrase: strings.TrimSpace(string(s.Data[tradingv1.CredentialsKeyPassphrase])),
	}
}

func endpointsOf(conn *tradingv1.ExchangeConnection) exchange.Endpoints {
	return exchange.Endpoints{Spot: conn.Spec.Endpoints.Spot, Futures: conn.Spec.Endpoints.Futures, Testnet: conn.Spec.Testnet}
}

// redact removes every credential value from a message that came from outside (a
// connector's error), so that it can go into a condition or a log.
func redact(msg string, c exchange.Credentials) string {
	for _, s := range []string{c.APISecret, c.APIKey, c.Passphrase} {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	const maxLen = 256
	if len(msg) > maxLen {
		msg = msg[:maxLen] + "…"
	}
	return msg
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
