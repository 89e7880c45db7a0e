package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sigops/sigops/internal/ociimage"
)

// moduleRoot is the repository root, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// testImage is a tiny program that links the C library when built with cgo, so a builder
// that forgot CGO_ENABLED=0 gives a binary with an ELF interpreter.
var testImage = ociimage.Image{Name: "static", Package: "./internal/ociimage/testdata/static", Description: "test program"}

func testBuild(t *testing.T) ociimage.Build {
	root := moduleRoot(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\ntest bundle\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ociimage.Build{
		ModuleDir: root,
		RootFS:    filepath.Join(root, "build", "rootfs"),
		CABundle:  ca,
		Arch:      runtime.GOARCH,
		Version:   "v1.2.3",
		Revision:  "0123456789abcdef",
		Created:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestMakeWritesAStaticNonRootImageReproducibly(t *testing.T) {
	b := testBuild(t)
	tag, err := ociimage.Tag("example.test/sigops", testImage, b.Version)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.tar"), filepath.Join(dir, "second.tar")
	d1, err := ociimage.Make(context.Background(), b, testImage, tag, first)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := ociimage.Make(context.Background(), b, testImage, tag, second)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("two builds of the same inputs differ: %s and %s", d1, d2)
	}

	img, err := tarball.ImageFromPath(first, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.Digest(); err != nil || got != d1 {
		t.Fatalf("tarball's image digest %s (%v), Make said %s", got, err, d1)
	}
	checkConfig(t, img, b)
	files := readFiles(t, img, b.Created)
	checkBinary(t, files["usr/local/bin/static"])
	checkBase(t, files, b)
}

func checkConfig(t *testing.T, img v1.Image, b ociimage.Build) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" || c.WorkingDir != "/" {
		t.Errorf("user %q, workdir %q; want 65532:65532 and /", c.User, c.WorkingDir)
	}
	if want := []string{"/usr/local/bin/static"}; !reflect.DeepEqual(c.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", c.Entrypoint, want)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "static",
		"org.opencontainers.image.description": "test program",
		"org.opencontainers.image.source":      "https://github.com/sigops/sigops",
		"org.opencontainers.image.version":     "v1.2.3",
		"org.opencontainers.image.revision":    "0123456789abcdef",
	}
	if !reflect.DeepEqual(c.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", c.Labels, wantLabels)
	}
	if !reflect.DeepEqual(c.Env, ociimage.Env) {
		t.Errorf("env %q, want %q", c.Env, ociimage.Env)
	}
	if cfg.OS != "linux" || cfg.Architecture != b.Arch || !cfg.Created.Time.Equal(b.Created) {
		t.Errorf("os %s, arch %s, created %s; want linux, %s, %s", cfg.OS, cfg.Architecture, cfg.Created.Time, b.Arch, b.Created)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 2 {
		t.Errorf("%d layers (%v), want 2: the base and the binary", len(layers), err)
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// readFiles returns every entry of the image's flattened file system, checking that each is
// root-owned and dated b.Created.
func readFiles(t *testing.T, img v1.Image, created time.Time) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
			t.Errorf("%s: owner %d:%d, mtime %s; want 0:0, %s", h.Name, h.Uid, h.Gid, h.ModTime, created)
		}
		files[h.Name] = entry{h, data}
	}
}

func checkBinary(t *testing.T, bin entry) {
	t.Helper()
	if bin.hdr == nil {
		t.Fatal("no /usr/local/bin/static in the image")
	}
	if bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode != 0o755 {
		t.Errorf("binary: type %c, mode %o; want a regular file, 0755", bin.hdr.Typeflag, bin.hdr.Mode)
	}
	f, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("binary is not ELF: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
}

func checkBase(t *testing.T, files map[string]entry, b ociimage.Build) {
	t.Helper()
	for _, name := range []string{"etc/passwd", "etc/group"} {
		want, err := os.ReadFile(filepath.Join(b.RootFS, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := files[name]; got.hdr == nil || !bytes.Equal(got.data, want) || got.hdr.Mode != 0o644 {
			t.Errorf("/%s missing or not the repository's file with mode 0644", name)
		}
	}
	if !strings.Contains(string(files["etc/passwd"].data), "\nnonroot:x:65532:65532:") {
		t.Error("/etc/passwd has no nonroot user 65532")
	}
	if !strings.Contains(string(files["etc/group"].data), "\nnonroot:x:65532:") {
		t.Error("/etc/group has no nonroot group 65532")
	}
	ca, err := os.ReadFile(b.CABundle)
	if err != nil {
		t.Fatal(err)
	}
	if got := files["etc/ssl/certs/ca-certificates.crt"]; got.hdr == nil || !bytes.Equal(got.data, ca) {
		t.Error("the CA bundle is not at /etc/ssl/certs/ca-certificates.crt")
	}
	for _, dir := range []string{"etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", "usr/local/bin"} {
		if d := files[dir]; d.hdr == nil || d.hdr.Typeflag != tar.TypeDir || d.hdr.Mode != 0o755 {
			t.Errorf("directory /%s missing or not 0755", dir)
		}
	}
}

func TestFindKnowsEveryShippedImage(t *testing.T) {
	for _, name := range []string{"manager", "executor", "webhookd", "authd", "mcpd", "queuectl"} {
		im, ok := ociimage.Find(name)
		if !ok || im.Package != "./cmd/"+name {
			t.Errorf("Find(%q) = %+v, %v", name, im, ok)
		}
		if _, err := os.Stat(filepath.Join(moduleRoot(t), "cmd", name, "main.go")); err != nil {
			t.Errorf("image %s has no main package: %v", name, err)
		}
	}
	if _, ok := ociimage.Find("backtest"); ok {
		t.Error("backtest runs on a user's machine and is not shipped as an image")
	}
}
