package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// The static files: the dashboard's own script and stylesheet, and the vendored libraries
// (make vendor-web) with their licences. They are compiled into the binary; nothing is read
// from disk or fetched at run time.
//
//go:embed static
var staticFS embed.FS

// staticFile is one file, with its gzip form and its content hash (the ETag).
type staticFile struct {
	body, gz []byte
	ctype    string
	etag     string
}

type staticFiles struct {
	files map[string]*staticFile
}

// loadStatic reads every embedded file once and compresses it once.
func loadStatic() (*staticFiles, error) {
	s := &staticFiles{files: map[string]*staticFile{}}
	err := fs.WalkDir(staticFS, "static", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" || strings.HasSuffix(p, "LICENSE") || path.Base(p) == "VERSIONS" || path.Base(p) == "SHA256SUMS" {
			ctype = "text/plain; charset=utf-8"
		}
		s.files["/"+p] = &staticFile{body: body, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static files: %w", err)
	}
	return s, nil
}

// serveStatic answers /static/<file>: cached for a day and revalidated by ETag (the names
// carry no version, so a deploy must not leave browsers on old files for long), gzip when
// the browser takes it.
func (d *Dashboard) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := d.static.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("ETag", f.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	_, _ = w.Write(body)
}

// StaticSize is the size of the named static files as sent (gzip when gzip is true), for
// the page-weight test and benchmark.
func (d *Dashboard) StaticSize(gzip bool, names ...string) (int, error) {
	n := 0
	for _, name := range names {
		f, ok := d.static.files[name]
		if !ok {
			return 0, fmt.Errorf("no static file %s", name)
		}
		if gzip {
			n += len(f.gz)
		} else {
			n += len(f.body)
		}
	}
	return n, nil
}
