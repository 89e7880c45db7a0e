#!/usr/bin/env bash
# Vendors the dashboard's two browser libraries from the npm registry into
# authd/dashboard/static/vendor, pinned by version and by the tarball's sha512 (the registry's
# "integrity"), so that a tampered or changed package fails here instead of reaching users.
# Node is needed only to run this; nothing of Node runs in sigops. `make vendor-web` calls it;
# the vendored files are committed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/authd/dashboard/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name version integrity file-in-package destination
packages=(
  "htmx.org 2.0.11 sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA== dist/htmx.min.js htmx.min.js"
  "lightweight-charts 5.2.1 sha512-IVwoK1RLFiLPubaKIjNbtjWLnpPMqiABSrTay6whmNa8L1+19292VtHJ+BWyPUuLCwF0tcQlhEWd1CLB2a1nsQ== dist/lightweight-charts.standalone.production.js lightweight-charts.standalone.production.js"
)

command -v npm >/dev/null || { echo "vendor-web: npm is needed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$out"
: > "$work/SHA256SUMS"
for p in "${packages[@]}"; do
  read -r name version integrity file dest <<<"$p"
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  tgz="$work/${name}-${version}.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [[ "$got" != "$integrity" ]]; then
    echo "vendor-web: $name@$version: integrity $got, want $integrity" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar xzf "$tgz" -C "$work/$name"
  cp "$work/$name/package/$file" "$out/$dest"
  cp "$work/$name/package/LICENSE" "$out/$dest.LICENSE"
  echo "$name $version $integrity" >> "$work/VERSIONS"
done
cp "$work/VERSIONS" "$out/VERSIONS"
(cd "$out" && sha256sum -- *.js > SHA256SUMS)
echo "vendor-web: $(wc -l < "$out/VERSIONS") packages in $out"
