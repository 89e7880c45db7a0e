package binancefake_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

func sign(secret, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(payload))
	return hex.EncodeToString(mac.Sum(nil))
}

type answer struct {
	status int
	code   int
	body   string
}

func send(t *testing.T, s *binancefake.Server, method, path, key, query, body string) answer {
	t.Helper()
	u := s.URL() + path
	if query != "" {
		u += "?" + query
	}
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if key != "" {
		req.Header.Set("X-MBX-APIKEY", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Code int }
	json.Unmarshal(b, &e)
	return answer{resp.StatusCode, e.Code, string(b)}
}

func ts() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// The fake refuses requests as Binance does.
func TestAuthentication(t *testing.T) {
	s := binancefake.New()
	defer s.Close()
	q := "omitZeroBalances=true&recvWindow=5000&timestamp=" + ts()
	good := q + "&signature=" + sign(binancefake.APISecret, q)

	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, good, ""); a.status != 200 {
		t.Fatalf("good request: %+v", a)
	}
	if a := send(t, s, "GET", "/api/v3/account", "", good, ""); a.status != 401 || a.code != -2014 {
		t.Fatalf("no key: %+v", a)
	}
	if a := send(t, s, "GET", "/api/v3/account", "someone-else", good, ""); a.status != 401 || a.code != -2015 {
		t.Fatalf("unknown key: %+v", a)
	}
	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, q+"&signature="+sign("other", q), ""); a.status != 400 || a.code != -1022 {
		t.Fatalf("bad signature: %+v", a)
	}
	// The signature covers the exact bytes: a re-ordered query no longer matches.
	reordered := "recvWindow=5000&omitZeroBalances=true&timestamp=" + strings.SplitN(q, "timestamp=", 2)[1]
	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, reordered+"&signature="+sign(binancefake.APISecret, q), ""); a.code != -1022 {
		t.Fatalf("re-ordered query: %+v", a)
	}
	old := "recvWindow=5000&timestamp=" + strconv.FormatInt(time.Now().Add(-6*time.Second).UnixMilli(), 10)
	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, old+"&signature="+sign(binancefake.APISecret, old), ""); a.code != -1021 {
		t.Fatalf("stale timestamp: %+v", a)
	}
	ahead := "recvWindow=5000&timestamp=" + strconv.FormatInt(time.Now().Add(2*time.Second).UnixMilli(), 10)
	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, ahead+"&signature="+sign(binancefake.APISecret, ahead), ""); a.code != -1021 {
		t.Fatalf("timestamp ahead: %+v", a)
	}
	wide := "recvWindow=70000&timestamp=" + ts()
	if a := send(t, s, "GET", "/api/v3/account", binancefake.APIKey, wide+"&signature="+sign(binancefake.APISecret, wide), ""); a.code != -1131 {
		t.Fatalf("recvWindow: %+v", a)
	}
	// Mixed query string and body: the signature is over query + body.
	query := "symbol=BTCUSDT&side=BUY"
	body := "type=MARKET&quantity=0.001&newClientOrderId=mixed-1&recvWindow=5000&timestamp=" + ts()
	body += "&signature=" + sign(binancefake.APISecret, query+body)
	if a := send(t, s, "POST", "/api/v3/order", binancefake.APIKey, query, body); a.status != 200 || s.Placed("mixed-1") != 1 {
		t.Fatalf("mixed: %+v", a)
	}
	// Trading needs the permission.
	s.SetPermissions(binancefake.Restrictions{EnableReading: true})
	q2 := "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.001&recvWindow=5000&timestamp=" + ts()
	if a := send(t, s, "POST", "/api/v3/order", binancefake.APIKey, q2+"&signature="+sign(binancefake.APISecret, q2), ""); a.status != 401 || a.code != -2015 {
		t.Fatalf("no trade permission: %+v", a)
	}
}

func TestFaultsAndDuplicates(t *testing.T) {
	s := binancefake.New()
	defer s.Close()
	s.FailNext(1, binancefake.RateLimited(3).On("GET", "/api/v3/ticker/price"))
	req, _ := http.NewRequest("GET", s.URL()+"/api/v3/ticker/price?symbol=BTCUSDT", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("429: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if a := send(t, s, "GET", "/api/v3/ticker/price", "", "symbol=BTCUSDT", ""); a.status != 200 || !strings.Contains(a.body, "50000") {
		t.Fatalf("after the fault: %+v", a)
	}
	// A resting order holds its client ID; a filled one does not (as on Binance).
	place := func(cid, typ, extra string) answer {
		q := "symbol=BTCUSDT&side=BUY&type=" + typ + "&quantity=0.001&newClientOrderId=" + cid + extra + "&recvWindow=5000&timestamp=" + ts()
		return send(t, s, "POST", "/api/v3/order", binancefake.APIKey, q+"&signature="+sign(binancefake.APISecret, q), "")
	}
	place("rest-1", "LIMIT", "&price=40000&timeInForce=GTC")
	if a := place("rest-1", "LIMIT", "&price=40000&timeInForce=GTC"); a.code != -2010 || !strings.Contains(a.body, "Duplicate order sent.") {
		t.Fatalf("duplicate: %+v", a)
	}
	place("fill-1", "MARKET", "")
	if a := place("fill-1", "MARKET", ""); a.status != 200 || s.Placed("fill-1") != 2 {
		t.Fatalf("filled ID reused: %+v placed %d", a, s.Placed("fill-1"))
	}
	if n := s.Count("POST", "/api/v3/order"); n != 4 {
		t.Fatalf("%d requests", n)
	}
}
