// Package layering checks the repository's dependency rule: the shared libraries
// (runtime/, internal/, api/) never import a daemon's package (webhookd, authd, mcpd,
// controllers, fleet's callers in cmd/), so that every daemon can be built and reasoned
// about on its own.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sigops/sigops/"

// daemons are the packages no shared library may import.
var daemons = []string{"webhookd", "authd", "mcpd", "controllers", "cmd"}

func TestSharedLibrariesImportNoDaemon(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"runtime", "internal", "api"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, d := range daemons {
					if p == module+d || strings.HasPrefix(p, module+d+"/") {
						t.Errorf("%s imports %s: a shared library must not depend on a daemon", path, p)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
