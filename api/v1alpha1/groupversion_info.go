// Package v1alpha1 holds the sigops custom resources: SignalBot, PaperAccount and
// ExchangeConnection in the API group trading.sigops.dev.
//
// +kubebuilder:object:generate=true
// +groupName=trading.sigops.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every sigops resource.
	GroupVersion = schema.GroupVersion{Group: "trading.sigops.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the sigops types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the sigops types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
