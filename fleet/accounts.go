package fleet

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
)

// DefaultPaperAccount is the paper account a bot created here trades on when its spec names
// none.
const DefaultPaperAccount = "paper"

// account makes sure the account spec names exists in the caller's namespace ns and is the
// caller's, so that a bot created here can trade at once instead of being made disabled
// (AccountMissing). A bot's account reference is namespace-local, so only an account in ns
// can serve it:
//   - a paper account missing from ns is created there, owned by the caller, with the CRD's
//     defaults (10,000 USDT), unless the caller owns one of that name in another namespace:
//     then the answer says where it is and how to get one here, rather than making a second
//     account of the same name;
//   - an exchange connection cannot be made without its API key, so a missing one is
//     refused with the reason.
func (f *Fleet) account(ctx context.Context, c Caller, ns string, spec *tradingv1.SignalBotSpec) error {
	if spec.ExchangeConnectionRef != nil && spec.PaperAccountRef != nil {
		return nil // the API server's rule refuses both at once, in its words
	}
	if spec.ExchangeConnectionRef != nil {
		var conn tradingv1.ExchangeConnection
		err := f.k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: spec.ExchangeConnectionRef.Name}, &conn)
		if apierrors.IsNotFound(err) {
			return errs.New(errs.InvalidParameter,
				"account.name: there is no exchange connection %q in your namespace %s; bots created here trade on exchange connections of that namespace", spec.ExchangeConnectionRef.Name, ns)
		}
		if err != nil {
			return apiError(err)
		}
		if !emails.Same(conn.Spec.Owner, c.Email) {
			return errs.New(errs.InvalidParameter, "account.name: exchange connection %q is not yours", conn.Name)
		}
		return nil
	}
	if spec.PaperAccountRef == nil {
		spec.PaperAccountRef = &tradingv1.LocalObjectReference{Name: DefaultPaperAccount}
	}
	name := spec.PaperAccountRef.Name
	var acct tradingv1.PaperAccount
	err := f.k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &acct)
	if err == nil {
		if !emails.Same(acct.Spec.Owner, c.Email) {
			return errs.New(errs.InvalidParameter, "account.name: paper account %q is not yours", name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return apiError(err)
	}
	mine, err := paper.NewAccounts(f.rdb).ListByOwner(ctx, c.Email)
	if err != nil {
		return err
	}
	var elsewhere []string
	for _, a := range mine {
		if a.Name == name && a.Namespace != ns {
			elsewhere = append(elsewhere, a.Namespace)
		}
	}
	if len(elsewhere) > 0 {
		return errs.New(errs.InvalidParameter,
			"account.name: your paper account %q is in namespace %s, applied outside sigops; bots created here live in %s and trade on paper accounts there: omit account.name to use (and make, on first use) your paper account %q, or name one of %s",
			name, strings.Join(elsewhere, ", "), ns, DefaultPaperAccount, ns)
	}
	acct = tradingv1.PaperAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelManagedBy: ManagedBySigops}},
		Spec:       tradingv1.PaperAccountSpec{Owner: c.Email},
	}
	if err := f.k8s.Create(ctx, &acct); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsInvalid(err) {
			return apiError(fmt.Errorf("paper account %q: %w", name, err))
		}
		return apiError(err)
	}
	return nil
}
