package executor

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
)

// decide's input holds data only: no function, interface, channel or unsafe pointer anywhere
// inside its type, so no Redis client, exchange or clock can be handed to it.
func TestDecideInputHoldsNoIO(t *testing.T) {
	var found []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		switch ty.Kind() {
		case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
			found = append(found, path+" ("+ty.String()+")")
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem(), path+"[]")
		case reflect.Map:
			walk(ty.Key(), path+"{key}")
			walk(ty.Elem(), path+"{}")
		case reflect.Struct:
			for i := range ty.NumField() {
				walk(ty.Field(i).Type, path+"."+ty.Field(i).Name)
			}
		}
	}
	walk(reflect.TypeOf(decideIn{}), "decideIn")
	if len(found) > 0 {
		t.Fatalf("decide's input can carry behaviour: %s", strings.Join(found, ", "))
	}
	if ty := reflect.TypeOf(decide); ty.NumIn() != 1 || ty.In(0) != reflect.TypeOf(&decideIn{}) {
		t.Fatalf("decide takes %v", ty)
	}
}

// pureImports are the packages decide and everything it calls in this package may name:
// none of them reaches Redis, the network, a file or the clock.
var pureImports = []string{"encoding/json", "errors", "fmt", "slices", "strings",
	"github.com/shopspring/decimal",
	"github.com/sigops/sigops/runtime/errs", "github.com/sigops/sigops/runtime/exchange",
	"github.com/sigops/sigops/runtime/httpapi", "github.com/sigops/sigops/runtime/order",
	"github.com/sigops/sigops/runtime/position", "github.com/sigops/sigops/runtime/queue",
	"github.com/sigops/sigops/runtime/registry", "github.com/sigops/sigops/runtime/signal"}

// decide, and every function and method of this package it calls (followed through the
// source), name only pure packages, never a context, and never the Executor or a job (which
// hold the clients).
func TestDecideCallsNothingImpure(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	funcs := map[string]*ast.FuncDecl{}
	imports := map[*ast.FuncDecl]map[string]string{} // the file's import name -> path
	for _, f := range files {
		names := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			if strings.Contains(path, "go-redis") {
				name = "redis" // its path ends in its major version
			}
			names[name] = path
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil {
				key = recvType(fd.Recv.List[0].Type) + "." + key
			}
			funcs[key] = fd
			imports[fd] = names
		}
	}
	reached := map[string]bool{}
	queue := []string{"decide"}
	var problems []string
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		fd, ok := funcs[key]
		if !ok || reached[key] {
			continue
		}
		reached[key] = true
		names := imports[fd]
		ast.Inspect(fd, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if n.Name == "Executor" || n.Name == "job" {
					problems = append(problems, key+" names "+n.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					if path, ok := names[x.Name]; ok && x.Obj == nil {
						if !slices.Contains(pureImports, path) {
							problems = append(problems, key+" uses "+path+"."+n.Sel.Name)
						}
						if path == "context" {
							problems = append(problems, key+" takes a context")
						}
					}
					if x.Name == "d" {
						queue = append(queue, "decideIn."+n.Sel.Name)
					}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok {
					queue = append(queue, id.Name)
				}
			}
			return true
		})
	}
	for _, want := range []string{"decide", "decideIn.planEntry", "decideIn.planClose", "decideIn.planManual",
		"decideIn.planCopy", "decideIn.position", "decideIn.openPositions", "decideIn.ticker", "defaultExits"} {
		if !reached[want] {
			t.Errorf("the walk did not reach %s: it no longer follows decide's calls", want)
		}
	}
	if len(problems) > 0 {
		t.Fatalf("decide is not pure:\n%s", strings.Join(problems, "\n"))
	}
}

func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// decideFixture is a futures bot that reverses, with DCA up to 3 levels and default exits,
// holding a long BTC/USDT position at DCA level 1, and nothing known of ETH/USDT.
func decideFixture(t *testing.T, body string) *decideIn {
	t.Helper()
	sig, err := signal.Parse([]byte(body)) // queued as intake normalises it
	if err != nil {
		t.Fatal(err)
	}
	queued, err := json.Marshal(sig)
	if err != nil {
		t.Fatal(err)
	}
	eth := exchange.MarketInfo{Symbol: "ETH/USDT", Base: "ETH", Quote: "USDT", Kind: exchange.Futures,
		TickSize: testkit.D("0.01"), StepSize: testkit.D("0.001")}
	fut := btc
	fut.Kind = exchange.Futures
	return &decideIn{
		env: queue.Envelope{SignalID: "sig-1", BotID: "bot", Source: queue.SourceWebhook, Signal: queued},
		bot: registry.Bot{ID: "bot", Market: "futures", PositionSize: "10%", Leverage: 5, Reversals: true,
			StopLoss: "2%", TakeProfit: "4%", DCA: registry.DCA{Enabled: true, MaxLevels: 3}},
		kind:    exchange.Futures,
		markets: map[string]exchange.MarketInfo{fut.Symbol: fut, eth.Symbol: eth},
		symbols: signal.NewSymbols([]string{fut.Symbol, eth.Symbol}),
		book: &snapshot{positions: map[string]*position.Position{
			"BTC/USDT": held(exchange.Futures, position.Long, 5, "0.1", "6500", "1300", "3.9")}},
		tickers: map[string]decimal.Decimal{},
	}
}

// decide is a pure function of its snapshot: the same input gives the same plan and is left
// as it was; a value it lacks is asked for, never read; given it, the plan follows.
func TestDecideIsAPureFunction(t *testing.T) {
	pct := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(testkit.D(v)), Percent: true} }
	abs := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(testkit.D(v))} }
	for _, tc := range []struct {
		name, body string
		// given is added to the input after the first decision asked for it.
		want    []leg
		missing *missing
		given   func(*decideIn)
		code    errs.Code
	}{
		{name: "DCA add to the long", body: `{"action":"buy","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`,
			want: []leg{{Op: opAdd, Symbol: "BTC/USDT", Side: position.Long, Type: exchange.Market, Size: pct("10"), Leverage: 5, DCALevel: 2}}},
		{name: "sell reverses the long", body: `{"action":"sell","symbol":"BTCUSDT"}`,
			want: []leg{
				{Name: "reverse", Op: opReduce, Symbol: "BTC/USDT", Side: position.Long, Type: exchange.Market, Reason: "reversal"},
				{Op: opOpen, Symbol: "BTC/USDT", Side: position.Short, Type: exchange.Market, Size: pct("10"), Leverage: 5,
					StopLoss: pct("2"), TakeProfit: pct("4")}}},
		{name: "a second buy without dca is refused", body: `{"action":"buy","symbol":"BTCUSDT"}`, code: errs.InvalidAction},
		{name: "ETH: its position is asked for", body: `{"action":"buy","symbol":"ETHUSDT"}`,
			missing: &missing{position: "ETH/USDT"},
			given:   func(d *decideIn) { d.book.positions["ETH/USDT"] = nil },
			want: []leg{{Op: opOpen, Symbol: "ETH/USDT", Side: position.Long, Type: exchange.Market, Size: pct("10"), Leverage: 5,
				StopLoss: pct("2"), TakeProfit: pct("4")}}},
		{name: "an absolute stop-loss asks for the price", body: `{"action":"sell","symbol":"BTCUSDT","stopLoss":"66000"}`,
			missing: &missing{ticker: "BTC/USDT"},
			given:   func(d *decideIn) { d.tickers["BTC/USDT"] = testkit.D("65000") },
			want: []leg{
				{Name: "reverse", Op: opReduce, Symbol: "BTC/USDT", Side: position.Long, Type: exchange.Market, Reason: "reversal"},
				{Op: opOpen, Symbol: "BTC/USDT", Side: position.Short, Type: exchange.Market, Size: pct("10"), Leverage: 5,
					StopLoss: abs("66000"), TakeProfit: pct("4")}}},
		{name: "a close without a symbol asks for the open positions", body: `{"action":"close"}`,
			missing: &missing{members: true},
			given:   func(d *decideIn) { d.book.members, d.book.listed = []string{"BTC/USDT"}, true },
			want: []leg{{Name: "close:BTC/USDT", Op: opReduce, Symbol: "BTC/USDT", Side: position.Long, Type: exchange.Market,
				Reason: reasonSignal}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decideFixture(t, tc.body)
			before := cloneDecideIn(t, in)
			p, err := decide(in)
			if after := cloneDecideIn(t, in); !reflect.DeepEqual(before, after) {
				t.Fatalf("decide changed its input:\n%+v\nto\n%+v", before, after)
			}
			if tc.missing != nil {
				var m *missing
				if !errors.As(err, &m) || *m != *tc.missing {
					t.Fatalf("decide: %v, want it to ask for %+v", err, tc.missing)
				}
				tc.given(in)
				p, err = decide(in)
			}
			if tc.code != "" {
				if e, ok := errs.As(err); !ok || e.Code != tc.code {
					t.Fatalf("decide: %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Compared as stored: the plan's JSON is what a retry follows.
			want, _ := json.Marshal(plan{Legs: tc.want})
			if got, _ := json.Marshal(p); string(got) != string(want) {
				t.Fatalf("plan\n%s\nwant\n%s", got, want)
			}
			again, err := decide(in)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("the same input decided again: %+v %v, first %+v", again, err, p)
			}
		})
	}
}

// cloneDecideIn is a copy of in with its own book and prices (the rest is read only).
func cloneDecideIn(t *testing.T, in *decideIn) decideIn {
	t.Helper()
	cp := *in
	book := *in.book
	book.positions = map[string]*position.Position{}
	for k, p := range in.book.positions {
		if p != nil {
			q := *p
			p = &q
		}
		book.positions[k] = p
	}
	book.members = slices.Clone(in.book.members)
	cp.book = &book
	cp.tickers = map[string]decimal.Decimal{}
	for k, v := range in.tickers {
		cp.tickers[k] = v
	}
	return cp
}
