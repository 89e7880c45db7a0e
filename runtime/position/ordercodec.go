package position

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/result"
)

// An order record is stored in Redis in the compact form of packed.go, version "1": status,
// updatedAt (ms), createdAt ("" when it is updatedAt), then the outcome it holds (see
// Outcome; both "" for none): the result's time and its order's time, each as a
// difference from updatedAt; then orderId, clientOrderId ("" when it is the one the signal
// ID and leg derive, ClientOrderID, else "=" and the ID), signalId, botId, leg, symbol,
// kind, side, type, amount, price ("" for none), filledAmount, avgPrice, fee, feeAsset,
// reduceOnly ("1" or ""), leverage ("" for none), code, the outcome's message, then error,
// last, so that it may hold any byte. Amounts and prices are their exact decimal text. A
// record one of whose other fields holds the separator is written as JSON instead, which
// holds no outcome (the executor then keeps the result under its own key); DecodeOrder
// reads both, as it reads the JSON every record was before this form.
//
// Why not JSON: a bot keeps an order record per fill for its whole hot window, and JSON's
// key names were about half of each record's bytes. Why not a binary format such as
// MessagePack: the retention compactor and the executor's commit read a record's status,
// last change and outcome inside Lua scripts (orderStateLua), which a text form lets them
// do with one string.match, and the amounts stay their exact decimal text either way.
const orderForm = "1"

// orderFields is the number of fields of the form, the version not counted.
const orderFields = 25

// EncodeOrder is rec as Redis stores it.
func EncodeOrder(rec OrderRecord) (string, error) {
	created := ""
	if rec.CreatedAt != rec.UpdatedAt {
		created = strconv.FormatInt(rec.CreatedAt, 10)
	}
	var at, orderAt, message string
	if o := rec.Outcome; o != nil {
		at, orderAt, message = strconv.FormatInt(o.At-rec.UpdatedAt, 10), strconv.FormatInt(o.OrderAt-rec.UpdatedAt, 10), o.Message
	}
	cid := ""
	if rec.SignalID == "" || rec.ClientOrderID != ClientOrderID(rec.SignalID, rec.Leg) {
		cid = "=" + rec.ClientOrderID
	}
	text, ok := pack(orderForm, []string{
		string(rec.Status), strconv.FormatInt(rec.UpdatedAt, 10), created, at, orderAt, rec.OrderID, cid,
		rec.SignalID, rec.BotID, rec.Leg, rec.Symbol, string(rec.Kind), string(rec.Side), string(rec.Type),
		numText(rec.Amount, false), numText(rec.Price, true), numText(rec.FilledAmount, false), numText(rec.AvgPrice, false),
		numText(rec.Fee, false), rec.FeeAsset, flagText(rec.ReduceOnly), intText(int64(rec.Leverage)), rec.Code, message,
		rec.Error,
	})
	if !ok {
		b, err := json.Marshal(rec)
		return string(b), err
	}
	return text, nil
}

// DecodeOrder reads a stored order record in either form.
func DecodeOrder(text string) (OrderRecord, error) {
	p, ok := unpack(text, orderForm, orderFields)
	if !ok {
		var rec OrderRecord
		err := json.Unmarshal([]byte(text), &rec)
		return rec, err
	}
	if p.err != nil {
		return OrderRecord{}, p.err
	}
	f := p.f
	rec := OrderRecord{
		Status: exchange.OrderStatus(f[0]), UpdatedAt: p.integer(1), OrderID: f[5],
		SignalID: f[7], BotID: f[8], Leg: f[9], Symbol: f[10], Kind: exchange.Kind(f[11]), Side: exchange.Side(f[12]),
		Type: exchange.OrderType(f[13]), Amount: p.num(14), Price: p.num(15), FilledAmount: p.num(16),
		AvgPrice: p.num(17), Fee: p.num(18), FeeAsset: f[19], ReduceOnly: p.flag(20),
		Leverage: int(p.integer(21)), Code: f[22], Error: f[24],
	}
	rec.CreatedAt = rec.UpdatedAt
	if f[2] != "" {
		rec.CreatedAt = p.integer(2)
	}
	if cid, ok := strings.CutPrefix(f[6], "="); ok {
		rec.ClientOrderID = cid
	} else if f[6] == "" && rec.SignalID != "" {
		rec.ClientOrderID = ClientOrderID(rec.SignalID, rec.Leg)
	} else {
		p.err = errCorruptRecord
	}
	if f[3] != "" {
		rec.Outcome = &Outcome{Message: f[23], At: rec.UpdatedAt + p.integer(3), OrderAt: rec.UpdatedAt + p.integer(4)}
	}
	if p.err != nil || f[1] == "" {
		return OrderRecord{}, errCorruptRecord
	}
	return rec, nil
}

// OrderStateLua is the Lua function orderState(rec): a stored record's status, last change
// (ms) and whether it holds its signal's result, in either form; nil for text that is
// neither.
const OrderStateLua = `local function orderState(rec)
  if string.sub(rec, 1, 2) == '` + orderForm + `\031' then
    local st, up, _, held = string.match(rec, '^` + orderForm + `\031([^\031]*)\031([^\031]*)\031([^\031]*)\031([^\031]*)\031')
    return st, tonumber(up), held ~= nil and held ~= ''
  end
  local ok, r = pcall(cjson.decode, rec)
  if not ok or type(r) ~= 'table' or type(r.updatedAt) ~= 'number' then return nil end
  return r.status, r.updatedAt, false
end
`

// KeptResult is the result of the signal whose only order this is, when the record holds
// it (Outcome): the result the executor would have stored under the signal's own key,
// which it checks before it lets the record hold it.
func (r OrderRecord) KeptResult() (result.Result, bool) {
	o := r.Outcome
	if o == nil {
		return result.Result{}, false
	}
	return result.Result{SignalID: r.SignalID, BotID: r.BotID, Success: true, Message: o.Message, Timestamp: o.At,
		Order: &result.Order{Success: true, OrderID: r.OrderID, Status: string(r.Status), Symbol: r.Symbol,
			Side: string(r.Side), Type: string(r.Type), Amount: r.Amount, FilledAmount: r.FilledAmount,
			AvgPrice: r.AvgPrice, Fee: r.Fee, Timestamp: o.OrderAt}}, true
}
