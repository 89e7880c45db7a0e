package binancefake_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

// signedSend sends params (without recvWindow and timestamp) signed, in the query string.
func signedSend(t *testing.T, s *binancefake.Server, method, path, params string) answer {
	t.Helper()
	q := params
	if q != "" {
		q += "&"
	}
	q += "recvWindow=5000&timestamp=" + ts()
	return send(t, s, method, path, binancefake.APIKey, q+"&signature="+sign(binancefake.APISecret, q), "")
}

// refusal is Binance's error body: exactly {"code":…,"msg":…}.
func refusal(t *testing.T, a answer) (int, string) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal([]byte(a.body), &body); err != nil || len(body) != 2 {
		t.Fatalf("error body %q is not Binance's {code, msg}", a.body)
	}
	code, _ := body["code"].(float64)
	msg, _ := body["msg"].(string)
	return int(code), msg
}

// One row per rule of RULES.md: the request Binance refuses, and its code and message.
func TestRules(t *testing.T) {
	const (
		open      = "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.010"
		spotOrder = "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.001"
		stop      = "algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&triggerPrice=45000"
	)
	hedge := func(s *binancefake.Server) { s.SetHedgeMode(true) }
	long := func(s *binancefake.Server) {
		if a := signedSend(t, s, "POST", "/fapi/v1/order", open); a.status != 200 {
			t.Fatalf("opening a long: %+v", a)
		}
	}
	rows := []struct {
		rule         string
		setup        func(*binancefake.Server)
		method, path string
		params       string
		code         int
		msg          string // exact
	}{
		{"closePosition with a limit type (STOP)", long, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP&price=44900&timeInForce=GTC&closePosition=true", -1128, "Combination of optional parameters invalid."},
		{"closePosition with a limit type (TAKE_PROFIT)", long, "POST", "/fapi/v1/algoOrder",
			"algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&triggerPrice=55000&type=TAKE_PROFIT&price=54900&timeInForce=GTC&closePosition=true",
			-1128, "Combination of optional parameters invalid."},
		{"closePosition with reduceOnly", long, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&closePosition=true&reduceOnly=true", -1106, "Parameter 'reduceonly' sent when not required."},
		{"closePosition with quantity", long, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&closePosition=true&quantity=0.010", -1106, "Parameter 'quantity' sent when not required."},
		{"positionSide missing in hedge mode (order)", hedge, "POST", "/fapi/v1/order",
			open, -4061, "Order's position side does not match user's setting."},
		{"positionSide BOTH in hedge mode (order)", hedge, "POST", "/fapi/v1/order",
			open + "&positionSide=BOTH", -4061, "Order's position side does not match user's setting."},
		{"positionSide missing in hedge mode (algo)", hedge, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&closePosition=true", -4061, "Order's position side does not match user's setting."},
		{"positionSide LONG in one-way mode (order)", nil, "POST", "/fapi/v1/order",
			open + "&positionSide=LONG", -4061, "Order's position side does not match user's setting."},
		{"positionSide SHORT in one-way mode (algo)", long, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&closePosition=true&positionSide=SHORT", -4061, "Order's position side does not match user's setting."},
		{"positionSide not a side", nil, "POST", "/fapi/v1/order",
			open + "&positionSide=UP", -4060, "Invalid position side."},
		{"reduceOnly in hedge mode (order)", hedge, "POST", "/fapi/v1/order",
			"symbol=BTCUSDT&side=SELL&type=MARKET&quantity=0.010&positionSide=LONG&reduceOnly=true", -1106, "Parameter 'reduceonly' sent when not required."},
		{"reduceOnly=false in hedge mode (order)", hedge, "POST", "/fapi/v1/order",
			open + "&positionSide=LONG&reduceOnly=false", -1106, "Parameter 'reduceonly' sent when not required."},
		{"reduceOnly in hedge mode (algo)", hedge, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&quantity=0.010&positionSide=LONG&reduceOnly=true", -1106, "Parameter 'reduceonly' sent when not required."},
		{"client order ID with illegal characters (spot)", nil, "POST", "/api/v3/order",
			spotOrder + "&newClientOrderId=has%20space", -1100, `Illegal characters found in parameter 'newClientOrderId'; legal range is '^[\.A-Z\:/a-z0-9_-]{1,36}$'.`},
		{"client order ID too long (spot)", nil, "POST", "/api/v3/order",
			spotOrder + "&newClientOrderId=" + strings.Repeat("a", 37), -1100, `Illegal characters found in parameter 'newClientOrderId'; legal range is '^[\.A-Z\:/a-z0-9_-]{1,36}$'.`},
		{"client order ID with illegal characters (futures)", nil, "POST", "/fapi/v1/order",
			open + "&newClientOrderId=sg%2B1", -1100, `Illegal characters found in parameter 'newClientOrderId'; legal range is '^[\.A-Z\:/a-z0-9_-]{1,36}$'.`},
		{"client order ID too long (futures)", nil, "POST", "/fapi/v1/order",
			open + "&newClientOrderId=" + strings.Repeat("a", 37), -4015, "Client order id length should not be more than 36 chars"},
		{"client algo ID with illegal characters", long, "POST", "/fapi/v1/algoOrder",
			stop + "&type=STOP_MARKET&closePosition=true&clientAlgoId=sg%231", -1100, `Illegal characters found in parameter 'clientAlgoId'; legal range is '^[\.A-Z\:/a-z0-9_-]{1,36}$'.`},
		{"reduceOnly on spot (not a spot parameter)", nil, "POST", "/api/v3/order",
			spotOrder + "&reduceOnly=true", -1104, "Not all sent parameters were read; read '7' parameter(s) but was sent '8'."},
		{"positionSide on spot (not a spot parameter)", nil, "POST", "/api/v3/order",
			spotOrder + "&positionSide=LONG", -1104, "Not all sent parameters were read; read '7' parameter(s) but was sent '8'."},
		{"unknown parameter (futures order)", nil, "POST", "/fapi/v1/order",
			open + "&leverage=10", -1104, "Not all sent parameters were read; read '7' parameter(s) but was sent '8'."},
		{"unknown parameter (read)", nil, "GET", "/fapi/v1/positionSide/dual",
			"symbol=BTCUSDT", -1104, "Not all sent parameters were read; read '3' parameter(s) but was sent '4'."},
		{"quantity off the step (spot LOT_SIZE)", nil, "POST", "/api/v3/order",
			"symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.000105", -1013, "Filter failure: LOT_SIZE"},
		// The fake's futures steps are powers of ten (as Binance's USDⓈ-M steps are), so an
		// amount off the step has more decimals than the symbol's quantityPrecision.
		{"quantity off the step (futures)", nil, "POST", "/fapi/v1/order",
			"symbol=DOGEUSDT&side=BUY&type=MARKET&quantity=100.5", -1111, "Precision is over the maximum defined for this asset."},
		{"price off the tick (spot PRICE_FILTER)", nil, "POST", "/api/v3/order",
			"symbol=BTCUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.001&price=40000.005", -1013, "Filter failure: PRICE_FILTER"},
		{"price off the tick (futures)", nil, "POST", "/fapi/v1/order",
			"symbol=BTCUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.010&price=40000.05", -4014, "Price not increased by tick size."},
		{"trigger price off the tick (algo)", long, "POST", "/fapi/v1/algoOrder",
			"algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&triggerPrice=45000.05&type=STOP_MARKET&closePosition=true", -4014, "Price not increased by tick size."},
		{"price on a spot market order", nil, "POST", "/api/v3/order",
			spotOrder + "&price=50000", -1106, "Parameter 'price' sent when not required."},
		{"timeInForce on a spot market order", nil, "POST", "/api/v3/order",
			spotOrder + "&timeInForce=GTC", -1106, "Parameter 'timeInForce' sent when not required."},
		{"stopPrice on a spot limit order", nil, "POST", "/api/v3/order",
			"symbol=BTCUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.001&price=40000&stopPrice=39000", -1106, "Parameter 'stopPrice' sent when not required."},
		{"conditional type on the regular futures endpoint", nil, "POST", "/fapi/v1/order",
			"symbol=BTCUSDT&side=SELL&type=STOP_MARKET&quantity=0.010&stopPrice=45000", -4120,
			"Order type not supported for this endpoint. Please use the Algo Order API endpoints instead."},
		{"position mode change with a position open", long, "POST", "/fapi/v1/positionSide/dual",
			"dualSidePosition=true", -4068, "Position side cannot be changed if there exists position."},
		{"position mode change with an order open", func(s *binancefake.Server) {
			if a := signedSend(t, s, "POST", "/fapi/v1/order", "symbol=BTCUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.010&price=40000"); a.status != 200 {
				t.Fatalf("resting order: %+v", a)
			}
		}, "POST", "/fapi/v1/positionSide/dual", "dualSidePosition=true", -4067, "Position side cannot be changed if there exists open orders."},
		{"position mode change to the mode in force", nil, "POST", "/fapi/v1/positionSide/dual",
			"dualSidePosition=false", -4059, "No need to change position side."},
		{"hedge exit larger than the position", func(s *binancefake.Server) {
			s.SetHedgeMode(true)
			if a := signedSend(t, s, "POST", "/fapi/v1/order", open+"&positionSide=LONG"); a.status != 200 {
				t.Fatalf("opening a long: %+v", a)
			}
		}, "POST", "/fapi/v1/order", "symbol=BTCUSDT&side=SELL&type=MARKET&quantity=0.020&positionSide=LONG", -2022, "ReduceOnly Order is rejected."},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			s := binancefake.New()
			defer s.Close()
			if r.setup != nil {
				r.setup(s)
			}
			a := signedSend(t, s, r.method, r.path, r.params)
			if a.status != http.StatusBadRequest {
				t.Fatalf("HTTP %d %s, want 400", a.status, a.body)
			}
			code, msg := refusal(t, a)
			if code != r.code || msg != r.msg {
				t.Fatalf("refused with %d %q, want %d %q", code, msg, r.code, r.msg)
			}
		})
	}
}

// The requests the rules refuse are accepted once corrected, so that each row tests its rule
// and not something else about the request.
func TestRulesCorrected(t *testing.T) {
	s := binancefake.New()
	defer s.Close()
	ok := func(method, path, params string) {
		t.Helper()
		if a := signedSend(t, s, method, path, params); a.status != 200 {
			t.Fatalf("%s %s %s: %+v", method, path, params, a)
		}
	}
	ok("POST", "/fapi/v1/order", "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.010&positionSide=BOTH")
	ok("POST", "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&triggerPrice=45000&type=STOP&price=44900&timeInForce=GTC&quantity=0.010&reduceOnly=true")
	ok("POST", "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&triggerPrice=45000&type=STOP_MARKET&closePosition=true")
	ok("POST", "/fapi/v1/order", "symbol=BTCUSDT&side=SELL&type=MARKET&quantity=0.010&reduceOnly=true")
	ok("POST", "/api/v3/order", "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.001&newClientOrderId="+strings.Repeat("a", 36))
	ok("POST", "/fapi/v1/order", "symbol=DOGEUSDT&side=BUY&type=MARKET&quantity=100&newClientOrderId=a.B:c/d_e-f")
	ok("GET", "/fapi/v1/positionSide/dual", "")
	// No position and no open order: the mode can change, and hedge orders name their side.
	s2 := binancefake.New()
	defer s2.Close()
	if a := signedSend(t, s2, "POST", "/fapi/v1/positionSide/dual", "dualSidePosition=true"); a.status != 200 || !s2.HedgeMode() {
		t.Fatalf("switch to hedge: %+v", a)
	}
	for _, p := range []string{
		"symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.010&positionSide=LONG",
		"symbol=BTCUSDT&side=SELL&type=MARKET&quantity=0.020&positionSide=SHORT",
		"symbol=BTCUSDT&side=SELL&type=MARKET&quantity=0.004&positionSide=LONG",
	} {
		if a := signedSend(t, s2, "POST", "/fapi/v1/order", p); a.status != 200 {
			t.Fatalf("%s: %+v", p, a)
		}
	}
	long, _ := s2.SidePosition("BTCUSDT", "LONG")
	short, _ := s2.SidePosition("BTCUSDT", "SHORT")
	net, _ := s2.Position("BTCUSDT")
	if long.String() != "0.006" || short.String() != "-0.02" || net.String() != "-0.014" {
		t.Fatalf("long %s short %s net %s", long, short, net)
	}
	a := signedSend(t, s2, "GET", "/fapi/v3/positionRisk", "")
	if a.status != 200 || strings.Count(a.body, `"positionSide"`) != 2 || !strings.Contains(a.body, `"positionAmt":"-0.020"`) {
		t.Fatalf("positionRisk %+v", a)
	}
	a = signedSend(t, s2, "GET", "/fapi/v1/positionSide/dual", "")
	if a.status != 200 || !strings.Contains(a.body, `"dualSidePosition":true`) {
		t.Fatalf("mode %+v", a)
	}
}
