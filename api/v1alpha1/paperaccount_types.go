package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PaperAccountSpec is a simulated trading account.
type PaperAccountSpec struct {
	// owner is the email of the account's owner.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+$`
	// +required
	Owner string `json:"owner"`

	// initialBalance is the starting (and refill) balance in currency.
	// +kubebuilder:default="10000"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="double(self) > 0.0",message="initialBalance must be above 0"
	// +optional
	InitialBalance string `json:"initialBalance,omitempty"`

	// currency is the quote currency of the balance.
	// +kubebuilder:default=USDT
	// +kubebuilder:validation:Pattern=`^[A-Z0-9]{2,10}$`
	// +optional
	Currency string `json:"currency,omitempty"`

	// feeRate is the simulated maker and taker fee (0.001 = 0.1 %).
	// +kubebuilder:default="0.001"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^0(\.[0-9]+)?$`
	// +optional
	FeeRate string `json:"feeRate,omitempty"`
}

// PaperAccountStatus mirrors the simulated balance held in Redis.
type PaperAccountStatus struct {
	// balance is the free cash balance.
	// +optional
	Balance string `json:"balance,omitempty"`

	// equity is the balance plus the value of open positions.
	// +optional
	Equity string `json:"equity,omitempty"`

	// lastRefillAt is when the balance was last reset to initialBalance.
	// +optional
	LastRefillAt *metav1.Time `json:"lastRefillAt,omitempty"`

	// lastHandledRefill echoes the last refill annotation value acted on (applied or refused).
	// +optional
	LastHandledRefill string `json:"lastHandledRefill,omitempty"`

	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready always; RefillAllowed says when the next refill may happen.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionRefillAllowed is False while the 24-hour refill cooldown runs.
const ConditionRefillAllowed = "RefillAllowed"

// PaperAccount is a simulated balance that bots can trade on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=paper,categories=sigops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Balance",type=string,JSONPath=`.status.balance`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PaperAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PaperAccountSpec `json:"spec"`

	// status is what the manager observed. The API server defaults it to observedGeneration
	// 0, so that an object the manager has not reconciled yet reads as in progress to
	// kstatus (generation 1 not observed) rather than as current.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status PaperAccountStatus `json:"status,omitempty"`
}

// PaperAccountList is a list of PaperAccounts.
//
// +kubebuilder:object:root=true
type PaperAccountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaperAccount `json:"items"`
}
