// Package ociimage builds sigops's container images without a Docker engine: it compiles a
// binary statically with the Go toolchain and assembles the image build/Dockerfile describes
// (a base layer with the CA bundle, /etc/passwd and /etc/group; a layer with the binary;
// user 65532, OCI labels) with go-containerregistry, reproducibly.
package ociimage

import "time"

// Image is one shipped image: the program it runs and what its labels say about it.
type Image struct {
	Name        string // image and binary name; the Dockerfile's target of the same name
	Package     string // the Go package built into it, relative to the module root
	Description string // org.opencontainers.image.description
}

// Images are the images sigops ships, in the order `make images` builds them. queuectl is
// among them because an operator runs it inside the cluster (dead letters, the key migration
// of an upgrade) as a Job or `kubectl run`, and the daemons' images have no shell to exec
// into. backtest and sigops-mcp run on a user's machine and are not shipped as images.
var Images = []Image{
	{Name: "manager", Package: "./cmd/manager", Description: "sigops operator: reconciles bots, accounts and connections and projects them into Redis"},
	{Name: "executor", Package: "./cmd/executor", Description: "sigops executor: executes queued signals on exchanges and paper accounts"},
	{Name: "webhookd", Package: "./cmd/webhookd", Description: "sigops webhook intake: validates and queues trading signals"},
	{Name: "authd", Package: "./cmd/authd", Description: "sigops auth and read API: accounts, OAuth, dashboard"},
	{Name: "mcpd", Package: "./cmd/mcpd", Description: "sigops MCP server for AI agents"},
	{Name: "notifyd", Package: "./cmd/notifyd", Description: "sigops notifications: Telegram alerts and approvals, outbound webhooks"},
	{Name: "queuectl", Package: "./cmd/queuectl", Description: "sigops operator CLI: dead letters and key migration"},
}

// Find returns the shipped image called name.
func Find(name string) (Image, bool) {
	for _, im := range Images {
		if im.Name == name {
			return im, true
		}
	}
	return Image{}, false
}

const (
	// User runs every image's process: the distroless "nonroot" user and group, which the
	// restricted Pod Security profile accepts (runAsNonRoot with a numeric UID).
	User = "65532:65532"
	// BinDir holds the binary; the entrypoint is BinDir/<name>.
	BinDir = "/usr/local/bin"
	// WorkDir is the working directory. The daemons write nothing to disk (the root file
	// system is read-only in the manifests), so it is the root.
	WorkDir = "/"
	// CABundlePath is where the image carries the CA certificates, Debian's path, which
	// Go's crypto/x509 reads first on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// SourceURL is org.opencontainers.image.source.
	SourceURL = "https://github.com/sigops/sigops"
)

// Env is the image's environment, the same as the Dockerfile's ENV.
var Env = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"SSL_CERT_FILE=" + CABundlePath,
}

// GoBuildFlags are the `go build` flags of every binary besides -o, with CGO_ENABLED=0:
// no cgo gives a static binary that needs no C library in the image; -trimpath and no VCS
// stamp keep the binary independent of where and in which checkout it is built (the
// revision is a label instead); -s -w drop the symbol table and DWARF.
var GoBuildFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// Entrypoint is the image's entrypoint for the binary called name.
func Entrypoint(name string) []string {
	return []string{BinDir + "/" + name}
}

// Labels are the OCI labels of the image im at version and revision (a commit).
func Labels(im Image, version, revision string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       im.Name,
		"org.opencontainers.image.description": im.Description,
		"org.opencontainers.image.source":      SourceURL,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
	}
}

// Build says how to build an image: what goes into it and the values that are not part of
// the source (version, revision, the creation time).
type Build struct {
	ModuleDir string    // the module root, where `go build` runs
	RootFS    string    // files copied into the base layer as they are (build/rootfs)
	CABundle  string    // the CA bundle copied to CABundlePath
	Arch      string    // GOARCH of the binary and the image
	Version   string    // org.opencontainers.image.version
	Revision  string    // org.opencontainers.image.revision
	Created   time.Time // the image's creation time and every file's mtime (SOURCE_DATE_EPOCH)
}
