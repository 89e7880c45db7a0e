package v1alpha1

// Annotations and finalizers are domain-qualified so they never clash with other tools.
const (
	// AnnotationRegenerateWebhook on a SignalBot: a new value makes a new webhook ID; the old
	// URL stops working at once. The handled value is echoed in status.lastHandledRegenerate.
	AnnotationRegenerateWebhook = "trading.sigops.dev/regenerate-webhook"

	// AnnotationRefill on a PaperAccount: a new value resets the balance to initialBalance,
	// at most once per 24 hours. The handled value is echoed in status.lastHandledRefill.
	AnnotationRefill = "trading.sigops.dev/refill"

	// AnnotationResume on a SignalBot: a new value clears a pause the executor set (Errors,
	// or Risk before the next UTC day). The handled value is echoed in status.lastHandledResume.
	AnnotationResume = "trading.sigops.dev/resume"

	// FinalizerRuntimeCleanup keeps an object until the runtime state it records has left
	// Redis: a SignalBot's webhook Secret (or a SignalBot that carries it itself) until the
	// bot's state is gone and its webhook answers BOT_DELETED; a PaperAccount or an
	// ExchangeConnection until its projection is gone.
	FinalizerRuntimeCleanup = "trading.sigops.dev/runtime-cleanup"
)

// Condition types shared by all kinds. Ready is always present; Reconciling and Stalled
// only while true (the kstatus convention, so Flux and Argo CD report health).
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}
