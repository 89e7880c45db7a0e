package readapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	vErrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/webhookd/readapi"
)

// The OpenAPI document is written by hand beside the code (openapi.json). These tests keep
// it true: every route the real routers serve is documented and every documented route is
// served, the document is valid OpenAPI 3.1, its code lists agree with runtime/errs, and
// real responses of the real routers validate against it (openapi_responses_test.go).

// notREST are the routes the document leaves out on purpose, with the reason.
var notREST = map[string]string{
	"GET /healthz": "probe for the kubelet, not part of the API",
	"GET /readyz":  "probe for the kubelet, not part of the API",
	"OPTIONS /*":   "authd's CORS preflight answer for the machine endpoints, not an operation",

	"GET /login":   "HTML page (dashboard login)",
	"POST /login":  "HTML form (dashboard login)",
	"GET /logout":  "HTML page",
	"POST /logout": "HTML form",

	"GET /oauth/consent":  "HTML page of the authorization flow",
	"POST /oauth/consent": "HTML form of the authorization flow",
}

// notRESTPrefixes are whole route families the document leaves out, with the reason: the
// dashboard's pages and forms, its static files, and its internal API, which the interface
// states is not for external use (automation goes through webhooks and MCP).
var notRESTPrefixes = map[string]string{
	"/dashboard":      "HTML pages and forms of the dashboard",
	"/static/":        "the dashboard's static files",
	"/api/dashboard/": "the dashboard's internal API (session cookie and CSRF token only, not public)",
}

// excluded reports whether route r ("METHOD /path") is left out of the document on purpose.
func excluded(r string) bool {
	if _, ok := notREST[r]; ok {
		return true
	}
	_, path, _ := strings.Cut(r, " ")
	for p := range notRESTPrefixes {
		base := strings.TrimSuffix(p, "/")
		if path == base || strings.HasPrefix(path, base+"/") {
			return true
		}
	}
	return false
}

// openAPIDoc is the document as plain JSON, for the checks that only need its structure.
type openAPIDoc struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

// operation is an operation's responses, each with the code enum of its body, if any.
type operation struct {
	Responses map[string]json.RawMessage `json:"responses"`
}

func loadDocJSON(t *testing.T) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(servedDocument(t), &d); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	return d
}

// servedDocument is the document as GET /api/openapi.json serves it.
func servedDocument(t *testing.T) []byte {
	t.Helper()
	f := newFixture(t)
	r := f.get(t, readapi.OpenAPIPath)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s", readapi.OpenAPIPath, r.status, r.header.Get("Content-Type"))
	}
	return r.body
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// documentedRoutes are the document's operations as "METHOD /path".
func (d openAPIDoc) documentedRoutes() map[string]bool {
	out := map[string]bool{}
	for p, item := range d.Paths {
		for m := range item {
			if slices.Contains(httpMethods, m) {
				out[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	return out
}

// servedRoutes walks a real router: "METHOD /path" of every route it registered.
func servedRoutes(t *testing.T, h http.Handler) map[string]bool {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("the handler is a %T, not a chi router", h)
	}
	out := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenAPIRoutesAgreeWithRouters(t *testing.T) {
	s := newSurface(t)
	served := servedRoutes(t, s.f.handler)
	for r := range servedRoutes(t, s.authd.Handler()) {
		if served[r] && !strings.HasSuffix(r, "/healthz") && !strings.HasSuffix(r, "/readyz") {
			t.Errorf("%s is served by both webhookd and authd: the Ingress can send it to only one", r)
		}
		served[r] = true
	}
	documented := loadDocJSON(t).documentedRoutes()

	var missing, stale, unused []string
	for r := range served {
		if !excluded(r) && !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			stale = append(stale, r)
		}
	}
	for r := range documented {
		if excluded(r) {
			t.Errorf("%s is both documented and excluded", r)
		}
	}
	for r := range notREST {
		if !served[r] {
			unused = append(unused, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	sort.Strings(unused)
	for _, r := range missing {
		t.Errorf("route %s is served but not in openapi.json", r)
	}
	for _, r := range stale {
		t.Errorf("openapi.json documents %s, which no router serves", r)
	}
	for _, r := range unused {
		t.Errorf("exclusion %s names a route no router serves: drop it", r)
	}
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(servedDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("the document does not build: %v", err)
	}
	v, verrs := validator.NewValidator(doc)
	if len(verrs) > 0 {
		t.Fatalf("validator: %v", verrs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		reportInvalid(t, "the document", verrs)
	}
	// Every $ref resolves and every operation names its ID once.
	ids := map[string]string{}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + path
			if op.OperationId == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[op.OperationId]; dup {
				t.Errorf("operationId %s of %s is %s's too", op.OperationId, where, other)
			}
			ids[op.OperationId] = where
			if op.Responses == nil || op.Responses.Codes.Len() == 0 {
				t.Errorf("%s documents no response", where)
			}
		}
	}
	if model.Index == nil {
		t.Fatal("the model has no index")
	}
	for _, err := range model.Index.GetReferenceIndexErrors() {
		t.Errorf("reference: %v", err)
	}
	if len(model.Index.GetAllSequencedReferences()) == 0 {
		t.Error("the index found no $ref: the reference check checked nothing")
	}
}

// docCodes are the code enums a response of the document lists: the failure body's code
// (allOf with Failure) or an OAuth error's error.
func docCodes(t *testing.T, raw json.RawMessage, components map[string]json.RawMessage) []string {
	t.Helper()
	var resp struct {
		Ref     string `json:"$ref"`
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Ref != "" {
		return docCodes(t, components[strings.TrimPrefix(resp.Ref, "#/components/responses/")], components)
	}
	var out []string
	var collect func(json.RawMessage)
	collect = func(s json.RawMessage) {
		var sch struct {
			AllOf      []json.RawMessage `json:"allOf"`
			OneOf      []json.RawMessage `json:"oneOf"`
			Properties map[string]struct {
				Enum  []string `json:"enum"`
				Const string   `json:"const"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(s, &sch)
		for _, sub := range append(sch.AllOf, sch.OneOf...) {
			collect(sub)
		}
		for _, name := range []string{"code", "error"} {
			p := sch.Properties[name]
			out = append(out, p.Enum...)
			if p.Const != "" {
				out = append(out, p.Const)
			}
		}
	}
	for _, c := range resp.Content {
		collect(c.Schema)
	}
	return out
}

// statusOverrides are the codes answered with another status than errs gives them:
// webhookd's body over 64 KiB (INVALID_JSON, 413), authd's Redis failures (INTERNAL_ERROR,
// 503), and the HTTPS rule of both daemons, which is not an errs code.
var statusOverrides = map[string]int{"413 INVALID_JSON": 413, "503 INTERNAL_ERROR": 503, "403 HTTPS_REQUIRED": 403}

// webhookCodes are the codes the webhook endpoint can answer: every code but those of the
// read API, of authentication by token (the webhook ID is its credential), of the
// Strategy Lab's tier check, of bot management (fleet) and of connected apps' rules.
func webhookCodes() map[errs.Code]bool {
	out := map[errs.Code]bool{}
	for _, c := range errs.Codes() {
		switch c {
		case errs.InvalidParameter, errs.NotFound, errs.Unauthorized, errs.TierNotAllowed, errs.ManagedByGitOps, errs.InsufficientScope,
			errs.PolicyLimit:
		default:
			out[c] = true
		}
	}
	return out
}

func TestOpenAPICodesHaveTheirStatus(t *testing.T) {
	var full struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(servedDocument(t), &full); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range errs.Codes() {
		known[string(c)] = true
	}
	for path, item := range full.Paths {
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			listed := map[errs.Code]string{}
			for status, resp := range op.Responses {
				for _, code := range docCodes(t, resp, full.Components.Responses) {
					if code == strings.ToUpper(code) { // a service code; OAuth errors are lower case
						if _, over := statusOverrides[status+" "+code]; !over {
							if !known[code] {
								t.Errorf("%s %s %s lists %s, which runtime/errs does not know", method, path, status, code)
							} else if want := errs.Code(code).HTTPStatus(); fmt.Sprint(want) != status {
								t.Errorf("%s %s lists %s under %s; runtime/errs answers it with %d", method, path, code, status, want)
							}
						}
					}
					listed[errs.Code(code)] = status
				}
			}
			if path != "/api/webhooks/trade/{webhookId}" {
				continue
			}
			for c := range webhookCodes() {
				if _, ok := listed[c]; !ok {
					t.Errorf("the webhook can answer %s (status %d) but the document does not list it", c, c.HTTPStatus())
				}
			}
		}
	}
}

// validatedRequest is a request as the validator reads it: its body readable again.
func validatedRequest(t *testing.T, method, rawURL string, body []byte) *http.Request {
	t.Helper()
	req := httptest.NewRequest(method, rawURL, bytes.NewReader(body))
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	req.URL = u
	return req
}

// readAll reads a response's body and leaves it readable again.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// loopback is the trusted proxy of the surfaces' servers.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// jsonField is a top-level string field of a JSON object body.
func jsonField(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	s, _ := m[name].(string)
	return s
}

// reportInvalid fails the test with each validation error of what.
func reportInvalid(t *testing.T, what string, verrs []*vErrors.ValidationError) {
	t.Helper()
	for _, e := range verrs {
		t.Errorf("%s: %s: %s", what, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  at %s (%s): %s", se.FieldPath, se.KeywordLocation, se.Reason)
		}
	}
}

// TestOpenAPICheckerCatchesDisagreement shows the checks above can fail: answers that
// disagree with the document in each way they look at are refused, and so is a broken
// document.
func TestOpenAPICheckerCatchesDisagreement(t *testing.T) {
	raw := servedDocument(t)
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, verrs := validator.NewValidator(doc)
	if len(verrs) > 0 {
		t.Fatal(verrs)
	}
	answer := func(status int, header http.Header, body string) *http.Response {
		if header == nil {
			header = http.Header{}
		}
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/json")
		}
		return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(body))}
	}
	risk := "https://sigops.test/api/botsvc/bots/b1/risk"
	hook := "https://sigops.test/api/webhooks/trade/6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
	metrics := `{"botId":"b1","currentExposure":0.25,"maxExposureAllowed":1,"dailyLossLimit":0,"dailyLossUsed":0,` +
		`"consecutiveLosses":0,"maxConsecutiveLosses":0,"riskScore":2,"riskLevel":"low"}`
	for _, tc := range []struct {
		name, method, url string
		resp              *http.Response
		ok                bool
	}{
		{"risk metrics as served", "GET", risk, answer(200, nil, `{"success":true,"data":`+metrics+`}`), true},
		{"a figure missing", "GET", risk, answer(200, nil, `{"success":true,"data":{"botId":"b1"}}`), false},
		{"a decimal as a string", "GET", risk, answer(200, nil, `{"success":true,"data":`+strings.Replace(metrics, "0.25", `"0.25"`, 1)+`}`), false},
		{"a risk level out of the enum", "GET", risk, answer(200, nil, `{"success":true,"data":`+strings.Replace(metrics, `"low"`, `"calm"`, 1)+`}`), false},
		{"an undocumented status", "GET", risk, answer(418, nil, `{}`), false},
		{"another content type", "GET", risk, answer(200, http.Header{"Content-Type": {"text/plain"}}, `x`), false},
		{"429 without Retry-After", "GET", risk, answer(429, nil, `{"success":false,"error":"slow down","code":"RATE_LIMITED","timestamp":1}`), false},
		{"429 with Retry-After", "GET", risk, answer(429, http.Header{"Retry-After": {"3"}}, `{"success":false,"error":"slow down","code":"RATE_LIMITED","timestamp":1}`), true},
		{"401 without its challenge", "GET", risk, answer(401, nil, `{"success":false,"error":"no","code":"UNAUTHORIZED","timestamp":1}`), false},
		{"a webhook code under the wrong status", "POST", hook, answer(400, nil, `{"success":false,"error":"x","code":"BOT_PAUSED","timestamp":1}`), false},
		{"a failure without its code", "POST", hook, answer(400, nil, `{"success":false,"error":"x","timestamp":1}`), false},
		{"a failure with a field of nobody's", "POST", hook, answer(404, nil, `{"success":false,"error":"x","timestamp":1,"trace":"y"}`), false},
		{"an OAuth error out of the list", "POST", "https://sigops.test/api/oauth/token", answer(400, nil, `{"error":"invalid_token"}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.url, nil)
			ok, verrs := v.ValidateHttpResponse(req, tc.resp)
			if ok != tc.ok {
				t.Errorf("validated %v, want %v: %v", ok, tc.ok, verrs)
			}
		})
	}

	broken := strings.Replace(string(raw), `"openapi": "3.1.0"`, `"openapi": "3.1.0", "x-broken": 1, "webhooks": 7`, 1)
	bdoc, err := libopenapi.NewDocument([]byte(broken))
	if err != nil {
		t.Fatal(err)
	}
	bv, _ := validator.NewValidator(bdoc)
	if bv == nil {
		return // refused while building: refused all the same
	}
	if ok, _ := bv.ValidateDocument(); ok {
		t.Error("a document whose webhooks is a number validated")
	}
}
