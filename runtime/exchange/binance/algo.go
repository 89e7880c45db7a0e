package binance

// Conditional futures orders (stop-loss, take-profit) through the USDⓈ-M Algo Order API.
//
// Since December 2025 Binance refuses STOP_MARKET, TAKE_PROFIT_MARKET, STOP, TAKE_PROFIT
// and TRAILING_STOP_MARKET on POST /fapi/v1/order with -4120 "Order type not supported for
// this endpoint. Please use the Algo Order API endpoints instead." and takes them on
// /fapi/v1/algoOrder (algoType CONDITIONAL, triggerPrice, clientAlgoId). go-binance v2.8.7,
// the latest release, has no service for that endpoint (its "futures algo" services are
// the VP/TWAP execution algorithms under /sapi/v1/algo/futures), so this file signs those
// three requests itself: HMAC-SHA256 of the exact payload with the API secret, the key in
// X-MBX-APIKEY, timestamp and recvWindow like go-binance's. Replace it with go-binance's
// service once a release has one.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/adshao/go-binance/v2/common"
)

const algoPath = "/fapi/v1/algoOrder"

// algoOrder is an order of the Algo Order API (new, query and cancel answers).
type algoOrder struct {
	AlgoID        int64  `json:"algoId"`
	ClientAlgoID  string `json:"clientAlgoId"`
	AlgoType      string `json:"algoType"`
	OrderType     string `json:"orderType"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"`
	Quantity      string `json:"quantity"`
	AlgoStatus    string `json:"algoStatus"`
	ActualOrderID flexID `json:"actualOrderId"`
	TriggerPrice  string `json:"triggerPrice"`
	Price         string `json:"price"`
	ReduceOnly    bool   `json:"reduceOnly"`
	ClosePosition bool   `json:"closePosition"`
	CreateTime    int64  `json:"createTime"`
	UpdateTime    int64  `json:"updateTime"`
}

// flexID reads an ID Binance sends as a number, a string, "" or null.
type flexID string

func (f *flexID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(bytes.TrimSpace(b)), `"`)
	if s == "null" {
		s = ""
	}
	*f = flexID(s)
	return nil
}

// actual is the ID of the order a triggered algo order placed, or 0.
func (f flexID) actual() int64 {
	n, err := strconv.ParseInt(string(f), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// signedFutures makes one signed USDⓈ-M request. POST sends the payload as a form body,
// GET and DELETE as the query string; either way the signature is the HMAC of exactly the
// bytes sent before it. Errors are go-binance's *common.APIError, so that one classifier
// serves both.
func (c *client) signedFutures(ctx context.Context, method, path string, params url.Values, out any) error {
	if params == nil {
		params = url.Values{}
	}
	params.Set("recvWindow", strconv.FormatInt(c.recvWindowMS(), 10))
	params.Set("timestamp", strconv.FormatInt(time.Now().UnixMilli()-offset(c.futURL).Load(), 10))
	payload := params.Encode()
	mac := hmac.New(sha256.New, []byte(c.creds.APISecret))
	mac.Write([]byte(payload))
	payload += "&signature=" + hex.EncodeToString(mac.Sum(nil))
	target := c.futURL + path
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(payload)
	} else {
		target += "?" + payload
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("X-MBX-APIKEY", c.creds.APIKey)
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= http.StatusBadRequest {
		apiErr := &common.APIError{}
		if json.Unmarshal(data, apiErr) != nil || !apiErr.IsValid() {
			apiErr.Response = data
		}
		return apiErr
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// newAlgo places a conditional order.
func (c *client) newAlgo(ctx context.Context, params url.Values) (*algoOrder, *failure) {
	var o algoOrder
	f := c.do(ctx, futuresAPI, "POST "+algoPath, false, func(ctx context.Context) error {
		return c.signedFutures(ctx, http.MethodPost, algoPath, cloneValues(params), &o)
	})
	if f != nil {
		return nil, f
	}
	return &o, nil
}

// getAlgo queries a conditional order by client ID (-2013 when it does not exist).
func (c *client) getAlgo(ctx context.Context, cid string) (*algoOrder, *failure) {
	var o algoOrder
	f := c.do(ctx, futuresAPI, "GET "+algoPath, true, func(ctx context.Context) error {
		return c.signedFutures(ctx, http.MethodGet, algoPath, url.Values{"clientAlgoId": {cid}}, &o)
	})
	if f != nil {
		return nil, f
	}
	return &o, nil
}

// cancelAlgo cancels a conditional order by client ID. (The reference page names the
// parameters algoid/clientalgoid in lower case; the query and new-order pages, and the
// clients in use, spell them clientAlgoId, which is what is sent here.)
func (c *client) cancelAlgo(ctx context.Context, cid string) *failure {
	return c.do(ctx, futuresAPI, "DELETE "+algoPath, true, func(ctx context.Context) error {
		return c.signedFutures(ctx, http.MethodDelete, algoPath, url.Values{"clientAlgoId": {cid}}, nil)
	})
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
