// Package v1alpha1 holds the sigops custom resources: SignalBot, PaperAccount and
// ExchangeConnection in the API group trading.sigops.dev.
//
// +kubebuilder:object:generate=true
// +groupName=trading.sigops.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The registration uses apimachinery's scheme builder rather than controller-runtime's
// (deprecated for API packages): an API package is imported by every client of the types,
// so it depends on apimachinery alone.
var (
	// GroupVersion is the group and version of every sigops resource.
	GroupVersion = schema.GroupVersion{Group: "trading.sigops.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the sigops types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the sigops types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of the group with its list, and the group version's
// meta types (ListOptions and the others a client sends).
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&SignalBot{}, &SignalBotList{},
		&PaperAccount{}, &PaperAccountList{},
		&ExchangeConnection{}, &ExchangeConnectionList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
