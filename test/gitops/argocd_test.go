package gitops_test

import (
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// argoHealth runs the Argo CD health script on obj the way Argo CD runs a custom health
// check: a Lua state without the standard libraries but base, table and package, the
// object as the global obj (nested tables, numbers as Lua numbers), and the returned
// table's status and message.
func argoHealth(t *testing.T, obj *unstructured.Unstructured) (status, message string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(repoRoot, "config", "components", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(string(script)); err != nil {
		t.Fatalf("health.lua on %s: %v", obj.GetName(), err)
	}
	hs, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, not a table", l.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// luaValue converts a decoded JSON value into Lua: objects and arrays become tables.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(luaValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetString(key, luaValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}
