package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// notFound is the one answer for a bot that is missing or another owner's.
func notFound(id string) *errs.Error { return errs.New(errs.NotFound, "bot %s not found", id) }

// Get is the caller's bot id as projected in Redis.
func (f *Fleet) Get(ctx context.Context, c Caller, id string) (registry.Bot, error) {
	bot, err := f.registry.Get(ctx, id)
	if errors.Is(err, registry.ErrNotFound) || (err == nil && !emails.Same(bot.Owner, c.Email)) {
		return registry.Bot{}, notFound(id)
	}
	return bot, err
}

// List is the caller's projected bots, in no particular order.
func (f *Fleet) List(ctx context.Context, c Caller) ([]registry.Bot, error) {
	return f.registry.AllOwned(ctx, c.Email)
}

// object is the caller's SignalBot id, found by its projection (objectOf).
func (f *Fleet) object(ctx context.Context, c Caller, id string) (*tradingv1.SignalBot, error) {
	p, err := f.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return f.objectOf(ctx, c, p)
}

// objectOf is the SignalBot behind the caller's projected bot p: the object must still
// carry its UID and the caller as owner.
func (f *Fleet) objectOf(ctx context.Context, c Caller, p registry.Bot) (*tradingv1.SignalBot, error) {
	id := p.ID
	var bot tradingv1.SignalBot
	err := f.k8s.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &bot)
	if apierrors.IsNotFound(err) || (err == nil && (string(bot.UID) != id || !emails.Same(bot.Spec.Owner, c.Email) || bot.DeletionTimestamp != nil)) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &bot, nil
}

// Object is the caller's SignalBot id as the API server stores it (its spec as written, its
// labels): what an edit form starts from. Reads of a bot's state use Get (the projection).
func (f *Fleet) Object(ctx context.Context, c Caller, id string) (*tradingv1.SignalBot, error) {
	return f.object(ctx, c, id)
}

// ReachesExchange reports whether an action on the caller's projected bot p can move real
// money: p or one of the caller's bots copying it (registry.Reach) trades on an exchange
// account, as its projection says or as its SignalBot says now. The projection follows
// the object a moment later: a bot just moved to an exchange connection (dashboard or
// YAML) is still paper in Redis until the controller projects it again, and a scope or a
// confirmation must not be decided by the older venue. The objects are read only while
// every projection says paper.
//
// f may be nil (a daemon without the API server): the projections alone then decide, read
// through reg.
func ReachesExchange(ctx context.Context, f *Fleet, reg *registry.Registry, c Caller, p registry.Bot) (bool, error) {
	reach, err := reg.Reach(ctx, p)
	if err != nil || registry.OnExchange(reach) || f == nil {
		return err == nil && registry.OnExchange(reach), err
	}
	for _, b := range reach {
		bot, err := f.objectOf(ctx, c, b)
		if e, ok := errs.As(err); ok && e.Code == errs.NotFound {
			continue // gone: its projection decides
		}
		if err != nil {
			return false, err
		}
		if bot.Spec.ExchangeConnectionRef != nil {
			return true, nil
		}
	}
	return false, nil
}

// ManagedIDs is the IDs of the caller's bots that fleet created (LabelManagedBy), read with one
// list of the caller's namespace: the projection does not carry the label, and a bot fleet
// made lives only there. A bot of the caller's missing from it is GitOps-managed. A caller
// whose namespace does not exist yet has none.
func (f *Fleet) ManagedIDs(ctx context.Context, c Caller) (map[string]bool, error) {
	var list tradingv1.SignalBotList
	if err := f.k8s.List(ctx, &list, client.InNamespace(NamespaceFor(c.UserID)),
		client.MatchingLabels{LabelManagedBy: ManagedBySigops}); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(list.Items))
	for _, b := range list.Items {
		if emails.Same(b.Spec.Owner, c.Email) {
			out[string(b.UID)] = true
		}
	}
	return out, nil
}

// managed is the caller's bot id, refused with errs.ManagedByGitOps unless fleet created it.
func (f *Fleet) managed(ctx context.Context, c Caller, id string) (*tradingv1.SignalBot, error) {
	bot, err := f.object(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if !IsManaged(bot) {
		return nil, GitOpsRefusal(id)
	}
	return bot, nil
}

// IsManaged reports whether fleet created bot (LabelManagedBy), so that it may change it.
func IsManaged(bot *tradingv1.SignalBot) bool { return bot.Labels[LabelManagedBy] == ManagedBySigops }

// GitOpsRefusal is the answer to a change of bot id, which its GitOps repository manages.
func GitOpsRefusal(id string) *errs.Error {
	return errs.New(errs.ManagedByGitOps,
		"bot %s is managed by GitOps (applied outside sigops): change or delete it in its repository; it can still be paused and resumed here", id)
}

// WaitProjected polls for the projection of the caller's bot id for up to within: a bot
// just created is projected by the controller moments later. ok is false when it is not
// there by then.
func (f *Fleet) WaitProjected(ctx context.Context, c Caller, id string, within time.Duration) (bot registry.Bot, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if bot, err := f.Get(ctx, c, id); err == nil {
			return bot, true
		}
		select {
		case <-ctx.Done():
			return registry.Bot{}, false
		case <-tick.C:
		}
	}
}

// Create makes bot name in the caller's namespace with spec, owned by the caller whatever
// spec.owner says, on an account of that namespace (a paper account is made on first use:
// accounts.go), and returns the object as the API server stored it (its UID is the bot
// ID). The controller projects it within moments; until then Get answers NOT_FOUND.
func (f *Fleet) Create(ctx context.Context, c Caller, name string, spec tradingv1.SignalBotSpec) (*tradingv1.SignalBot, error) {
	ns, err := f.Namespace(ctx, c)
	if err != nil {
		return nil, err
	}
	spec.Owner = c.Email
	if err := f.account(ctx, c, ns, &spec); err != nil {
		return nil, err
	}
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelManagedBy: ManagedBySigops}},
		Spec:       spec,
	}
	if err := f.k8s.Create(ctx, bot); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, errs.New(errs.InvalidParameter, "name: a bot named %q already exists", name)
		}
		return nil, apiError(err)
	}
	return bot, nil
}

// Update applies patch, a JSON merge patch (RFC 7386) of the spec, to the caller's bot id
// and returns the stored object. The owner cannot change: a bot stays its creator's. The
// patch carries the resourceVersion read, so a change made meanwhile fails (INTERNAL_ERROR
// with a message to retry) rather than being overwritten.
func (f *Fleet) Update(ctx context.Context, c Caller, id string, patch json.RawMessage) (*tradingv1.SignalBot, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return nil, errs.New(errs.InvalidParameter, "spec: a JSON object of the fields to change")
	}
	if _, ok := fields["owner"]; ok {
		return nil, errs.New(errs.InvalidParameter, "spec.owner: a bot's owner cannot change")
	}
	// The patch carries the resourceVersion the ownership check read, so it never lands on
	// another object of the same name. The controller writes the bot's status often, which
	// moves the resourceVersion too: a conflict therefore re-reads, re-checks and applies
	// the same patch again (a merge patch of the user's fields is the same intent on the
	// newer object).
	var bot *tradingv1.SignalBot
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if bot, err = f.managed(ctx, c, id); err != nil {
			return err
		}
		body, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": bot.ResourceVersion},
			"spec":     json.RawMessage(patch),
		})
		if err != nil {
			return err
		}
		return f.k8s.Patch(ctx, bot, client.RawPatch(types.MergePatchType, body))
	})
	if err != nil {
		return nil, apiError(err)
	}
	return bot, nil
}

// Delete deletes the caller's bot id; the manager then removes its runtime state (the
// cleanup finalizer on the bot's webhook Secret, or on an older bot itself) and its webhook
// answers BOT_DELETED.
func (f *Fleet) Delete(ctx context.Context, c Caller, id string) error {
	bot, err := f.managed(ctx, c, id)
	if err != nil {
		return err
	}
	uid := bot.UID
	err = f.k8s.Delete(ctx, bot, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return notFound(id)
	}
	return err
}

// Pause pauses the caller's bot id (sigops-managed or GitOps) with a runtime pause of reason
// Manual until resumed. A bot already under an open-ended runtime pause keeps that one
// (registry.Pause's rule): it is paused either way.
func (f *Fleet) Pause(ctx context.Context, c Caller, id string) error {
	if _, err := f.Get(ctx, c, id); err != nil {
		return err
	}
	_, err := f.registry.Pause(ctx, id, registry.Pause{Reason: registry.PauseManual}, f.now())
	return err
}

// Resume lifts the caller's bot id's runtime pause. Its own Manual pause is lifted here at
// once; any other (Errors, Risk, Downgrade) goes through the resume annotation, so that the
// controller's rule applies (a Downgrade pause ends only with the tier). spec.suspend is
// the spec's and is not touched.
func (f *Fleet) Resume(ctx context.Context, c Caller, id string) error {
	if _, err := f.Get(ctx, c, id); err != nil {
		return err
	}
	pause, err := f.registry.ReadPause(ctx, id, f.now())
	if err != nil || pause == nil {
		return err
	}
	if pause.Reason == registry.PauseManual {
		_, err := f.registry.Resume(ctx, id, *pause)
		return err
	}
	bot, err := f.object(ctx, c, id)
	if err != nil {
		return err
	}
	return f.annotate(ctx, bot, tradingv1.AnnotationResume)
}

// RegenerateWebhook asks the controller for a new webhook ID for the caller's bot id (the
// regenerate annotation with a new value); the old URL stops once the controller has acted,
// and WebhookURL answers the new one from then. A GitOps bot is refused: its repository
// would set the annotation back, and the controller would regenerate again on every sync.
func (f *Fleet) RegenerateWebhook(ctx context.Context, c Caller, id string) error {
	bot, err := f.managed(ctx, c, id)
	if err != nil {
		return err
	}
	return f.annotate(ctx, bot, tradingv1.AnnotationRegenerateWebhook)
}

// annotate sets annotation key of bot to a value it has never had: the clock in
// nanoseconds, above the current value when the clock has not moved past it.
func (f *Fleet) annotate(ctx context.Context, bot *tradingv1.SignalBot, key string) error {
	v := f.now().UnixNano()
	if cur, err := strconv.ParseInt(bot.Annotations[key], 10, 64); err == nil && cur >= v {
		v = cur + 1
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{key: strconv.FormatInt(v, 10)},
	}})
	if err != nil {
		return err
	}
	return apiError(f.k8s.Patch(ctx, bot, client.RawPatch(types.MergePatchType, body)))
}

// WebhookURL is the webhook URL of the caller's bot id, from its Secret. NOT_FOUND until the
// controller has made the Secret.
func (f *Fleet) WebhookURL(ctx context.Context, c Caller, id string) (string, error) {
	bot, err := f.object(ctx, c, id)
	if err != nil {
		return "", err
	}
	name := bot.Status.WebhookSecretName
	if name == "" {
		name = bot.Name + "-webhook"
	}
	var s corev1.Secret
	err = f.k8s.Get(ctx, client.ObjectKey{Namespace: bot.Namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) || (err == nil && len(s.Data["url"]) == 0) {
		return "", errs.New(errs.NotFound, "bot %s has no webhook URL yet", id)
	}
	if err != nil {
		return "", err
	}
	return string(s.Data["url"]), nil
}

// apiError maps the API server's refusal of a spec to INVALID_PARAMETER with each field's
// path and message (the CRD schema's and CEL rules' own text) and nothing else of
// Kubernetes; other failures pass through as they are.
func apiError(err error) error { return specError(err, "the bot's spec is invalid") }

// specError is apiError for any kind: fallback is the message of a refusal that names no
// cause.
func specError(err error, fallback string) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		if apierrors.IsConflict(err) {
			return errs.New(errs.InternalError, "the bot changed meanwhile: retry")
		}
		return err
	}
	var parts []string
	if d := status.Status().Details; d != nil {
		for _, cause := range d.Causes {
			msg := cause.Message
			if cause.Field != "" && !strings.HasPrefix(msg, cause.Field) {
				msg = cause.Field + ": " + msg
			}
			parts = append(parts, msg)
		}
	}
	if len(parts) == 0 {
		return errs.New(errs.InvalidParameter, "%s", fallback)
	}
	return errs.New(errs.InvalidParameter, "%s", strings.Join(parts, "; "))
}
