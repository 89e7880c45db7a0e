package httpapi_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
)

// A Number is a JSON number with the decimal's exact text, however many digits, and reads
// back from a number or a string; a nil *Number is null or left out.
func TestNumberIsExact(t *testing.T) {
	for _, text := range []string{"0", "12.5", "-0.00000001", "0.0000000000000000000000000001",
		"123456789012345678901234567890.123456789012345678901234567890", "65000.10"} {
		n := httpapi.Num(decimal.RequireFromString(text))
		b, err := json.Marshal(n)
		if err != nil || string(b) != decimal.RequireFromString(text).String() {
			t.Fatalf("%s: %s %v", text, b, err)
		}
		for _, in := range []string{string(b), strconv.Quote(text)} {
			var back httpapi.Number
			if err := json.Unmarshal([]byte(in), &back); err != nil || !back.Equal(n.Decimal) {
				t.Fatalf("%s read back from %s: %s %v", text, in, back, err)
			}
		}
	}
	type doc struct {
		A httpapi.Number  `json:"a"`
		B *httpapi.Number `json:"b"`
		C *httpapi.Number `json:"c,omitempty"`
		D httpapi.Number  `json:"d,omitzero"`
		E decimal.Decimal `json:"e"`
	}
	b, _ := json.Marshal(doc{A: httpapi.Num(decimal.New(15, -1)), B: httpapi.NumOrNil(nil), C: httpapi.NumPtr(decimal.New(2, 0)),
		E: decimal.New(15, -1)})
	// A plain decimal is a string: no process-wide switch makes it a number.
	if string(b) != `{"a":1.5,"b":null,"c":2,"e":"1.5"}` {
		t.Fatalf("%s", b)
	}
}

// decodeOnly are the struct types (file and type name; "" for a file's anonymous
// structs) that hold a plain decimal under a json tag, and why that is right: nothing
// encodes them as JSON.
var decodeOnly = map[string]string{
	// A day's aggregate writes itself (Day.MarshalJSON, an array of exact numbers); Path is
	// only ever encoded inside it.
	"runtime/analytics/day.go Path":           "Day.MarshalJSON writes it",
	"runtime/analytics/day.go Day":            "Day.MarshalJSON writes it",
	"runtime/marketdata/marketdata.go Candle": "Candle.MarshalJSON writes exact numbers",
	"runtime/marketdata/binance.go ":          "a Binance answer, decoded only",
	"runtime/marketdata/okx.go ":              "an OKX answer, decoded only",
	"runtime/marketdata/bybit.go ":            "a Bybit answer, decoded only",
}

// Every struct field that JSON encodes with a decimal holds an httpapi.Number: outside the
// decode-only fields above, no field of a non-test file whose json tag is not "-" has type
// decimal.Decimal (nor a pointer, slice or map of it). A field that was a JSON number stays
// one when it is added or moved, without a package-wide switch to rely on.
func TestDecimalFieldsInJSONAreNumbers(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			typeName := ""
			for _, d := range f.Decls {
				if d.Pos() <= st.Pos() && st.End() <= d.End() {
					if g, ok := d.(*ast.GenDecl); ok {
						for _, sp := range g.Specs {
							if ts, ok := sp.(*ast.TypeSpec); ok && ts.Type == ast.Expr(st) {
								typeName = ts.Name.Name
							}
						}
					}
				}
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil || !mentionsDecimal(field.Type) {
					continue
				}
				tag, _ := strconv.Unquote(field.Tag.Value)
				name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				if name == "-" || reflect.StructTag(tag).Get("json") == "" {
					continue
				}
				key := filepath.ToSlash(rel) + " " + typeName
				if _, ok := decodeOnly[key]; ok {
					continue
				}
				if _, ok := decodeOnly[filepath.ToSlash(rel)+" "]; ok {
					continue
				}
				bad = append(bad, fset.Position(field.Pos()).String()+" "+typeName+"."+name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("decimal.Decimal fields JSON encodes as strings (use httpapi.Number):\n%s", strings.Join(bad, "\n"))
	}
}

// mentionsDecimal reports whether a field's type is decimal.Decimal, or a pointer, slice,
// array or map (value) of it.
func mentionsDecimal(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "decimal" && x.Sel.Name == "Decimal"
	case *ast.StarExpr:
		return mentionsDecimal(x.X)
	case *ast.ArrayType:
		return mentionsDecimal(x.Elt)
	case *ast.MapType:
		return mentionsDecimal(x.Value)
	}
	return false
}
