package controllers_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
)

// paperOf lists the IDs and names of an owner's paper accounts.
func paperOf(owner string) ([]string, error) {
	accts, err := paper.NewAccounts(rdb).ListByOwner(context.Background(), owner)
	var out []string
	for _, a := range accts {
		out = append(out, a.ID+" "+a.Namespace+"/"+a.Name)
	}
	return out, err
}

func TestPaperAccountOwnerIndex(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	alice, bob := ns+"-alice@x.io", ns+"-bob@x.io"
	create(t, paperAccount(ns, "paper", ns+"-Alice@X.io")) // listed by the canonical e-mail
	a := waitAccount(t, ns, "paper", "ready", func(*tradingv1.PaperAccount) error { return nil })
	want := string(a.UID) + " " + ns + "/paper"
	eventually(t, "listed for its owner", func() error {
		got, err := paperOf(alice)
		if err != nil || len(got) != 1 || got[0] != want {
			return fmt.Errorf("alice's accounts = %v, %v", got, err)
		}
		return nil
	})

	// A new owner: the account moves from one index to the other.
	eventually(t, "change owner", func() error {
		cur := &tradingv1.PaperAccount{}
		if err := k8s.Get(ctx, keyOf(ns, "paper"), cur); err != nil {
			return err
		}
		cur.Spec.Owner = bob
		return k8s.Update(ctx, cur)
	})
	eventually(t, "moved to bob", func() error {
		got, err := paperOf(bob)
		if err != nil || len(got) != 1 || got[0] != want {
			return fmt.Errorf("bob's accounts = %v, %v", got, err)
		}
		if in := rdb.SIsMember(ctx, store.OwnerPaperAccounts(alice), string(a.UID)).Val(); in {
			return fmt.Errorf("still in alice's index")
		}
		return nil
	})

	if err := k8s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "out of the index", func() error {
		if n := rdb.SCard(ctx, store.OwnerPaperAccounts(bob)).Val(); n != 0 {
			return fmt.Errorf("bob's index holds %d", n)
		}
		return nil
	})
}

func TestExchangeConnectionOwnerIndex(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	owner := ns + "@x.io"
	cr := newCreds(ns, "idx")
	exchanges.answer(cr.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", cr, false))
	create(t, connection(ns, "bn", owner, "creds"))
	c := waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	eventually(t, "listed for its owner", func() error {
		got, err := credentials.NewConnections(rdb).ListByOwner(ctx, owner)
		if err != nil || len(got) != 1 || got[0].UID != string(c.UID) || got[0].Name != "bn" || !got[0].Ready {
			return fmt.Errorf("connections = %+v, %v", got, err)
		}
		return nil
	})
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "out of the index", func() error {
		if n := rdb.SCard(ctx, store.OwnerConnections(owner)).Val(); n != 0 {
			return fmt.Errorf("the index holds %d", n)
		}
		got, err := credentials.NewConnections(rdb).ListByOwner(ctx, owner)
		if err != nil || len(got) != 0 {
			return fmt.Errorf("connections = %+v, %v", got, err)
		}
		return nil
	})
}
