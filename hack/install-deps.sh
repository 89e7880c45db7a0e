#!/usr/bin/env bash
# Installs the Debian packages sigops needs on a fresh machine: redis-server for the tests and
# the local stack, redis-sentinel for the tests of a Sentinel-managed Redis, nginx (the local stack's HTTPS front, like the Ingress), chromium (the
# dashboard's browser tests in test/browser drive it headless) and Node.js with npm (the
# TypeScript MCP SDK host in test/e2e), and postgresql. Does nothing when everything is present.
set -euo pipefail

packages=()
command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || packages+=(redis-sentinel)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || packages+=(nginx)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || packages+=(chromium)
# Node.js and npm run the official TypeScript MCP client SDK in test/e2e (a host signing in
# and stepping up its scope); the SDK needs Node.js 20 or later.
# PostgreSQL is the record (history, accounts, the wallet): the tests start their own server
# per package and the local stack one in bin/local (Debian keeps its programs outside the PATH).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || [ -n "${SIGOPS_PG_BIN:-}" ] || packages+=(postgresql)
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
[ ${#packages[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install: ${packages[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "installing ${packages[*]} from Debian (a minute or two)..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
# Debian starts a system redis on :6379 (and a Sentinel on :26379) after install; sigops starts
# its own on other ports, so leave the system ones alone; the same for the postgresql package's
# cluster on :5432.
