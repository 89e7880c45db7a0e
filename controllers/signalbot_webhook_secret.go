package controllers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// Keys and labels of the webhook Secret.
const (
	WebhookSecretKeyID  = "webhookId"
	WebhookSecretKeyURL = "url"

	// LabelSecretKind marks the Secrets the manager caches; it watches no other Secret, so
	// its memory does not grow with the cluster's Secrets.
	LabelSecretKind         = "trading.sigops.dev/secret-kind"
	secretKindWebhook       = "webhook"
	secretKindCredentials   = "credentials"
	labelManagedBy          = "app.kubernetes.io/managed-by"
	labelBot                = "trading.sigops.dev/signalbot"
	annotationRegeneratedAs = "trading.sigops.dev/regenerated-for"
)

// WebhookPath is the webhook route; the Secret's url is BaseURL + WebhookPath + ID.
const WebhookPath = "/api/webhooks/trade/"

// webhookSecretName is the Secret of a bot's webhook ID.
func webhookSecretName(bot string) string { return bot + "-webhook" }

type webhookState struct {
	secretName  string
	hash        string // SHA-256 of the webhook ID, the only form Redis sees
	regenerated string // the regenerate annotation value acted on in this reconcile
}

// invalidSecretError: the Secret exists but cannot be used, and the controller will not
// overwrite it (it may be the only copy of a URL someone configured).
type invalidSecretError struct{ msg string }

func (e *invalidSecretError) Error() string { return e.msg }

// ensureWebhookSecret makes the bot's webhook Secret if it is missing, never overwrites an
// existing one, and issues a new ID when the regenerate annotation carries a new value.
func (r *SignalBotReconciler) ensureWebhookSecret(ctx context.Context, bot *tradingv1.SignalBot) (webhookState, error) {
	st := webhookState{secretName: webhookSecretName(bot.Name)}
	secret := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: bot.Namespace, Name: st.secretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		id, err := r.createWebhookSecret(ctx, bot, st.secretName)
		if err != nil {
			return st, err
		}
		st.hash = registry.HashWebhookID(id)
		// A fresh ID also satisfies a pending regenerate request.
		st.regenerated = pendingRegenerate(bot)
		return st, nil
	case err != nil:
		return st, err
	}
	if !secret.DeletionTimestamp.IsZero() {
		return st, r.replaceDeletedSecret(ctx, bot, secret)
	}

	if owner := metav1.GetControllerOf(secret); owner != nil && owner.UID != bot.UID {
		if owner.Kind == "SignalBot" && owner.Name == bot.Name {
			// The Secret of an earlier bot of the same name, still being garbage-collected.
			return st, fmt.Errorf("secret %s belongs to a previous bot %s; waiting for its removal", st.secretName, owner.UID)
		}
		return st, &invalidSecretError{fmt.Sprintf("Secret %s is controlled by %s %s; rename the bot or remove the Secret", st.secretName, owner.Kind, owner.Name)}
	}
	id := string(secret.Data[WebhookSecretKeyID])
	if !validWebhookID(id) {
		return st, &invalidSecretError{fmt.Sprintf("Secret %s has no valid %s (a UUID v4); delete the Secret to get a new one", st.secretName, WebhookSecretKeyID)}
	}

	if want := pendingRegenerate(bot); want != "" {
		if secret.Annotations[annotationRegeneratedAs] != want {
			// The one deliberate overwrite: the user asked for a new ID.
			id = newWebhookID()
			secret.Data = map[string][]byte{WebhookSecretKeyID: []byte(id), WebhookSecretKeyURL: []byte(r.webhookURL(id))}
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, annotationRegeneratedAs, want)
		}
		st.regenerated = want
	}
	// The Secret records the bot's cleanup unless the bot carries the finalizer itself.
	guard := !controllerutil.ContainsFinalizer(bot, tradingv1.FinalizerRuntimeCleanup) &&
		!controllerutil.ContainsFinalizer(secret, tradingv1.FinalizerRuntimeCleanup)
	stale := (guard || controllerutil.ContainsFinalizer(secret, tradingv1.FinalizerRuntimeCleanup)) &&
		secret.Annotations[annotationBotUID] != string(bot.UID)
	changed := secret.Labels[LabelSecretKind] != secretKindWebhook || metav1.GetControllerOf(secret) == nil ||
		st.regenerated != "" || guard || stale
	if changed {
		// Adopt a restored Secret (same URL after a backup restore) and keep the cache label.
		setWebhookSecretLabels(secret, bot.Name)
		if guard {
			controllerutil.AddFinalizer(secret, tradingv1.FinalizerRuntimeCleanup)
		}
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, annotationBotUID, string(bot.UID))
		if err := controllerutil.SetControllerReference(bot, secret, r.Scheme()); err != nil {
			return st, err
		}
		if err := r.Update(ctx, secret); err != nil { // resourceVersion guards against lost updates
			return st, err
		}
	}
	st.hash = registry.HashWebhookID(id)
	return st, nil
}

func (r *SignalBotReconciler) createWebhookSecret(ctx context.Context, bot *tradingv1.SignalBot, name string) (string, error) {
	id := newWebhookID()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: bot.Namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{WebhookSecretKeyID: []byte(id), WebhookSecretKeyURL: []byte(r.webhookURL(id))},
	}
	setWebhookSecretLabels(secret, bot.Name)
	// Before the bot reaches Redis: the Secret is the record of what to remove when the bot
	// goes (signalbot_departed.go).
	controllerutil.AddFinalizer(secret, tradingv1.FinalizerRuntimeCleanup)
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, annotationBotUID, string(bot.UID))
	if want := pendingRegenerate(bot); want != "" {
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, annotationRegeneratedAs, want)
	}
	if err := controllerutil.SetControllerReference(bot, secret, r.Scheme()); err != nil {
		return "", err
	}
	if err := r.Create(ctx, secret); err != nil {
		// AlreadyExists means the cache was behind; the next reconcile reads the real one.
		return "", err
	}
	return id, nil
}

// replaceDeletedSecret handles a live bot's webhook Secret that someone deleted: the bot
// takes the finalizer itself first, since for a moment no Secret records its cleanup, then
// the Secret is let go; the next reconcile (woken by its deletion) makes a new one with a
// new ID, as for a missing Secret. A Secret of another owner is left alone.
func (r *SignalBotReconciler) replaceDeletedSecret(ctx context.Context, bot *tradingv1.SignalBot, secret *corev1.Secret) error {
	if owner := metav1.GetControllerOf(secret); owner == nil || owner.UID != bot.UID {
		return fmt.Errorf("secret %s is being deleted; waiting for its removal", secret.Name)
	}
	if err := setFinalizer(ctx, r.Client, bot, true); err != nil {
		return err
	}
	if err := setFinalizer(ctx, r.Client, secret, false); err != nil {
		return err
	}
	return fmt.Errorf("secret %s was deleted; a new one follows", secret.Name)
}

// ownWebhookSecret is the bot's webhook Secret if this very bot controls it (owner UID, not
// just name: a Secret left by an earlier bot of the same name is not this bot's); nil when
// there is none.
func (r *SignalBotReconciler) ownWebhookSecret(ctx context.Context, bot *tradingv1.SignalBot) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: bot.Namespace, Name: webhookSecretName(bot.Name)}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOf(secret); owner == nil || owner.UID != bot.UID {
		return nil, nil
	}
	return secret, nil
}

// deleteWebhookSecret releases the departed bot's own Secret (its finalizer off, with the
// resourceVersion checked) and deletes it instead of leaving it to the garbage collector:
// until it is gone a bot applied again under the same name cannot get its own, and a
// cluster without a garbage collector would never remove it. The preconditions make the
// delete hit exactly the object whose owner was checked, not one that replaced or changed
// it since.
func (r *SignalBotReconciler) deleteWebhookSecret(ctx context.Context, secret *corev1.Secret) error {
	if secret == nil {
		return nil
	}
	if err := setFinalizer(ctx, r.Client, secret, false); err != nil {
		return fmt.Errorf("release webhook Secret %s: %w", secret.Name, err)
	}
	uid, rv := secret.UID, secret.ResourceVersion
	err := r.Delete(ctx, secret, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete webhook Secret %s: %w", secret.Name, err)
	}
	return nil
}

func (r *SignalBotReconciler) webhookURL(id string) string { return r.BaseURL + WebhookPath + id }

// pendingRegenerate is the regenerate annotation value not yet handled, or "".
func pendingRegenerate(bot *tradingv1.SignalBot) string {
	v := bot.Annotations[tradingv1.AnnotationRegenerateWebhook]
	if v == "" || v == bot.Status.LastHandledRegenerate {
		return ""
	}
	return v
}

func setWebhookSecretLabels(s *corev1.Secret, bot string) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[LabelSecretKind] = secretKindWebhook
	s.Labels[labelManagedBy] = "sigops"
	s.Labels[labelBot] = bot
}

// newWebhookID is a UUID v4: 122 bits from crypto/rand.
func newWebhookID() string { return uuid.New().String() }

func validWebhookID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.Version() == 4 && len(id) == 36
}
