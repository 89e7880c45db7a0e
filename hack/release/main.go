// Command release writes the manifests of a release (`make release-manifests VERSION=v1.4.0`):
// a copy of config/ in which every sigops image is referenced as
// <repository>/<name>:<version>@sha256:<digest>, the digest read from the image tarball
// `make images` wrote for that version (bin/images/<name>.tar). Nothing in the copy pulls a
// moving tag: the tag says which release a pod runs, the digest makes the pull exact. The
// copy is checked before the command succeeds (no :latest, no sigops image without its tag
// and digest), and a file RELEASE at its top lists the pinned images.
//
//	go run ./hack/release -version v1.4.0 [-images bin/images] [-repository ghcr.io/sigops] [-config config] [-out bin/release/config]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigops/sigops/internal/ociimage"
)

func main() {
	var o Options
	flag.StringVar(&o.Version, "version", "", "the release's version: the tag `make images VERSION=...` gave the images (required)")
	flag.StringVar(&o.Repository, "repository", SourceRepository, "the images' repository prefix, as `make images IMAGE_REPOSITORY=...` tagged them")
	flag.StringVar(&o.ImagesDir, "images", "bin/images", "where `make images` wrote the tarballs")
	flag.StringVar(&o.ConfigDir, "config", "config", "the manifests to release")
	flag.StringVar(&o.OutDir, "out", filepath.Join("bin", "release", "config"), "where the released manifests go (replaced if an earlier release wrote them)")
	flag.Parse()
	refs, err := Write(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, im := range ociimage.Images {
		if ref, ok := refs[im.Name]; ok {
			fmt.Println(ref)
		}
	}
	fmt.Printf("wrote %s: push the tarballs with `crane push %s/<name>.tar <repository>/<name>:%s`, then `kubectl apply --server-side -k %s/default` (or an overlay of it)\n",
		o.OutDir, o.ImagesDir, o.Version, o.OutDir)
}
