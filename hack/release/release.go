package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sigops/sigops/internal/ociimage"
)

// SourceRepository is where config/ names the sigops images (ghcr.io/sigops/<name>:dev).
const SourceRepository = "ghcr.io/sigops"

// Marker is the file a release writes at the top of its output: the version and each pinned
// image. Its presence is what lets a later run replace the directory.
const Marker = "RELEASE"

// Options say what to release and where.
type Options struct {
	Version    string // the images' tag, as `make images VERSION=...` built them
	Repository string // the images' repository prefix, as `make images IMAGE_REPOSITORY=...` tagged them
	ImagesDir  string // where `make images` wrote <name>.tar
	ConfigDir  string // the manifests to copy (config/)
	OutDir     string // where the copy goes; replaced if a previous release wrote it
}

// sourceImage is a sigops image reference as config/ may write it: the name, and any tag and
// digest, which the release replaces.
var sourceImage = regexp.MustCompile(regexp.QuoteMeta(SourceRepository) + `/([a-z0-9][a-z0-9-]*)(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?(@sha256:[0-9a-f]{64})?`)

// validTag is a Docker tag.
var validTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Write copies o.ConfigDir to o.OutDir with every sigops image set to
// <repository>/<name>:<version>@<digest>, the digest being that of the image in
// <images>/<name>.tar, and checks the copy. It returns the pinned references by image name.
func Write(o Options) (map[string]string, error) {
	switch {
	case !validTag.MatchString(o.Version):
		return nil, fmt.Errorf("version %q is not an image tag", o.Version)
	case o.Version == "latest":
		return nil, errors.New("a release is never tagged latest: give VERSION=v1.2.3")
	case strings.HasSuffix(o.Version, "-dirty"):
		return nil, fmt.Errorf("version %s is of a work tree with uncommitted changes: release from a commit", o.Version)
	}
	if err := checkOut(o.ConfigDir, o.OutDir); err != nil {
		return nil, err
	}
	refs := map[string]string{}
	missing := map[string]error{}
	for _, im := range ociimage.Images {
		ref, err := pin(o, im.Name)
		if err != nil {
			missing[im.Name] = err
			continue
		}
		refs[im.Name] = ref
	}
	if err := os.RemoveAll(o.OutDir); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(o.ConfigDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(o.ConfigDir, path)
		if err != nil {
			return err
		}
		out := filepath.Join(o.OutDir, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var failed error
		text := sourceImage.ReplaceAllStringFunc(string(raw), func(m string) string {
			n := sourceImage.FindStringSubmatch(m)[1]
			if _, ok := ociimage.Find(n); !ok {
				failed = errors.Join(failed, fmt.Errorf("%s names %s, which is no image sigops builds", path, m))
				return m
			}
			ref, ok := refs[n]
			if !ok {
				failed = errors.Join(failed, fmt.Errorf("%s names %s: %w", path, m, missing[n]))
				return m
			}
			return ref
		})
		if failed != nil {
			return failed
		}
		return os.WriteFile(out, []byte(text), 0o644)
	})
	if err != nil {
		_ = os.RemoveAll(o.OutDir) // no half-written release
		return nil, err
	}
	if err := writeMarker(o, refs); err != nil {
		return nil, err
	}
	if err := Check(o.OutDir, o.Repository, o.Version, refs); err != nil {
		return nil, fmt.Errorf("the written release fails its check: %w", err)
	}
	return refs, nil
}

// checkOut refuses an output directory inside the config (the copy would copy itself) and a
// non-empty one that no release wrote (it would be deleted).
func checkOut(config, out string) error {
	c, err := filepath.Abs(config)
	if err != nil {
		return err
	}
	o, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(c, o); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return fmt.Errorf("output %s is inside %s", out, config)
	}
	if rel, err := filepath.Rel(o, c); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return fmt.Errorf("output %s holds %s, which the release would delete", out, config)
	}
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(out, Marker)); err != nil {
		return fmt.Errorf("output %s is not empty and holds no %s file of an earlier release: not replacing it", out, Marker)
	}
	return nil
}

// pin reads <images>/<name>.tar, checks it was built as <repository>/<name>:<version>, and
// returns that reference with the image's digest: the digest a registry serves for it once
// pushed as it is (crane push, or any copy that keeps the manifest).
func pin(o Options, imageName string) (string, error) {
	file := filepath.Join(o.ImagesDir, imageName+".tar")
	want := o.Repository + "/" + imageName + ":" + o.Version
	tags, err := repoTags(file)
	if err != nil {
		return "", fmt.Errorf("no image tarball for it (%w): run make images VERSION=%s", err, o.Version)
	}
	if !slices.Contains(tags, want) {
		return "", fmt.Errorf("%s is tagged %q, not %s: run make images VERSION=%s", file, tags, want, o.Version)
	}
	tag, err := name.NewTag(want)
	if err != nil {
		return "", err
	}
	img, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return want + "@" + digest.String(), nil
}

// repoTags are the tags the docker-save archive's manifest.json gives its images.
func repoTags(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s has no manifest.json", file)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: manifest.json: %w", file, err)
		}
		var tags []string
		for _, e := range m {
			tags = append(tags, e.RepoTags...)
		}
		return tags, nil
	}
}

func writeMarker(o Options, refs map[string]string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sigops %s: the manifests of config/ with every image pinned by tag and digest\n", o.Version)
	for _, im := range ociimage.Images {
		if ref, ok := refs[im.Name]; ok {
			fmt.Fprintf(&b, "%s\n", ref)
		}
	}
	return os.WriteFile(filepath.Join(o.OutDir, Marker), []byte(b.String()), 0o644)
}

// Check reads every file under dir and fails on a ":latest", on a sigops image without
// the release's tag and digest, and on a digest other than refs gives for it.
func Check(dir, repository, version string, refs map[string]string) error {
	pinned := regexp.MustCompile(regexp.QuoteMeta(repository) + `/([a-z0-9][a-z0-9-]*)(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?(@sha256:[0-9a-f]{64})?`)
	var problems []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(raw)
		if strings.Contains(text, ":latest") {
			problems = append(problems, fmt.Errorf("%s: an image by :latest", path))
		}
		for _, re := range []*regexp.Regexp{pinned, sourceImage} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				if want := refs[m[1]]; m[0] != want || !strings.Contains(m[0], ":"+version+"@sha256:") {
					problems = append(problems, fmt.Errorf("%s: %s, want %s", path, m[0], want))
				}
			}
		}
		return nil
	})
	return errors.Join(append(problems, err)...)
}
