package fleet

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/errs"
)

// MaxPaperAccounts bounds the paper accounts CreatePaperAccount makes in one user's
// namespace, so that one user cannot fill the API server with objects.
const MaxPaperAccounts = 10

// CreatePaperAccount makes paper account name in the caller's namespace with spec, owned by
// the caller whatever spec.owner says and labelled managed-by sigops, and returns the object
// as the API server stored it (its UID is the account's ID). The CRD's schema judges
// initialBalance, currency and feeRate (INVALID_PARAMETER with the field's message); empty
// fields take the CRD's defaults. The PaperAccount controller opens the balance within
// moments; until then the account is not listed.
func (f *Fleet) CreatePaperAccount(ctx context.Context, c Caller, name string, spec tradingv1.PaperAccountSpec) (*tradingv1.PaperAccount, error) {
	ns, err := f.Namespace(ctx, c)
	if err != nil {
		return nil, err
	}
	var have tradingv1.PaperAccountList
	if err := f.k8s.List(ctx, &have, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if len(have.Items) >= MaxPaperAccounts {
		return nil, errs.New(errs.InvalidParameter, "you have %d paper accounts, the most sigops makes for one user: delete one or refill it instead", len(have.Items))
	}
	spec.Owner = c.Email
	acct := &tradingv1.PaperAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelManagedBy: ManagedBySigops}},
		Spec:       spec,
	}
	if err := f.k8s.Create(ctx, acct); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, errs.New(errs.InvalidParameter, "name: a paper account named %q already exists", name)
		}
		return nil, specError(err, "the paper account's settings are invalid")
	}
	return acct, nil
}
