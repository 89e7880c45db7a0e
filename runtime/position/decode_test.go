package position

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
)

// sameAsJSON fails t unless DecodePosition reads text as json.Unmarshal does: the same
// position, or an error from both.
func sameAsJSON(t *testing.T, text string) {
	t.Helper()
	var want Position
	wantErr := json.Unmarshal([]byte(text), &want)
	got, err := DecodePosition(text)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s:\nDecodePosition error %v, json.Unmarshal error %v", text, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nDecodePosition %+v\njson.Unmarshal %+v", text, got, want)
	}
}

// fast reports whether the hand-written reader took text without handing it to
// encoding/json.
func fast(text string) bool {
	var p Position
	d := decoder{s: text}
	return d.position(&p) && d.end()
}

var decimals = []string{"0", "1", "-1", "0.5", "1.25", "60000", "0.00000001", "123456789012345678901234567890.123456789",
	"-0.0001", "1e3", "1E-3", "2.5e+2", "-0", "100.10"}

// texts are plain (as the executor's records hold) and, less often, in need of escapes.
var (
	plainTexts = []string{"", "a", "BTC/USDT", "ETH/USDT:USDT", "pos-0123456789abcdef01234567", "bot with spaces", "émoji 🚀"}
	oddTexts   = []string{`quo"te`, `back\slash`, "<script>alert(1)</script>", "tab\there", "nul\x00", "line\nbreak", "\u2028", "&amp;"}
)

func randomDecimal(rng *rand.Rand) httpapi.Number {
	return httpapi.Num(decimal.RequireFromString(decimals[rng.IntN(len(decimals))]))
}

func randomText(rng *rand.Rand) string {
	if rng.IntN(20) == 0 {
		return oddTexts[rng.IntN(len(oddTexts))]
	}
	return plainTexts[rng.IntN(len(plainTexts))]
}

func randomExit(rng *rand.Rand) *Exit {
	if rng.IntN(3) == 0 {
		return nil
	}
	e := &Exit{Price: randomDecimal(rng), ClosePercent: randomDecimal(rng)}
	if rng.IntN(2) == 0 {
		e.Percent = randomDecimal(rng)
	}
	return e
}

func randomPosition(rng *rand.Rand) Position {
	return Position{
		ID: randomText(rng), BotID: randomText(rng), Symbol: randomText(rng),
		Kind: []exchange.Kind{exchange.Spot, exchange.Futures, ""}[rng.IntN(3)], Side: []Side{Long, Short, ""}[rng.IntN(3)],
		Size: randomDecimal(rng), Cost: randomDecimal(rng), Margin: randomDecimal(rng), Leverage: rng.IntN(200) - 50,
		EntryFees: randomDecimal(rng), StopLoss: randomExit(rng), TakeProfit: randomExit(rng), DCALevel: rng.IntN(10),
		OpenedBy: randomText(rng), CreatedAt: rng.Int64() - rng.Int64(), UpdatedAt: rng.Int64N(1 << 45),
	}
}

// Records as the executor writes them (json.Marshal of a Position) read as json.Unmarshal
// reads them, and those whose strings need no escape are read without encoding/json.
func TestDecodePositionIsJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	fastOnes := 0
	for range 5000 {
		p := randomPosition(rng)
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		sameAsJSON(t, text)
		if !strings.Contains(text, `\`) {
			if !fast(text) {
				t.Fatalf("a record without escapes went to encoding/json: %s", text)
			}
			fastOnes++
		}
	}
	if fastOnes < 1000 {
		t.Fatalf("only %d of 5000 records without escapes", fastOnes)
	}
}

// A record written by Open, as a bot's first fill books it, is read without encoding/json.
func TestDecodePositionReadsTheExecutorsRecord(t *testing.T) {
	p := Open(ID("sig-1", "entry"), "3f1c2b9e-5c1a-4c43-9b55-4f1f6f0d2a10", "BTC/USDT", exchange.Futures, Short, 5,
		Fill{Amount: decimal.RequireFromString("0.015"), Price: decimal.RequireFromString("64250.5"),
			Fee: decimal.RequireFromString("0.48"), At: 1795478400123}, "sig-1")
	p.StopLoss = &Exit{Price: httpapi.Num(decimal.RequireFromString("66000")), Percent: httpapi.Num(decimal.RequireFromString("2.5")),
		ClosePercent: httpapi.Num(decimal.RequireFromString("100"))}
	data, _ := json.Marshal(p)
	if !fast(string(data)) {
		t.Fatalf("the executor's record went to encoding/json: %s", data)
	}
	sameAsJSON(t, string(data))
}

// Every field of Position is one DecodePosition reads itself: a field added to the record
// fails here until the reader knows it (else it would drop it without a word).
func TestDecodePositionReadsEveryField(t *testing.T) {
	var p Position
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		fill(t, v.Type().Field(i).Name, v.Field(i), i+1)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePosition(string(data))
	if err != nil || !fast(string(data)) {
		t.Fatalf("%s: error %v, read by encoding/json: %v", data, err, !fast(string(data)))
	}
	again, _ := json.Marshal(got)
	if string(again) != string(data) {
		t.Fatalf("DecodePosition lost a field:\n read %s\nwrote %s", again, data)
	}
	sameAsJSON(t, string(data))
}

// fill sets v (field name) to a value that is not zero and differs by n between fields.
func fill(t *testing.T, name string, v reflect.Value, n int) {
	t.Helper()
	switch v.Interface().(type) {
	case httpapi.Number:
		v.Set(reflect.ValueOf(httpapi.Num(decimal.New(int64(n)*125, -2))))
	case *Exit:
		e := &Exit{}
		ev := reflect.ValueOf(e).Elem()
		for i := range ev.NumField() {
			fill(t, name+"."+ev.Type().Field(i).Name, ev.Field(i), n*10+i)
		}
		v.Set(reflect.ValueOf(e))
	default:
		switch v.Kind() {
		case reflect.String:
			v.SetString(fmt.Sprintf("%s-%d", name, n))
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(n) * 1000003)
		default:
			t.Fatalf("field %s of type %s: DecodePosition and this test do not know the type", name, v.Type())
		}
	}
}

// Texts the executor never writes read as json.Unmarshal reads them (value or error):
// spacing, order, nulls, numbers as strings, unknown fields, keys that differ by case,
// repeated keys, escapes, invalid UTF-8, numbers JSON refuses, and text that is not JSON.
func TestDecodePositionEdgeCases(t *testing.T) {
	for _, text := range []string{
		`{}`, ` { } `, `null`, `[]`, `""`, `1`, ``, ` `, `{`, `}`, `{"id":"a"`, `{"id":"a"}x`, `{"id":"a"}{}`, `{"id":"a",}`,
		`{,}`, `{"id" "a"}`, `{"id":}`, "\ufeff{}", `{"id":"a"} `, "\n{\t\"id\" :\r\n\"a\" ,\"botId\":\"b\"}\n",
		// Fields in another order, missing, null.
		`{"updatedAt":2,"createdAt":1,"symbol":"BTC/USDT","id":"p"}`, `{"size":null,"stopLoss":null,"id":null,"leverage":null}`,
		`{"stopLoss":{"price":1},"stopLoss":null}`, `{"stopLoss":null,"stopLoss":{"price":1}}`,
		// Repeated keys: the last wins; a repeated exit is read into the first.
		`{"id":"a","id":"b"}`, `{"stopLoss":{"price":1},"stopLoss":{"closePercent":2}}`, `{"size":1,"size":"2"}`,
		// Numbers: as strings, exponents, signs, and those JSON or the decimal refuse.
		`{"size":"1.5","cost":"-2e3","margin":1E2,"entryFees":0}`, `{"size":""}`, `{"size":"x"}`, `{"size":" 1"}`, `{"size":"1 "}`,
		`{"size":01}`, `{"size":1.}`, `{"size":.5}`, `{"size":+1}`, `{"size":-}`, `{"size":1e}`, `{"size":1e-2000000000}`,
		`{"size":"1e-2000000000"}`, `{"size":-0.0}`, `{"size":true}`, `{"size":{}}`, `{"size":[1]}`, `{"size":"\u0031"}`,
		`{"size":NaN}`, `{"size":Infinity}`, `{"size":0x10}`,
		`{"leverage":5}`, `{"leverage":-5}`, `{"leverage":5.0}`, `{"leverage":5e0}`, `{"leverage":"5"}`, `{"leverage":true}`,
		`{"leverage":9223372036854775807}`, `{"leverage":9223372036854775808}`, `{"createdAt":-9223372036854775808}`,
		`{"createdAt":1795478400123}`, `{"dcaLevel":00}`, `{"dcaLevel":-0}`,
		// Strings of another type, escapes, control characters, invalid UTF-8, other scripts.
		`{"id":1}`, `{"id":true}`, `{"id":{}}`, `{"symbol":"BTC\/USDT"}`, `{"symbol":"\u0042TC"}`, `{"symbol":"\ud83d\ude80"}`,
		`{"symbol":"\ud83d"}`, `{"symbol":"a\"b"}`, `{"symbol":"a\qb"}`, "{\"symbol\":\"a\tb\"}", "{\"symbol\":\"a\x00b\"}",
		"{\"symbol\":\"\xff\"}", "{\"symbol\":\"caf\xc3\xa9\"}", `{"symbol":"<script>alert(1)</script>"}`, `{"side":"long","kind":"futures"}`,
		// Unknown fields, of every kind of value, are skipped.
		`{"x":1,"id":"a"}`, `{"extra":{"a":[1,{"b":null}],"c":"d\n"},"id":"a"}`, `{"extra":[],"id":"a"}`, `{"extra":[1,],"id":"a"}`,
		`{"extra":tru,"id":"a"}`, `{"extra":nul}`, `{"extra":"\x01"}`, `{"extra":"\u12"}`, `{"extra":falsey}`,
		`{"extra":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `,"id":"a"}`,
		`{"extra":` + strings.Repeat("[", 40) + strings.Repeat("]", 39) + `,"id":"a"}`,
		// Keys that match a field but for case are that field to encoding/json; so may a
		// non-ASCII key (the Kelvin sign folds to k), and an escaped one.
		`{"ID":"a"}`, `{"Symbol":"s","symbol":"t"}`, `{"symbol":"t","SYMBOL":"s"}`, `{"STOPLOSS":{"PRICE":3}}`, `{"botid":"b"}`,
		`{"stopLoss":{"Price":3,"closepercent":4}}`, "{\"\u212aind\":\"spot\"}", `{"\u0069d":"a"}`, `{"sızе":1}`,
		// Exits of another type, unknown exit fields.
		`{"stopLoss":1}`, `{"stopLoss":"x"}`, `{"stopLoss":[]}`, `{"stopLoss":{}}`, `{"takeProfit":{"price":"5","trail":{"a":1}}}`,
		`{"stopLoss":{"price":1,}}`,
	} {
		sameAsJSON(t, text)
	}
}

// FuzzDecodePosition: any text reads as json.Unmarshal reads it.
func FuzzDecodePosition(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 20 {
		data, _ := json.Marshal(randomPosition(rng))
		f.Add(string(data))
	}
	f.Add(`{"stopLoss":{"price":1},"stopLoss":{"closePercent":2},"ID":"x"}`)
	f.Fuzz(func(t *testing.T, text string) {
		sameAsJSON(t, text)
	})
}

// BenchmarkDecodePosition: the executor's record of a futures position with a stop-loss,
// by DecodePosition and by json.Unmarshal.
func BenchmarkDecodePosition(b *testing.B) {
	p := Open(ID("sig-1", "entry"), "3f1c2b9e-5c1a-4c43-9b55-4f1f6f0d2a10", "BTC/USDT", exchange.Futures, Short, 5,
		Fill{Amount: decimal.RequireFromString("0.015"), Price: decimal.RequireFromString("64250.5"),
			Fee: decimal.RequireFromString("0.48"), At: 1795478400123}, "sig-1")
	p.StopLoss = &Exit{Price: httpapi.Num(decimal.RequireFromString("66000")), ClosePercent: httpapi.Num(decimal.RequireFromString("100"))}
	data, _ := json.Marshal(p)
	text := string(data)
	b.Run("DecodePosition", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodePosition(text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q Position
			if err := json.Unmarshal([]byte(text), &q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
