package ociimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Compile builds im's package into the file out: static (CGO_ENABLED=0), for linux/b.Arch,
// with GoBuildFlags, using the `go` on PATH in b.ModuleDir.
func Compile(ctx context.Context, b Build, im Image, out string) error {
	args := append([]string{"build"}, GoBuildFlags...)
	args = append(args, "-o", out, im.Package)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+b.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", im.Package, err, msg)
	}
	return nil
}

// Assemble returns the image of im whose binary is the file binPath: the base layer, the
// binary layer and the configuration the Dockerfile's target im.Name sets.
func Assemble(b Build, im Image, binPath string) (v1.Image, error) {
	base, err := baseLayer(b)
	if err != nil {
		return nil, err
	}
	bin, err := binaryLayer(im.Name, binPath, b.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: b.Created.UTC()}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "COPY /rootfs/ / # CA bundle, passwd, group"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created, CreatedBy: "COPY " + Entrypoint(im.Name)[0]}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = b.Arch, "linux", created
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: Entrypoint(im.Name),
		WorkingDir: WorkDir,
		Env:        append([]string(nil), Env...),
		Labels:     Labels(im, b.Version, b.Revision),
	}
	return mutate.ConfigFile(img, cfg)
}

// Tag is the name an image tarball loads as: <repository>/<name>:<version>.
func Tag(repository string, im Image, version string) (name.Tag, error) {
	return name.NewTag(repository + "/" + im.Name + ":" + version)
}

// Make compiles im, assembles its image and writes it to the file out as a docker-save
// tarball (what `docker load`, `podman load`, `ctr import` and `crane push` read) tagged
// tag. It returns the image's digest.
func Make(ctx context.Context, b Build, im Image, tag name.Tag, out string) (v1.Hash, error) {
	tmp, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	binPath := filepath.Join(tmp, im.Name)
	if err := Compile(ctx, b, im, binPath); err != nil {
		return v1.Hash{}, err
	}
	img, err := Assemble(b, im, binPath)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return v1.Hash{}, err
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", out, err)
	}
	return img.Digest()
}
