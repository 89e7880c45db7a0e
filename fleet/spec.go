package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// SetAccount writes into fields, the SignalBot spec JSON of a create or a merge patch, the
// account reference of kind (registry.AccountPaper or AccountExchange) named name: the
// reference of that kind and, as a merge patch needs it, null for the other. A paper
// account's name defaults to DefaultPaperAccount, which Create makes on first use. mcpd's
// account argument and the dashboard's venue field both map through it.
func SetAccount(fields map[string]any, kind, name string) error {
	if kind != registry.AccountPaper && kind != registry.AccountExchange {
		return errs.New(errs.InvalidParameter, "account.kind: paper or exchange")
	}
	if name == "" && kind == registry.AccountPaper {
		name = DefaultPaperAccount
	}
	if name == "" {
		return errs.New(errs.InvalidParameter, "account.name: the name of your exchange connection")
	}
	ref := map[string]any{"name": name}
	if kind == registry.AccountExchange {
		fields["exchangeConnectionRef"], fields["paperAccountRef"] = ref, nil
	} else {
		fields["paperAccountRef"], fields["exchangeConnectionRef"] = ref, nil
	}
	return nil
}

// SpecOf decodes the spec JSON fields of a create (top-level nulls are left out): a field of
// the wrong type, or one the spec does not have, is INVALID_PARAMETER naming it. Bounds and
// CEL rules are the API server's to check (Create answers them).
func SpecOf(fields map[string]any) (tradingv1.SignalBotSpec, error) {
	for k, v := range fields {
		if v == nil {
			delete(fields, k)
		}
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return tradingv1.SignalBotSpec{}, errs.New(errs.InvalidParameter, "the bot's settings are not JSON")
	}
	var spec tradingv1.SignalBotSpec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return tradingv1.SignalBotSpec{}, decodeError(err)
	}
	return spec, nil
}

// decodeError names the field a spec failed to decode on.
func decodeError(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		return errs.New(errs.InvalidParameter, "%s: must be %s", typ.Field, typeName(typ.Type.Kind().String()))
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return errs.New(errs.InvalidParameter, "%s: not a bot setting", strings.Trim(f, `"`))
	}
	// Durations (metav1.Duration) fail with time.ParseDuration's text, which names the value.
	return errs.New(errs.InvalidParameter, "%s", strings.TrimPrefix(msg, "json: "))
}

func typeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"):
		return "a whole number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "struct", kind == "ptr":
		return "an object"
	}
	return fmt.Sprintf("of type %s", kind)
}
