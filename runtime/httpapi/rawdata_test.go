package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/sigops/sigops/runtime/httpapi"
)

// WriteRawData writes byte for byte what WriteData writes for the same value.
func TestWriteRawDataMatchesWriteData(t *testing.T) {
	v := map[string]any{"symbol": "BTC/USDT", "candles": []any{map[string]any{"open": json.Number("65000.01")}}}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	a, b := httptest.NewRecorder(), httptest.NewRecorder()
	httpapi.WriteData(a, v)
	httpapi.WriteRawData(b, raw)
	if a.Body.String() != b.Body.String() || a.Code != b.Code {
		t.Fatalf("WriteRawData %d %q, WriteData %d %q", b.Code, b.Body, a.Code, a.Body)
	}
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if a.Header().Get(h) != b.Header().Get(h) {
			t.Fatalf("%s: %q vs %q", h, b.Header().Get(h), a.Header().Get(h))
		}
	}
}
