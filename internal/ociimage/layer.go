package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// file is one regular file of a layer; its parent directories are added for it.
type file struct {
	path string // absolute, as in the image
	mode int64
	data []byte
}

// baseLayer holds what every image shares, as the Dockerfile's `COPY --from=build /rootfs/ /`
// does: the files under b.RootFS and the CA bundle. Files are 0644 and directories 0755,
// owned by root, whatever their modes on the host, so the layer is the same on every machine.
func baseLayer(b Build) (v1.Layer, error) {
	var files []file
	err := filepath.WalkDir(b.RootFS, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(b.RootFS, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, file{path: "/" + filepath.ToSlash(rel), mode: 0o644, data: data})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read root file system %s: %w", b.RootFS, err)
	}
	ca, err := os.ReadFile(b.CABundle)
	if err != nil {
		return nil, fmt.Errorf("read CA bundle: %w", err)
	}
	files = append(files, file{path: CABundlePath, mode: 0o644, data: ca})
	return layer(files, b.Created)
}

// binaryLayer holds the binary at BinDir/name, mode 0755.
func binaryLayer(name, binPath string, mtime time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	return layer([]file{{path: BinDir + "/" + name, mode: 0o755, data: data}}, mtime)
}

// layer writes files and their parent directories into a tar archive in path order, every
// entry with the same mtime and owner, so the same files give the same digest.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var hdrs []*tar.Header
	for d := range dirs {
		hdrs = append(hdrs, header(d[1:]+"/", tar.TypeDir, 0o755, 0, mtime))
	}
	data := map[string][]byte{}
	for _, f := range files {
		name := strings.TrimPrefix(f.path, "/")
		hdrs = append(hdrs, header(name, tar.TypeReg, f.mode, int64(len(f.data)), mtime))
		data[name] = f.data
	}
	sort.Slice(hdrs, func(i, j int) bool { return hdrs[i].Name < hdrs[j].Name })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data[h.Name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	})
}

func header(name string, typ byte, mode, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  mtime.UTC().Truncate(time.Second),
		Format:   tar.FormatPAX,
	}
}
