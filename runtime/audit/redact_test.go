package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestRedactArguments(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"flat", `{"password":"hunter2","symbol":"BTC/USDT"}`, `{"password":"[redacted]","symbol":"BTC/USDT"}`},
		{"case and separators", `{"API_KEY":"k1","apiSecret":"s1","X-Api-Key":"k2","Private.Key":"p"}`,
			`{"API_KEY":"[redacted]","Private.Key":"[redacted]","X-Api-Key":"[redacted]","apiSecret":"[redacted]"}`},
		{"oauth", `{"refresh_token":"r","access_token":"a","code_verifier":"v","Authorization":"Bearer x"}`,
			`{"Authorization":"[redacted]","access_token":"[redacted]","code_verifier":"[redacted]","refresh_token":"[redacted]"}`},
		{"nested object and array", `{"bot":{"exchange":{"apiKey":"k","secret":{"a":1}},"legs":[{"token":"t","size":"0.5"},{"webhookId":"w"}]}}`,
			`{"bot":{"exchange":{"apiKey":"[redacted]","secret":"[redacted]"},"legs":[{"size":"0.5","token":"[redacted]"},{"webhookId":"[redacted]"}]}}`},
		{"array of arrays", `[[{"passphrase":"p"}],"ok"]`, `[[{"passphrase":"[redacted]"}],"ok"]`},
		{"webhook URL under an innocent key", `{"url":"https://sigops.example/api/webhooks/trade/0b6f-uuid","note":"bearer abc"}`,
			`{"note":"[redacted]","url":"[redacted]"}`},
		{"numbers keep their text", `{"amount":0.10000000000000000001,"price":1e3}`, `{"amount":0.10000000000000000001,"price":1e3}`},
		{"not JSON", `{"password":"hunter2"`, Unparseable},
		{"trailing data", `{"a":1} {"password":"x"}`, Unparseable},
		{"empty", ``, `{}`},
		{"html kept", `{"note":"<b>&</b>"}`, `{"note":"<b>&</b>"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RedactArguments([]byte(c.in), DefaultMaxArguments); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestRedactCapsTheSize(t *testing.T) {
	big := `{"secret":"` + strings.Repeat("s", 10_000) + `","note":"` + strings.Repeat("é", 5_000) + `"}`
	got := RedactArguments([]byte(big), DefaultMaxArguments)
	if len(got) > DefaultMaxArguments || !Truncated(json.RawMessage(got)) {
		t.Fatalf("len %d, truncated %v", len(got), Truncated(json.RawMessage(got)))
	}
	if strings.Contains(got, "sss") { // redaction happens before the cut
		t.Fatal("the secret survived truncation")
	}
	if !json.Valid([]byte(`"` + strings.TrimSuffix(got[strings.Index(got, `"note":"`)+8:], TruncatedMarker) + `"`)) {
		t.Fatal("cut inside a rune")
	}
	small := `{"a":"b"}`
	if RedactArguments([]byte(small), DefaultMaxArguments) != small {
		t.Fatal("a small value changed")
	}
}

func TestRecordCapsStoredArguments(t *testing.T) {
	j, _, _ := newJournal(t)
	e := call("alice", "generate_strategy", 1)
	e.Arguments = json.RawMessage(`{"prompt":"` + strings.Repeat("x", 100_000) + `"}`)
	if err := j.Record(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	es, _, _ := j.List(t.Context(), "alice", "", 1)
	if len(es[0].Arguments) != DefaultMaxArguments || !Truncated(es[0].Arguments) {
		t.Fatalf("stored %d bytes", len(es[0].Arguments))
	}
}

// checkNoSecret fails when a secret key in v holds anything but Redacted.
func checkNoSecret(t *testing.T, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			if IsSecretKey(k) && y != Redacted {
				t.Fatalf("secret key %q stored %v", k, y)
			}
			checkNoSecret(t, y)
		}
	case []any:
		for _, y := range x {
			checkNoSecret(t, y)
		}
	}
}

var fuzzRedis struct {
	once sync.Once
	rdb  redis.UniversalClient
	srv  *storetest.Server
	err  error
}

// FuzzRecordNeverStoresASecret records fuzzed arguments (raw, and a fuzzed key and value
// nested in objects and arrays) and reads what Redis holds: no secret key keeps a value.
func FuzzRecordNeverStoresASecret(f *testing.F) {
	f.Add([]byte(`{"apiKey":"k","x":[{"Password":"p"}]}`), "refresh_token", "v")
	f.Add([]byte(`[{"a":{"b":{"SECRET":1}}}]`), "webhook_url", "https://x/api/webhooks/trade/1")
	f.Add([]byte(`"plain"`), "amount", "0.1")
	f.Cleanup(func() {
		if fuzzRedis.srv != nil {
			fuzzRedis.srv.Stop()
		}
	})
	f.Fuzz(func(t *testing.T, raw []byte, key, val string) {
		fuzzRedis.once.Do(func() {
			fuzzRedis.srv, fuzzRedis.err = storetest.Start()
			if fuzzRedis.err == nil {
				fuzzRedis.rdb = fuzzRedis.srv.Client()
			}
		})
		if fuzzRedis.err != nil {
			t.Fatal(fuzzRedis.err)
		}
		j := New(fuzzRedis.rdb, Options{})
		nested, _ := json.Marshal(map[string]any{"outer": []any{map[string]any{key: val}, map[string]any{"in": map[string]any{key: []any{val}}}}})
		for _, args := range [][]byte{raw, nested} {
			e := Entry{UserID: "fuzz", Channel: ChannelMCP, Tool: "t", Arguments: args}
			if err := j.Record(t.Context(), e); err != nil {
				t.Fatal(err)
			}
			es, _, err := j.List(t.Context(), "fuzz", "", 1)
			if err != nil || len(es) != 1 {
				t.Fatalf("%v %v", es, err)
			}
			stored := es[0].Arguments
			if Truncated(stored) {
				// A prefix: it no longer parses, so check the uncut redaction it came from.
				stored = json.RawMessage(RedactArguments(args, 1<<30))
			}
			dec := json.NewDecoder(bytes.NewReader(stored))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("stored %q does not parse: %v", stored, err)
			}
			checkNoSecret(t, v)
		}
	})
}

func TestNoSecretReachesRedis(t *testing.T) {
	j, rdb, _ := newJournal(t)
	e := call("alice", "create_bot", 1)
	e.Arguments = json.RawMessage(`{"name":"b","exchange":{"API_KEY":"AKIA-1","apiSecret":"S3CR3T"},
		"legs":[{"refresh_token":"RT-9"},[{"Password":"hunter2"}]],"url":"https://x/api/webhooks/trade/5f0e-WH"}`)
	if err := j.Record(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	msgs, err := rdb.XRange(t.Context(), store.UserAudit("alice"), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%v %v", msgs, err)
	}
	for k, v := range msgs[0].Values {
		for _, secret := range []string{"AKIA-1", "S3CR3T", "RT-9", "hunter2", "5f0e-WH"} {
			if strings.Contains(v.(string), secret) {
				t.Fatalf("field %s holds %q: %s", k, secret, v)
			}
		}
	}
	if !strings.Contains(msgs[0].Values["args"].(string), `"name":"b"`) {
		t.Fatalf("the rest was lost: %v", msgs[0].Values["args"])
	}
}
