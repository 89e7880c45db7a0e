package okxfake

import (
	"strings"

	"github.com/shopspring/decimal"
)

// instrument is an instrument of the fake catalogue, with OKX's fields.
type instrument struct {
	instType, instID, base, quote, settle string
	ctVal, ctValCcy, ctType               string
	lotSz, minSz, tickSz, lever           string
	state                                 string
}

// The catalogue: OKX-like lots (BTC-USDT spot lot 0.00000001, min 0.00001; swaps in
// contracts: BTC-USDT-SWAP 0.01 BTC a contract, lot and minimum 0.01 contracts), and
// instruments the adapter must leave out (a suspended pair, an inverse swap, a
// USDC-settled swap).
var catalogue = []instrument{
	{instType: "SPOT", instID: "BTC-USDT", base: "BTC", quote: "USDT", lotSz: "0.00000001", minSz: "0.00001", tickSz: "0.1", state: "live"},
	{instType: "SPOT", instID: "ETH-USDT", base: "ETH", quote: "USDT", lotSz: "0.000001", minSz: "0.0001", tickSz: "0.01", state: "live"},
	{instType: "SPOT", instID: "OLD-USDT", base: "OLD", quote: "USDT", lotSz: "0.01", minSz: "1", tickSz: "0.0001", state: "suspend"},

	{instType: "SWAP", instID: "BTC-USDT-SWAP", settle: "USDT", ctVal: "0.01", ctValCcy: "BTC", ctType: "linear",
		lotSz: "0.01", minSz: "0.01", tickSz: "0.1", lever: "100", state: "live"},
	{instType: "SWAP", instID: "ETH-USDT-SWAP", settle: "USDT", ctVal: "0.1", ctValCcy: "ETH", ctType: "linear",
		lotSz: "0.01", minSz: "0.01", tickSz: "0.01", lever: "100", state: "live"},
	{instType: "SWAP", instID: "BTC-USD-SWAP", settle: "BTC", ctVal: "100", ctValCcy: "USD", ctType: "inverse",
		lotSz: "1", minSz: "1", tickSz: "0.1", lever: "100", state: "live"},
	{instType: "SWAP", instID: "BTC-USDC-SWAP", settle: "USDC", ctVal: "0.0001", ctValCcy: "BTC", ctType: "linear",
		lotSz: "0.01", minSz: "0.01", tickSz: "0.1", lever: "100", state: "live"},
}

// instrument finds an instrument by instId, with the test's overrides.
func (s *Server) instrument(instID string) *instrument {
	if in, ok := s.overrides[instID]; ok {
		return &in
	}
	for i := range catalogue {
		if catalogue[i].instID == instID {
			in := catalogue[i]
			return &in
		}
	}
	return nil
}

// pair is the priced pair of an instId: BTC-USDT for BTC-USDT and BTC-USDT-SWAP.
func pair(instID string) string { return strings.TrimSuffix(instID, "-SWAP") }

func (in *instrument) uly() string { return pair(in.instID) }

func (in *instrument) json() map[string]any {
	out := map[string]any{"instType": in.instType, "instId": in.instID, "uly": "", "instFamily": "",
		"baseCcy": "", "quoteCcy": "", "settleCcy": in.settle, "ctVal": in.ctVal, "ctMult": "", "ctValCcy": in.ctValCcy,
		"optType": "", "stk": "", "listTime": "1606468572000", "expTime": "", "lever": in.lever, "tickSz": in.tickSz,
		"lotSz": in.lotSz, "minSz": in.minSz, "ctType": in.ctType, "alias": "", "state": in.state,
		"maxLmtSz": "9999999999", "maxMktSz": "1000000", "maxLmtAmt": "20000000", "maxMktAmt": "1000000",
		"maxTwapSz": "9999999999", "maxIcebergSz": "9999999999", "maxTriggerSz": "9999999999", "maxStopSz": "1000000",
		"ruleType": "normal", "category": "1"}
	if in.instType == "SPOT" {
		out["baseCcy"], out["quoteCcy"] = in.base, in.quote
		if in.lever == "" {
			out["lever"] = "10"
		}
	} else {
		out["uly"], out["instFamily"] = in.uly(), in.uly()
	}
	return out
}

func (s *Server) instrumentsList(q map[string]string, _ []byte) (any, *failure) {
	it := q["instType"]
	if it == "" {
		return nil, emptyParam("instType")
	}
	if it != "SPOT" && it != "SWAP" && it != "FUTURES" && it != "OPTION" && it != "MARGIN" {
		return nil, badParam("instType")
	}
	list := []map[string]any{}
	for i := range catalogue {
		in := s.instrument(catalogue[i].instID)
		if in.instType == it && (q["instId"] == "" || q["instId"] == in.instID) {
			list = append(list, in.json())
		}
	}
	return list, nil
}

func (s *Server) price(instID string) decimal.Decimal { return s.prices[pair(instID)] }

func (s *Server) ticker(q map[string]string, _ []byte) (any, *failure) {
	if q["instId"] == "" {
		return nil, emptyParam("instId")
	}
	in := s.instrument(q["instId"])
	if in == nil {
		return nil, fail(51001, "Instrument ID or Spread ID doesn't exist.")
	}
	p := s.price(in.instID)
	tick := decimal.RequireFromString(in.tickSz)
	now := s.now().UnixMilli()
	return []map[string]string{{"instType": in.instType, "instId": in.instID, "last": p.String(), "lastSz": "0.1",
		"askPx": p.Add(tick).String(), "askSz": "1", "bidPx": p.Sub(tick).String(), "bidSz": "1", "open24h": p.String(),
		"high24h": p.String(), "low24h": p.String(), "volCcy24h": "1000", "vol24h": "1000", "sodUtc0": p.String(),
		"sodUtc8": p.String(), "ts": decimal.NewFromInt(now).String()}}, nil
}
