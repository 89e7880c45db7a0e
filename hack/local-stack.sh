#!/usr/bin/env bash
# Starts the sigops local stack (`make run`): the Kubernetes control plane (etcd,
# kube-apiserver and kube-controller-manager), Redis on 127.0.0.1:6390 (or a three-master
# Redis Cluster on 6391-6393, or a Sentinel set), the manager, the executor, webhookd, authd and mcpd behind
# nginx, and the samples of config/samples; every program is restarted when it exits.
# Ctrl-C stops everything. State is kept in bin/local between runs.
#
#   hack/local-stack.sh [-fresh] [-redis=cluster|sentinel] [-executors=N] [-webhookd=N] [-mcpd=N]
#     -fresh deletes the previous cluster and Redis data; the replica counts default to 1
#
# A fresh machine first gets redis-server (hack/install-deps.sh) and the control-plane
# binaries built from source (hack/setup-envtest.sh, about 6-8 minutes the first time).
set -euo pipefail

cd "$(dirname "$0")/.."
hack/install-deps.sh
hack/setup-envtest.sh bin/k8s

# Build beside the target and rename: a running stack keeps its binary.
mkdir -p bin
tmp="$(mktemp bin/.localstack.XXXXXX)"
trap 'rm -f "$tmp"' EXIT
go build -o "$tmp" ./hack/localstack
mv -f "$tmp" bin/localstack
trap - EXIT
exec bin/localstack "$@"
