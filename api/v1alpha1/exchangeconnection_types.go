package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exchange names a supported exchange.
// +kubebuilder:validation:Enum=binance;bybit;okx
type Exchange string

const (
	ExchangeBinance Exchange = "binance"
	ExchangeBybit   Exchange = "bybit"
	// ExchangeOKX signs with a passphrase as well: its credentials Secret must hold one.
	ExchangeOKX Exchange = "okx"
)

// PositionMode is how the exchange account holds futures positions.
// +kubebuilder:validation:Enum=oneWay;hedge
type PositionMode string

const (
	PositionModeOneWay PositionMode = "oneWay"
	PositionModeHedge  PositionMode = "hedge"
)

// Keys of the credentials Secret.
const (
	CredentialsKeyAPIKey     = "apiKey"
	CredentialsKeyAPISecret  = "apiSecret"
	CredentialsKeyPassphrase = "passphrase"
)

// ExchangeConnectionSpec connects a user's exchange account.
type ExchangeConnectionSpec struct {
	// owner is the email of the account's owner.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+$`
	// +required
	Owner string `json:"owner"`

	// exchange is binance, bybit or okx.
	// +required
	Exchange Exchange `json:"exchange"`

	// credentialsSecretRef names a Secret with keys apiKey, apiSecret and passphrase (the
	// passphrase only for okx, which requires it).
	// +required
	CredentialsSecretRef LocalObjectReference `json:"credentialsSecretRef"`

	// testnet uses the exchange's test network.
	// +optional
	Testnet bool `json:"testnet,omitempty"`

	// endpoints override the exchange's base URLs (testnets, local fakes).
	// +optional
	Endpoints EndpointsSpec `json:"endpoints,omitempty"`
}

// EndpointsSpec holds optional base-URL overrides.
type EndpointsSpec struct {
	// spot is the base URL for spot trading.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	Spot string `json:"spot,omitempty"`

	// futures is the base URL for futures trading.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	Futures string `json:"futures,omitempty"`
}

// ExchangeConnectionStatus is what the operator observed of the connection.
type ExchangeConnectionStatus struct {
	// permissions are the key's permissions as the exchange reports them.
	// +listType=set
	// +optional
	Permissions []string `json:"permissions,omitempty"`

	// positionMode is the futures account's position mode as the exchange last reported it
	// (oneWay: one net position per symbol; hedge: a long and a short side per symbol).
	// Orders follow the mode the exchange reports; a change while positions are open makes
	// the connection not Ready (PositionModeChanged). Empty when the key cannot trade
	// futures.
	// +optional
	PositionMode PositionMode `json:"positionMode,omitempty"`

	// lastValidatedAt is when the credentials were last checked.
	// +optional
	LastValidatedAt *metav1.Time `json:"lastValidatedAt,omitempty"`

	// encryptionKeyID is the ID of the master key the credentials are sealed with in the
	// runtime store (a short hash, not the key); empty while the connection is not Ready.
	// After a master-key rotation every Ready connection shows the new key's ID.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	EncryptionKeyID string `json:"encryptionKeyID,omitempty"`

	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready always; Reconciling and Stalled only while true.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExchangeConnection is a user's API key on an exchange.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=xconn,categories=sigops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Exchange",type=string,JSONPath=`.spec.exchange`
// +kubebuilder:printcolumn:name="Testnet",type=boolean,JSONPath=`.spec.testnet`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Permissions",type=string,JSONPath=`.status.permissions`,priority=1
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.positionMode`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExchangeConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ExchangeConnectionSpec `json:"spec"`

	// status is what the manager observed. The API server defaults it to observedGeneration
	// 0, so that an object the manager has not reconciled yet reads as in progress to
	// kstatus (generation 1 not observed) rather than as current.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status ExchangeConnectionStatus `json:"status,omitempty"`
}

// ExchangeConnectionList is a list of ExchangeConnections.
//
// +kubebuilder:object:root=true
type ExchangeConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExchangeConnection `json:"items"`
}
