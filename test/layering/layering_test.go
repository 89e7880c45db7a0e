// Package layering checks the repository's dependency rule: the shared libraries
// (runtime/, internal/, api/) never import a daemon's package (webhookd, authd, mcpd,
// controllers, fleet's callers in cmd/), so that every daemon can be built and reasoned
// about on its own.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// clusterConstructs are what behaves differently on a Redis Cluster: a script, a
// transaction, a pipeline, a multi-key command, the acknowledged writes (sent to each
// slot's master), and server-wide commands run per master.
var clusterConstructs = regexp.MustCompile(`redis\.NewScript|PauseScript\(|\.TxPipelined\(|\.Watch\(ctx|\.Pipelined\(|` +
	`\.Pipeline\(\)|\.TxPipeline\(\)|EvalSha|\.Eval\(|MGet\(|MSet\(|store\.Ack|ForEachMaster|ForEachNode`)

// Every package whose own code uses one of clusterConstructs, and has tests, is in the
// Makefile's CLUSTER_PACKAGES, which `make test` runs a second time on a Redis Cluster; a
// package that no longer does is taken out.
func TestClusterPassCoversScriptedPackages(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CLUSTER_PACKAGES \?= ((?:.*\\\n)*.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no CLUSTER_PACKAGES in the Makefile")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
	covered := func(dir string) bool {
		for _, p := range listed {
			p = strings.TrimPrefix(p, "./")
			if root, ok := strings.CutSuffix(p, "/..."); ok && (dir == root || strings.HasPrefix(dir, root+"/")) || dir == p {
				return true
			}
		}
		return false
	}
	uses := map[string]bool{}
	tested := map[string]bool{}
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if strings.HasSuffix(path, "_test.go") {
			tested[dir] = true
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if clusterConstructs.Match(src) {
			uses[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range uses {
		if tested[dir] && !covered(dir) && !strings.HasPrefix(dir, "test/") {
			t.Errorf("%s sends scripts, transactions, pipelines or multi-key commands and has tests: add it to CLUSTER_PACKAGES", dir)
		}
	}
	for _, p := range listed {
		dir := strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/...")
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("CLUSTER_PACKAGES names %s, which does not exist", p)
		} else if !uses[dir] && !strings.HasSuffix(p, "/...") && !strings.HasPrefix(dir, "test/") {
			t.Errorf("CLUSTER_PACKAGES names %s, whose code sends nothing that differs on a Cluster: take it out", p)
		}
	}
}
