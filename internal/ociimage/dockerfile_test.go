package ociimage_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/ociimage"
)

// The Dockerfile and the Go builder describe the same images; these tests read the
// Dockerfile (a small reader for the instructions it uses: no Dockerfile parser is among
// the project's modules) and compare what each target sets with what Assemble sets.

type instruction struct {
	cmd  string // upper case
	args string
}

type stage struct {
	from   string
	instrs []instruction
}

// parseDockerfile returns the stages by name and the global ARG defaults. Continuation
// lines are joined and comments dropped, as Docker does.
func parseDockerfile(src string) (map[string]*stage, map[string]string) {
	stages, globals := map[string]*stage{}, map[string]string{}
	var cur *stage
	var line string
	for _, l := range strings.Split(src, "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line += strings.TrimSuffix(l, "\\")
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(line+l), " ")
		line = ""
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			if strings.HasPrefix(f[0], "--platform") {
				f = f[1:]
			}
			cur = &stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stages[f[2]] = cur
			}
		case cur == nil && in.cmd == "ARG":
			for k, v := range pairs(in.args) {
				globals[k] = v
			}
		case cur != nil:
			cur.instrs = append(cur.instrs, in)
		}
	}
	return stages, globals
}

// pairs reads `k=v k2="v 2"` (LABEL, ENV, ARG); a bare key has an empty value.
func pairs(s string) map[string]string {
	out := map[string]string{}
	var words []string
	var w strings.Builder
	quoted := false
	for _, r := range s + " " {
		switch {
		case r == '"':
			quoted = !quoted
		case (r == ' ' || r == '\t') && !quoted:
			if w.Len() > 0 {
				words = append(words, w.String())
				w.Reset()
			}
		default:
			w.WriteRune(r)
		}
	}
	for _, word := range words {
		k, v, _ := strings.Cut(word, "=")
		out[k] = v
	}
	return out
}

// targetConfig is what a Dockerfile target sets in its image configuration.
type targetConfig struct {
	User, WorkDir string
	Entrypoint    []string
	Env           []string
	Labels        map[string]string
	Copies        []string // COPY arguments, in order
}

// resolve follows target's FROM chain and applies its stages' instructions with buildArgs.
func resolve(stages map[string]*stage, target string, buildArgs map[string]string) (targetConfig, error) {
	var chain []*stage
	for name := target; stages[name] != nil; name = stages[name].from {
		chain = append([]*stage{stages[name]}, chain...)
	}
	if len(chain) == 0 {
		return targetConfig{}, fmt.Errorf("no stage %q", target)
	}
	c := targetConfig{Labels: map[string]string{}}
	args := map[string]string{}
	expand := func(s string) string { return os.Expand(s, func(k string) string { return args[k] }) }
	for _, st := range chain {
		for _, in := range st.instrs {
			switch in.cmd {
			case "ARG":
				for k, v := range pairs(in.args) {
					if a, ok := buildArgs[k]; ok {
						v = a
					}
					args[k] = v
				}
			case "ENV":
				for _, kv := range strings.Fields(in.args) {
					c.Env = append(c.Env, expand(kv))
				}
			case "LABEL":
				for k, v := range pairs(in.args) {
					c.Labels[k] = expand(v)
				}
			case "USER":
				c.User = expand(in.args)
			case "WORKDIR":
				c.WorkDir = expand(in.args)
			case "COPY":
				c.Copies = append(c.Copies, in.args)
			case "ENTRYPOINT":
				if err := json.Unmarshal([]byte(in.args), &c.Entrypoint); err != nil {
					return c, fmt.Errorf("%s: ENTRYPOINT is not exec form: %w", target, err)
				}
			}
		}
	}
	return c, nil
}

// mismatches lists where the Dockerfile src disagrees with the Go builder.
func mismatches(src string) []string {
	const version, revision = "v9.8.7", "feedface"
	stages, _ := parseDockerfile(src)
	var out []string
	for _, im := range ociimage.Images {
		c, err := resolve(stages, im.Name, map[string]string{"VERSION": version, "REVISION": revision})
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		want := targetConfig{
			User:       ociimage.User,
			WorkDir:    ociimage.WorkDir,
			Entrypoint: ociimage.Entrypoint(im.Name),
			Env:        ociimage.Env,
			Labels:     ociimage.Labels(im, version, revision),
			Copies:     []string{"--from=build /rootfs/ /", "--from=build /out/" + im.Name + " " + ociimage.Entrypoint(im.Name)[0]},
		}
		if !reflect.DeepEqual(c, want) {
			out = append(out, fmt.Sprintf("target %s sets %+v, the builder %+v", im.Name, c, want))
		}
	}
	return append(out, buildStageMismatches(stages)...)
}

// buildStageMismatches checks that the build stage compiles every image's binary with the
// builder's flags and puts the builder's base files in /rootfs.
func buildStageMismatches(stages map[string]*stage) []string {
	build := stages["build"]
	if build == nil {
		return []string{"no build stage"}
	}
	var run string
	for _, in := range build.instrs {
		if in.cmd == "RUN" {
			run += in.args + "\n"
		}
	}
	var names []string
	for _, im := range ociimage.Images {
		names = append(names, im.Name)
	}
	want := []string{"for b in " + strings.Join(names, " ") + "; do", "CGO_ENABLED=0", "/rootfs" + filepath.Dir(ociimage.CABundlePath)}
	for _, f := range ociimage.GoBuildFlags {
		if k, v, ok := strings.Cut(f, "="); ok && strings.Contains(v, " ") {
			f = k + `="` + v + `"`
		}
		want = append(want, " "+f+" ")
	}
	for _, name := range []string{"etc/passwd", "etc/group"} {
		want = append(want, " build/rootfs/"+name+" ")
	}
	var out []string
	for _, w := range want {
		if !strings.Contains(run, w) {
			out = append(out, fmt.Sprintf("the build stage's RUN lacks %q", w))
		}
	}
	return out
}

func readDockerfile(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(moduleRoot(t), "build", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func TestDockerfileAgreesWithTheBuilder(t *testing.T) {
	for _, m := range mismatches(readDockerfile(t)) {
		t.Error(m)
	}
	rootfs, err := os.ReadDir(filepath.Join(moduleRoot(t), "build", "rootfs", "etc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rootfs) != 2 {
		t.Errorf("build/rootfs/etc holds %d files; the Dockerfile copies passwd and group only", len(rootfs))
	}
}

func TestDockerfileDriftIsReported(t *testing.T) {
	src := readDockerfile(t)
	for _, change := range [][2]string{
		{"USER 65532:65532", "USER 1000:1000"},
		{`ENTRYPOINT ["/usr/local/bin/executor"]`, `ENTRYPOINT ["/executor"]`},
		{`org.opencontainers.image.title="mcpd"`, `org.opencontainers.image.title="mcp"`},
		{`org.opencontainers.image.revision="${REVISION}"`, `org.opencontainers.image.revision="main"`},
		{"SSL_CERT_FILE=", "SSL_CERT_DIR="},
		{"WORKDIR /\n", "WORKDIR /home/nonroot\n"},
		{"-trimpath ", ""},
		{"CGO_ENABLED=0", "CGO_ENABLED=1"},
		{" queuectl; do", "; do"},
		{"FROM base AS authd", "FROM base AS auth"},
	} {
		if !strings.Contains(src, change[0]) {
			t.Fatalf("the Dockerfile has no %q to change", change[0])
		}
		if m := mismatches(strings.Replace(src, change[0], change[1], 1)); len(m) == 0 {
			t.Errorf("changing %q to %q goes unnoticed", change[0], change[1])
		}
	}
}
