package position

import (
	"encoding/json"
	"strconv"

	"github.com/sigops/sigops/runtime/exchange"
)

// A trade is stored in its bot's list in the compact form of packed.go, version "1":
// closedAt (ms), openedAt (ms), id, positionId, botId, signalId, symbol, kind, side, size,
// entryPrice, exitPrice, leverage, pnl, fees, netPnl, closed ("1" or ""), then reason,
// last. A trade one of whose other fields holds the separator is written as JSON instead;
// DecodeTrade reads both, as it reads the JSON every trade was before this form. Why this
// form: as for order records (ordercodec.go), the key names were half of each trade's
// bytes; closedAt comes first so that a reader of the equity curve finds it at once.
const tradeForm = "1"

// tradeFields is the number of fields of the form, the version not counted.
const tradeFields = 18

// EncodeTrade is t as its bot's trade list stores it.
func EncodeTrade(t Trade) (string, error) {
	text, ok := pack(tradeForm, []string{
		strconv.FormatInt(t.ClosedAt, 10), strconv.FormatInt(t.OpenedAt, 10), t.ID, t.PositionID, t.BotID, t.SignalID,
		t.Symbol, string(t.Kind), string(t.Side), numText(t.Size, false), numText(t.EntryPrice, false),
		numText(t.ExitPrice, false), strconv.Itoa(t.Leverage), numText(t.Pnl, false), numText(t.Fees, false),
		numText(t.NetPnl, false), flagText(t.Closed), t.Reason,
	})
	if !ok {
		b, err := json.Marshal(t)
		return string(b), err
	}
	return text, nil
}

// DecodeTrade reads a stored trade in either form.
func DecodeTrade(text string) (Trade, error) {
	p, ok := unpack(text, tradeForm, tradeFields)
	if !ok {
		var t Trade
		err := json.Unmarshal([]byte(text), &t)
		return t, err
	}
	if p.err != nil {
		return Trade{}, p.err
	}
	f := p.f
	t := Trade{
		ClosedAt: p.integer(0), OpenedAt: p.integer(1), ID: f[2], PositionID: f[3], BotID: f[4], SignalID: f[5],
		Symbol: f[6], Kind: exchange.Kind(f[7]), Side: Side(f[8]), Size: p.num(9), EntryPrice: p.num(10),
		ExitPrice: p.num(11), Leverage: int(p.integer(12)), Pnl: p.num(13), Fees: p.num(14), NetPnl: p.num(15),
		Closed: p.flag(16), Reason: f[17],
	}
	if p.err != nil || f[0] == "" {
		return Trade{}, errCorruptRecord
	}
	return t, nil
}

// decodeTradeResult reads only what an equity curve needs of a stored trade.
func decodeTradeResult(text string) (TradeResult, error) {
	p, ok := unpack(text, tradeForm, tradeFields)
	if !ok {
		var t TradeResult
		err := json.Unmarshal([]byte(text), &t)
		return t, err
	}
	if p.err != nil {
		return TradeResult{}, p.err
	}
	r := TradeResult{ClosedAt: p.integer(0), ID: p.f[2], NetPnl: p.num(15)}
	if p.err != nil || p.f[0] == "" {
		return TradeResult{}, errCorruptRecord
	}
	return r, nil
}
