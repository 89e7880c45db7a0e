package emails_test

import (
	"testing"

	"github.com/sigops/sigops/runtime/emails"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"a@x.io":                "a@x.io",
		"  Alice@Example.COM\n": "alice@example.com",
		"\tBOB@x.io ":           "bob@x.io",
		"":                      "",
	} {
		if got := emails.Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q; want %q", in, got, want)
		}
	}
	if !emails.Same(" Alice@Example.com", "alice@example.com") || emails.Same("alice@example.com", "alice@example.org") {
		t.Fatal("Same disagrees with Canonical")
	}
}
