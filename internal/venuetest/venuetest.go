// Package venuetest holds the assertions that the exchange adapters' tests (bybit, okx)
// share: that an error leaks no credential, and that it is the spec's typed error of a
// given code. Both adapters must fail the same way (typed, and never echoing a key, secret
// or passphrase a venue sends back), so their tests check it with one implementation.
//
// It is an internal, non-test package only because Go cannot share _test.go files between
// packages; production code never imports it.
package venuetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/errs"
)

// NoSecret fails t when err contains one of secrets in any form a caller may see: its
// Error, %+v and %#v, and a typed error's message and details. A nil err passes.
func NoSecret(t testing.TB, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	if e, ok := errs.As(err); ok {
		texts = append(texts, e.Message, fmt.Sprint(e.Details))
	}
	for _, s := range secrets {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Errorf("error leaks a credential: %s", txt)
			}
		}
	}
}

// Code is err as the typed error of code want, after NoSecret; t stops when it is not.
func Code(t testing.TB, err error, want errs.Code, secrets ...string) *errs.Error {
	t.Helper()
	NoSecret(t, err, secrets...)
	e, ok := errs.As(err)
	if !ok || e.Code != want {
		t.Fatalf("error %v, want code %s", err, want)
	}
	return e
}
