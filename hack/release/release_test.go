package main

import (
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/sigops/sigops/internal/ociimage"
	"github.com/sigops/sigops/test/manifests"
)

const version = "v1.4.0"

// root is the repository root, two levels up.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// buildImages writes what `make images VERSION=v` writes, into dir: <name>.tar for every
// shipped image, tagged <repository>/<name>:<v>, assembled as ociimage.Make does but around
// a small file instead of a compiled binary (the release reads tags and digests, not
// programs). It returns each image's digest, taken from the image before it was written.
func buildImages(t *testing.T, dir, repository, v string) map[string]v1.Hash {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := ociimage.Build{ModuleDir: root(t), RootFS: filepath.Join(root(t), "build", "rootfs"), CABundle: ca, Arch: runtime.GOARCH,
		Version: v, Revision: "0123456789abcdef", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	digests := map[string]v1.Hash{}
	for _, im := range ociimage.Images {
		bin := filepath.Join(t.TempDir(), im.Name)
		if err := os.WriteFile(bin, []byte("#!/bin/false "+im.Name+" "+v+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := ociimage.Assemble(b, im, bin)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := ociimage.Tag(repository, im, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := tarball.WriteToFile(filepath.Join(dir, im.Name+".tar"), tag, img); err != nil {
			t.Fatal(err)
		}
		if digests[im.Name], err = img.Digest(); err != nil {
			t.Fatal(err)
		}
	}
	return digests
}

// anyImage is an image reference in a manifest ("image: ..." values and kustomize names).
var anyImage = regexp.MustCompile(`ghcr\.io/sigops/[a-z0-9-]+[^\s"',\]}]*`)

// The release of config/ for v1.4.0: no file it wrote holds ":latest" or a sigops image
// without v1.4.0 and the digest of the image built for it; every daemon's Deployment, built
// with kustomize from the release, runs its image so pinned and no container runs an
// image by a moving tag; and the digest is the one a registry serves once the tarball is
// pushed as it is.
func TestReleasePinsEveryImageByTagAndDigest(t *testing.T) {
	images, out := t.TempDir(), filepath.Join(t.TempDir(), "release", "config")
	digests := buildImages(t, images, SourceRepository, version)
	refs, err := Write(Options{Version: version, Repository: SourceRepository, ImagesDir: images,
		ConfigDir: filepath.Join(root(t), "config"), OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for n, d := range digests {
		want[n] = SourceRepository + "/" + n + ":" + version + "@" + d.String()
		if refs[n] != want[n] {
			t.Errorf("%s pinned as %q, want %q", n, refs[n], want[n])
		}
	}

	files, seen := 0, map[string]int{}
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(raw), ":latest") {
			t.Errorf("%s: an image by :latest", path)
		}
		for _, ref := range anyImage.FindAllString(string(raw), -1) {
			n := strings.SplitN(strings.TrimPrefix(ref, SourceRepository+"/"), ":", 2)[0]
			n = strings.SplitN(n, "@", 2)[0]
			if ref != want[n] {
				t.Errorf("%s: %s, want %s", path, ref, want[n])
			}
			seen[n]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("the release holds %d files; config/ has more", files)
	}

	objs, err := manifests.Build(filepath.Join(out, "default"))
	if err != nil {
		t.Fatal(err)
	}
	daemons := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" && o.GetKind() != "StatefulSet" {
			continue
		}
		var d appsv1.Deployment // the pod template is at the same place in both
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			switch n, ok := strings.CutPrefix(c.Image, SourceRepository+"/"); {
			case ok:
				daemons++
				if name := strings.SplitN(n, ":", 2)[0]; c.Image != want[name] {
					t.Errorf("%s %s/%s runs %s, want %s", o.GetKind(), o.GetName(), c.Name, c.Image, want[name])
				}
			case !strings.Contains(c.Image, ":") || strings.HasSuffix(c.Image, ":latest"):
				t.Errorf("%s %s/%s runs %s, by no version", o.GetKind(), o.GetName(), c.Name, c.Image)
			}
		}
	}
	if daemons != 6 {
		t.Errorf("the release's config/default runs %d sigops containers, want the 6 daemons", daemons)
	}
	for _, n := range []string{"manager", "executor", "webhookd", "authd", "mcpd", "notifyd"} {
		if seen[n] == 0 {
			t.Errorf("the release names no %s image", n)
		}
	}

	// crane push bin/images/executor.tar <registry>/sigops/executor:v1.4.0, then ask the
	// registry for the digest it serves.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := mustURL(t, reg.URL).Host
	tag, err := name.NewTag(host+"/sigops/executor:"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(filepath.Join(images, "executor.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(refs["executor"], "@"+desc.Digest.String()) {
		t.Errorf("the registry serves executor:%s as %s; the release pins %s", version, desc.Digest, refs["executor"])
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A release is refused, and writes nothing, for tarballs of another version, a missing
// tarball, a moving or dirty version, and an output directory it did not write.
func TestReleaseRefusals(t *testing.T) {
	config := filepath.Join(root(t), "config")
	images := t.TempDir()
	buildImages(t, images, SourceRepository, "v1.3.9")
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"tarballs of another version", Options{Version: version}, ":v1.3.9\"], not ghcr.io/sigops/"},
		{"moving tag", Options{Version: "latest"}, "never tagged latest"},
		{"dirty tree", Options{Version: "v1.4.0-3-gabcdef-dirty"}, "uncommitted changes"},
		{"no version", Options{}, "not an image tag"},
		{"another repository", Options{Version: "v1.3.9", Repository: "registry.example.com/sigops"}, "not registry.example.com/sigops/"},
		{"inside config", Options{Version: "v1.3.9", OutDir: filepath.Join(config, "release")}, "inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if o.Repository == "" {
				o.Repository = SourceRepository
			}
			if o.OutDir == "" {
				o.OutDir = filepath.Join(t.TempDir(), "out")
			}
			o.ImagesDir, o.ConfigDir = images, config
			_, err := Write(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(o.OutDir, Marker)); err == nil {
				t.Error("a refused release left a release behind")
			}
		})
	}

	// A missing tarball: executor.tar gone.
	if err := os.Remove(filepath.Join(images, "executor.tar")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Write(Options{Version: "v1.3.9", Repository: SourceRepository, ImagesDir: images, ConfigDir: config, OutDir: out}); err == nil ||
		!strings.Contains(err.Error(), "ghcr.io/sigops/executor") || !strings.Contains(err.Error(), "make images VERSION=v1.3.9") {
		t.Fatalf("missing executor.tar: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused release left files behind")
	}

	// A directory that is not an earlier release is not replaced; an earlier release is.
	buildImages(t, images, SourceRepository, "v1.3.9")
	mine := t.TempDir()
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{Version: "v1.3.9", Repository: SourceRepository, ImagesDir: images, ConfigDir: config, OutDir: mine}
	if _, err := Write(o); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Fatalf("a directory of other files: %v", err)
	}
	o.OutDir = out
	for range 2 {
		if _, err := Write(o); err != nil {
			t.Fatalf("writing over an earlier release: %v", err)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(out, Marker)); err != nil || !slices.Contains(strings.Split(string(raw), "\n"), mustRef(t, images, "mcpd", "v1.3.9")) {
		t.Fatalf("%s: %q (%v)", Marker, raw, err)
	}
}

func mustRef(t *testing.T, images, n, v string) string {
	t.Helper()
	ref, err := pin(Options{Version: v, Repository: SourceRepository, ImagesDir: images}, n)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
