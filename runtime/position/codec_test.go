package position_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

// randomOrder is an order record with every field drawn from r, strings from alphabet.
func randomOrder(r *rand.Rand, alphabet string) position.OrderRecord {
	str := func() string {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	num := func() httpapi.Number {
		if r.IntN(4) == 0 {
			return httpapi.Number{}
		}
		return httpapi.Num(decimal.New(r.Int64N(1e12)-5e11, -r.Int32N(12)))
	}
	at := r.Int64N(2e12)
	rec := position.OrderRecord{
		OrderID: str(), ClientOrderID: str(), SignalID: str(), BotID: str(), Leg: str(), Symbol: str(),
		Kind: exchange.Kind(str()), Side: exchange.Side(str()), Type: exchange.OrderType(str()), Status: exchange.OrderStatus(str()),
		Amount: num(), Price: num(), FilledAmount: num(), AvgPrice: num(), Fee: num(), FeeAsset: str(),
		ReduceOnly: r.IntN(2) == 0, Leverage: r.IntN(3) * r.IntN(125), Code: str(), Error: str(),
		CreatedAt: at, UpdatedAt: at,
	}
	if r.IntN(2) == 0 {
		rec.UpdatedAt += r.Int64N(1e6)
	}
	return rec
}

// A record read back from its stored form is the record written: the API's JSON of the two
// is the same, for random records, including strings that hold the separator (stored as
// JSON then) and an error text that holds anything (last in the compact form).
func TestOrderRecordRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 31))
	compact := 0
	for i := range 5000 {
		alphabet := "abcXYZ019-_/ .:"
		if i%10 == 0 {
			alphabet += "\x1f\"\\{"
		}
		rec := randomOrder(r, alphabet)
		if i%7 == 0 {
			rec.Error = "refused \x1f {\"x\": 1}\n"
		}
		switch i % 3 {
		case 0:
			rec.Outcome = &position.Outcome{Message: "closed long 0.5 BTC/USDT at 65000, net PnL -1.9994", At: r.Int64N(2e12), OrderAt: r.Int64N(2e12)}
		case 1:
			// A client order ID derived from the signal ID and leg is left out of the form.
			rec.ClientOrderID = position.ClientOrderID(rec.SignalID, rec.Leg)
		}
		text, err := position.EncodeOrder(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, "{") {
			compact++
		}
		got, err := position.DecodeOrder(text)
		if err != nil {
			t.Fatalf("%+v stored as %q: %v", rec, text, err)
		}
		want, _ := json.Marshal(rec)
		if read, _ := json.Marshal(got); string(read) != string(want) {
			t.Fatalf("stored as %q\nread  %s\nwrote %s", text, read, want)
		}
		// The outcome lives in the compact form only (JSON never holds it).
		if strings.HasPrefix(text, "{") {
			if got.Outcome != nil {
				t.Fatalf("a JSON record read with an outcome: %q", text)
			}
		} else if (rec.Outcome == nil) != (got.Outcome == nil) || rec.Outcome != nil && *rec.Outcome != *got.Outcome {
			t.Fatalf("stored as %q: outcome %+v, wrote %+v", text, got.Outcome, rec.Outcome)
		}
	}
	if compact < 4000 {
		t.Fatalf("only %d of 5000 records in the compact form", compact)
	}
}

// A record stored as JSON (every record before the compact form) reads as it did, and the
// compact form of a paper fill is less than half its JSON.
func TestOrderRecordReadsJSONAndIsSmaller(t *testing.T) {
	rec := position.OrderRecord{OrderID: "P05e77bed594a8ff28bb", ClientOrderID: "sg-72af0061a5d3a61fe551a1e8bc785c0b",
		SignalID: "00000000-0000-4000-8000-00000000010f", BotID: "bot-1", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled, Amount: num("0.01538"),
		FilledAmount: num("0.01538"), AvgPrice: num("65000"), Fee: num("0.9997"), FeeAsset: "USDT", Leverage: 1,
		CreatedAt: 1795262400000, UpdatedAt: 1795262400000}
	data, _ := json.Marshal(rec)
	got, err := position.DecodeOrder(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(got); string(again) != string(data) {
		t.Fatalf("JSON record read as %s", again)
	}
	text, _ := position.EncodeOrder(rec)
	if len(text)*2 > len(data) {
		t.Fatalf("compact form %d B, JSON %d B", len(text), len(data))
	}
	for _, bad := range []string{"1\x1ffilled", "1" + strings.Repeat("\x1f", 22), "not json", "2\x1f"} {
		if _, err := position.DecodeOrder(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func num(s string) httpapi.Number { return httpapi.Num(decimal.RequireFromString(s)) }

// A trade read back from its stored form is the trade written (the same JSON), for random
// trades, including strings that hold the separator and a reason that holds anything; the
// equity curve's reader of a stored trade takes the same ID, net result and close time.
func TestTradeRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	for i := range 5000 {
		alphabet := "abcXYZ019-_/ .:"
		if i%10 == 0 {
			alphabet += "\x1f\"\\{"
		}
		o := randomOrder(r, alphabet)
		tr := position.Trade{ID: o.OrderID, PositionID: o.ClientOrderID, BotID: o.BotID, SignalID: o.SignalID,
			Symbol: o.Symbol, Kind: o.Kind, Side: position.Side(o.Side), Size: o.Amount, EntryPrice: o.Price,
			ExitPrice: o.AvgPrice, Leverage: o.Leverage, Pnl: o.Fee, Fees: o.FilledAmount, NetPnl: o.Amount,
			Closed: o.ReduceOnly, Reason: o.Error, OpenedAt: o.CreatedAt, ClosedAt: o.UpdatedAt}
		if i%7 == 0 {
			tr.Reason = "x\x1fy\n{"
		}
		text, err := position.EncodeTrade(tr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := position.DecodeTrade(text)
		if err != nil {
			t.Fatalf("%+v stored as %q: %v", tr, text, err)
		}
		want, _ := json.Marshal(tr)
		if read, _ := json.Marshal(got); string(read) != string(want) {
			t.Fatalf("stored as %q\nread  %s\nwrote %s", text, read, want)
		}
		res, err := position.DecodeTradeResult(text)
		if err != nil || res.ID != tr.ID || res.ClosedAt != tr.ClosedAt || res.NetPnl.String() != tr.NetPnl.String() {
			t.Fatalf("stored as %q: result %+v, %v", text, res, err)
		}
	}
	old, _ := json.Marshal(position.Trade{ID: "t1", NetPnl: num("-1.9994"), ClosedAt: 5})
	if got, err := position.DecodeTrade(string(old)); err != nil || got.ID != "t1" || got.NetPnl.String() != "-1.9994" {
		t.Fatalf("a JSON trade: %+v, %v", got, err)
	}
}

// A record holding its signal's result answers that result: its order fields as the
// result's order, the outcome's message and times; a record without one answers none.
func TestKeptResult(t *testing.T) {
	rec := position.OrderRecord{OrderID: "P1", SignalID: "s-1", BotID: "bot-1", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.Market, Status: exchange.StatusFilled, Amount: num("0.5"),
		FilledAmount: num("0.5"), AvgPrice: num("65000"), Fee: num("32.5"), UpdatedAt: 1000, CreatedAt: 1000}
	if _, ok := rec.KeptResult(); ok {
		t.Fatal("a record without an outcome answered a result")
	}
	rec.Outcome = &position.Outcome{Message: "closed long 0.5 BTC/USDT at 65000", At: 1002, OrderAt: 999}
	text, _ := position.EncodeOrder(rec)
	back, err := position.DecodeOrder(text)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := back.KeptResult()
	got, _ := json.Marshal(res)
	want := `{"signalId":"s-1","botId":"bot-1","success":true,"message":"closed long 0.5 BTC/USDT at 65000",` +
		`"order":{"success":true,"orderId":"P1","status":"filled","symbol":"BTC/USDT","side":"sell","type":"market",` +
		`"amount":0.5,"filledAmount":0.5,"avgPrice":65000,"fee":32.5,"timestamp":999},"timestamp":1002}`
	if !ok || string(got) != want {
		t.Fatalf("kept result %s\nwant %s", got, want)
	}
}
