package position

import (
	"encoding/json"
	"strconv"

	"github.com/sigops/sigops/runtime/exchange"
)

// An order record is stored in Redis in the compact form of packed.go, version "1": status,
// updatedAt (ms), createdAt ("" when it is updatedAt), orderId, clientOrderId, signalId,
// botId, leg, symbol, kind, side, type, amount, price ("" for none), filledAmount,
// avgPrice, fee, feeAsset, reduceOnly ("1" or ""), leverage ("" for none), code, then
// error, last, so that it may hold any byte. Amounts and prices are their exact decimal
// text. A record one of whose other fields holds the separator is written as JSON instead;
// DecodeOrder reads both, as it reads the JSON every record was before this form.
//
// Why not JSON: a bot keeps an order record per fill for its whole hot window, and JSON's
// key names were about half of each record's bytes. Why not a binary format such as
// MessagePack: the retention compactor reads a record's status and last change inside a
// Lua script (orderStateLua), which a text form lets it do with one string.match, and the
// amounts stay their exact decimal text either way.
const orderForm = "1"

// orderFields is the number of fields of the form, the version not counted.
const orderFields = 22

// EncodeOrder is rec as Redis stores it.
func EncodeOrder(rec OrderRecord) (string, error) {
	created := ""
	if rec.CreatedAt != rec.UpdatedAt {
		created = strconv.FormatInt(rec.CreatedAt, 10)
	}
	text, ok := pack(orderForm, []string{
		string(rec.Status), strconv.FormatInt(rec.UpdatedAt, 10), created, rec.OrderID, rec.ClientOrderID, rec.SignalID,
		rec.BotID, rec.Leg, rec.Symbol, string(rec.Kind), string(rec.Side), string(rec.Type),
		numText(rec.Amount, false), numText(rec.Price, true), numText(rec.FilledAmount, false), numText(rec.AvgPrice, false),
		numText(rec.Fee, false), rec.FeeAsset, flagText(rec.ReduceOnly), intText(int64(rec.Leverage)), rec.Code, rec.Error,
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
		Status: exchange.OrderStatus(f[0]), UpdatedAt: p.integer(1), OrderID: f[3], ClientOrderID: f[4],
		SignalID: f[5], BotID: f[6], Leg: f[7], Symbol: f[8], Kind: exchange.Kind(f[9]), Side: exchange.Side(f[10]),
		Type: exchange.OrderType(f[11]), Amount: p.num(12), Price: p.num(13), FilledAmount: p.num(14),
		AvgPrice: p.num(15), Fee: p.num(16), FeeAsset: f[17], ReduceOnly: p.flag(18),
		Leverage: int(p.integer(19)), Code: f[20], Error: f[21],
	}
	rec.CreatedAt = rec.UpdatedAt
	if f[2] != "" {
		rec.CreatedAt = p.integer(2)
	}
	if p.err != nil || f[1] == "" {
		return OrderRecord{}, errCorruptRecord
	}
	return rec, nil
}

// orderStateLua is the Lua function orderState(rec): a stored record's status and last
// change (ms) in either form, or nil for text that is neither.
const orderStateLua = `local function orderState(rec)
  if string.sub(rec, 1, 2) == '` + orderForm + `\031' then
    local st, up = string.match(rec, '^` + orderForm + `\031([^\031]*)\031([^\031]*)\031')
    return st, tonumber(up)
  end
  local ok, r = pcall(cjson.decode, rec)
  if not ok or type(r) ~= 'table' or type(r.updatedAt) ~= 'number' then return nil end
  return r.status, r.updatedAt
end
`
