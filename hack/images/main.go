// Command images builds sigops's container images as tarballs without a Docker engine
// (`make images`): for each image named on the command line, or every shipped image, it
// compiles the binary statically and writes <out>/<name>.tar, a docker-save archive that
// `docker load`, `podman load`, `ctr import` and `crane push` read.
//
//	go run ./hack/images [-out bin/images] [-version dev] [-revision SHA] [-source-date-epoch N] [name...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sigops/sigops/internal/ociimage"
)

func main() {
	b := ociimage.Build{ModuleDir: "."}
	var out, repo string
	var epoch int64
	flag.StringVar(&out, "out", "bin/images", "directory the tarballs are written to")
	flag.StringVar(&repo, "repository", "ghcr.io/sigops", "the tarballs' tags are <repository>/<name>:<version> (the manifests' image names)")
	flag.StringVar(&b.Version, "version", "dev", "image tag and org.opencontainers.image.version")
	flag.StringVar(&b.Revision, "revision", "unknown", "org.opencontainers.image.revision (the commit)")
	flag.Int64Var(&epoch, "source-date-epoch", 0, "creation time and file mtimes, in Unix seconds (the commit's time makes the build reproducible)")
	flag.StringVar(&b.Arch, "arch", runtime.GOARCH, "GOARCH of the binaries and images")
	flag.StringVar(&b.RootFS, "rootfs", "build/rootfs", "files every image carries (/etc/passwd, /etc/group)")
	flag.StringVar(&b.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificates copied into every image")
	flag.Parse()
	b.Created = time.Unix(epoch, 0).UTC()
	if err := run(context.Background(), b, repo, out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, b ociimage.Build, repo, out string, names []string) error {
	images := ociimage.Images
	if len(names) > 0 {
		images = nil
		for _, n := range names {
			im, ok := ociimage.Find(n)
			if !ok {
				return fmt.Errorf("no image %q", n)
			}
			images = append(images, im)
		}
	}
	for _, im := range images {
		tag, err := ociimage.Tag(repo, im, b.Version)
		if err != nil {
			return err
		}
		file := filepath.Join(out, im.Name+".tar")
		digest, err := ociimage.Make(ctx, b, im, tag, file)
		if err != nil {
			return fmt.Errorf("%s: %w", im.Name, err)
		}
		fmt.Printf("%s %s %s\n", file, tag, digest)
	}
	return nil
}
