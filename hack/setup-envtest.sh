#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) from source through the Go
# module proxy into bin/k8s/. setup-envtest cannot download release binaries here, so we
# compile the same versions ourselves. Binaries already present are skipped.
#
#   hack/setup-envtest.sh [dest-dir]      (default: bin/k8s)
#
# Build output goes to bin/k8s/build.log; the first build takes about 6-8 minutes on 2 cores.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/bin/k8s}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
log="$dest/build.log"
staging_version="0.${K8S_VERSION#1.}"

# Builds are kept in a per-user cache too, so a fresh clone on the same machine (CI) links
# them instead of compiling again.
cache="${SIGOPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sigops}/k8s-v${K8S_VERSION}-etcd-v${ETCD_VERSION}"
mkdir -p "$cache"
need=()
for b in etcd kube-apiserver kube-controller-manager kubectl; do
  if [ ! -x "$dest/$b" ] && [ -x "$cache/$b" ]; then
    ln -f "$cache/$b" "$dest/$b" 2>/dev/null || cp "$cache/$b" "$dest/$b"
  fi
  [ -x "$dest/$b" ] || need+=("$b")
done
fill_cache() {
  local b
  for b in etcd kube-apiserver kube-controller-manager kubectl; do
    [ -x "$cache/$b" ] || cp "$dest/$b" "$cache/$b"
  done
}
if [ ${#need[@]} -eq 0 ]; then
  fill_cache
  exit 0
fi

echo "building local control plane (${need[*]}) from source: about 6-8 minutes on 2 cores the first time; log: $log" >&2
: >"$log"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build_etcd() {
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  cat >main.go <<'GO'
// Command etcd is upstream etcd's server main, built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod init sigops.local/etcd >>"$log" 2>&1
  go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >>"$log" 2>&1
  go mod tidy >>"$log" 2>&1
  CGO_ENABLED=0 go build -trimpath -o "$dest/etcd.tmp" . >>"$log" 2>&1
  mv "$dest/etcd.tmp" "$dest/etcd"
}

build_kubernetes() {
  mkdir -p "$work/k8s"
  cd "$work/k8s"
  go mod init sigops.local/k8s >>"$log" 2>&1
  # k8s.io/kubernetes points its staging modules at ./staging with replace directives, which
  # only apply in its own module; a module that requires it must replace them with the
  # published versions (v0.X.Y for v1.X.Y).
  gomod="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [ -f "$gomod" ] || { echo "cannot read go.mod of k8s.io/kubernetes v${K8S_VERSION}" >&2; exit 1; }
  local staged
  staged="$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9.-]*\) => ./staging/src/.*#\1#p' "$gomod" | sort -u)"
  [ -n "$staged" ] || { echo "no staging modules found in $gomod" >&2; exit 1; }
  for m in $staged; do
    go mod edit -replace="$m=$m@v${staging_version}"
  done
  go mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
  # go get of the two commands records every dependency they need.
  go get "k8s.io/kubernetes/cmd/kube-apiserver@v${K8S_VERSION}" "k8s.io/kubernetes/cmd/kube-controller-manager@v${K8S_VERSION}" "k8s.io/kubernetes/cmd/kubectl@v${K8S_VERSION}" >>"$log" 2>&1
  # Without these the binaries report v0.0.0, which kubectl's version skew check dislikes.
  local minor="${K8S_VERSION#1.}"; minor="${minor%%.*}"
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=v${K8S_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor} -X $p.gitTreeState=clean"
  done
  for b in kube-apiserver kube-controller-manager kubectl; do
    [ -x "$dest/$b" ] && continue
    CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$dest/$b.tmp" "k8s.io/kubernetes/cmd/$b" >>"$log" 2>&1
    mv "$dest/$b.tmp" "$dest/$b"
  done
}

# The builds run in subshells under set -e (not in a || list, where bash would ignore -e), so
# the first failing step stops them; the trap names the log.
trap 'echo "control-plane build failed; see $log" >&2' ERR
start=$(date +%s)
if [ ! -x "$dest/etcd" ]; then
  echo "  etcd v${ETCD_VERSION} (about 1 minute)..." >&2
  (build_etcd)
fi
if [ ! -x "$dest/kube-apiserver" ] || [ ! -x "$dest/kube-controller-manager" ] || [ ! -x "$dest/kubectl" ]; then
  echo "  kube-apiserver, kube-controller-manager and kubectl v${K8S_VERSION} (about 5-7 minutes)..." >&2
  (build_kubernetes)
fi
fill_cache
echo "control plane ready in $dest ($(( $(date +%s) - start ))s)" >&2
