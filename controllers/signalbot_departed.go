package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// A SignalBot's runtime state is guarded by its webhook Secret, not by a finalizer on the
// bot: the Secret is created with the runtime-cleanup finalizer before anything reaches
// Redis, and it names the bot's UID (its controller owner reference) and its webhook ID.
// A new bot so costs two API writes (the Secret create, the status patch) instead of three.
// Whenever a bot of the Secret's owner name is gone, replaced by a bot of another UID, or
// being deleted, the Secret says whose state to remove; its finalizer keeps it (and so that
// record) until the removal is done, whether the manager was running at the deletion or not.
// A bot that carries the finalizer itself (made by an earlier manager, or whose Secret was
// deleted under it) is finalized through the reconcile skeleton as before.

// annotationBotUID on a webhook Secret names the bot whose cleanup it records, beside the
// owner reference: a delete with orphan propagation strips the owner reference before the
// bot goes.
const annotationBotUID = "trading.sigops.dev/signalbot-uid"

// recordedBot is the bot whose cleanup the webhook Secret s records: its controller owner
// when that is a SignalBot; without a controller owner (orphaned), the bot its label and
// annotation name while it still carries the finalizer. ok is false for any other Secret.
func recordedBot(s client.Object) (name string, uid types.UID, ok bool) {
	if owner := metav1.GetControllerOf(s); owner != nil {
		return owner.Name, owner.UID, owner.Kind == "SignalBot"
	}
	name, id := s.GetLabels()[labelBot], s.GetAnnotations()[annotationBotUID]
	ok = name != "" && id != "" && controllerutil.ContainsFinalizer(s, tradingv1.FinalizerRuntimeCleanup)
	return name, types.UID(id), ok
}

// botOfSecret maps a webhook Secret's events to the bot it records.
func botOfSecret(_ context.Context, s client.Object) []reconcile.Request {
	name, _, ok := recordedBot(s)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.GetNamespace(), Name: name}}}
}

// finalizerOnObject: a live bot's cleanup is recorded on its webhook Secret.
func (r *SignalBotReconciler) finalizerOnObject() bool { return false }

// forgetDeparted removes the runtime state of a bot named req that no longer lives, as its
// webhook Secret records it, and then releases that Secret. It leaves alone a live bot, a
// bot that carries the finalizer itself (the skeleton finalizes it) and a Secret it does not
// own.
func (r *SignalBotReconciler) forgetDeparted(ctx context.Context, req client.ObjectKey) error {
	secret := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: webhookSecretName(req.Name)}, secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	name, uid, ok := recordedBot(secret)
	if !ok || name != req.Name {
		return nil
	}
	departed, err := r.departed(ctx, req, uid)
	if err != nil || !departed {
		return err
	}
	return r.forget(ctx, string(uid), secret)
}

// departed says whether the bot of UID uid (named req) is gone or being deleted without a
// finalizer of its own. The cache is trusted when it shows the name held by a bot, which
// only ever happens after that bot was created; a cache that does not know the name may be
// behind the Secret's (another replica's), so the API server has the last word then.
func (r *SignalBotReconciler) departed(ctx context.Context, req client.ObjectKey, uid types.UID) (bool, error) {
	bot := &tradingv1.SignalBot{}
	err := r.Get(ctx, req, bot)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, req, bot)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
	}
	if err != nil {
		return false, err
	}
	if bot.UID != uid {
		return true, nil
	}
	return !bot.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(bot, tradingv1.FinalizerRuntimeCleanup), nil
}

// forget removes the runtime state of the bot of UID uid, leaves a tombstone so its URL
// answers BOT_DELETED and releases its webhook Secret (nil: none). Each step can be
// repeated: a retry after a partial run finds less to do.
func (r *SignalBotReconciler) forget(ctx context.Context, uid string, secret *corev1.Secret) error {
	var hashes []string
	if secret != nil {
		if id := string(secret.Data[WebhookSecretKeyID]); id != "" {
			hashes = append(hashes, registry.HashWebhookID(id))
		}
	}
	if err := r.Registry.Remove(ctx, uid, r.TombstoneTTL, hashes...); err != nil {
		return fmt.Errorf("remove runtime state: %w", err)
	}
	if r.Forget != nil {
		if err := r.Forget(ctx, uid); err != nil {
			return fmt.Errorf("remove trading state: %w", err)
		}
	}
	// After the tombstone, so that the ID is never lost before its route says BOT_DELETED.
	if err := r.deleteWebhookSecret(ctx, secret); err != nil {
		return err
	}
	log.FromContext(ctx).Info("bot runtime state and webhook Secret removed", "botUID", uid)
	return nil
}

// secretCreateWakes passes the creation of a webhook Secret whose owner bot the cache does
// not hold: at start-up that is a bot deleted while no manager ran, whose state only the
// Secret still records. The manager's own Secret creations (the owner is in the cache) need
// no reconcile.
func (r *SignalBotReconciler) secretCreateWakes(cache client.Reader) predicate.Funcs {
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		name, uid, ok := recordedBot(e.Object)
		if !ok {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		bot := &tradingv1.SignalBot{}
		err := cache.Get(ctx, types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: name}, bot)
		return err != nil || bot.UID != uid
	}}
}
