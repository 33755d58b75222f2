#!/usr/bin/env bash
# test-deps.sh installs, from Debian's repositories, what Voda's test suite
# needs beyond Go: rabbitmq-server (internal/queue/rabbittest starts its own
# isolated broker from it), and for the Kubernetes test stack
# (hack/cluster.sh) openssl for its keys and certificates, and socat,
# unshare and ip to give mpi-operator a network namespace of its own; and
# python3-torch (Debian's CPU PyTorch with gloo and the elastic launcher)
# for test/kube's TestRealTrainer, which trains a small model under it; and
# prometheus (Prometheus and promtool) for test/e2e's TestMonitoring, which
# checks the alert rules and dashboards' queries against a real one; and
# chromium, the browser test/browser drives with playwright-core. This
# script starts nothing; hack/tools.sh builds the Kubernetes components.
# It is idempotent and prints one line per package it installs, nothing
# when everything is already there.
set -euo pipefail

# Each entry: "<proof it is installed> <debian package>". The proof is a
# command on PATH (or in /usr/sbin or rabbitmq's bin), or python3:<module>,
# a module Debian's /usr/bin/python3 imports.
deps=(
	"rabbitmq-server rabbitmq-server"
	"openssl openssl"
	"socat socat"
	"unshare util-linux"
	"ip iproute2"
	"python3:torch python3-torch"
	"promtool prometheus"
	"chromium chromium"
)

have() {
	if [[ $1 == python3:* ]]; then
		[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import ${1#python3:}" >/dev/null 2>&1
		return
	fi
	command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" || -x "/usr/lib/rabbitmq/bin/$1" ]]
}

missing=()
for dep in "${deps[@]}"; do
	read -r cmd pkg <<<"$dep"
	if ! have "$cmd"; then
		missing+=("$pkg")
	fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "test-deps: not root and no sudo: install ${missing[*]} as root" >&2
		exit 1
	fi
	sudo=(sudo)
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: apt-get not found: install ${missing[*]} with this system's package manager" >&2
	exit 1
fi

# env, not export: sudo resets the environment.
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "${apt[@]}" update >"$log" 2>&1; then
	cat "$log" >&2
	echo "test-deps: apt-get update failed" >&2
	exit 1
fi
for pkg in "${missing[@]}"; do
	if ! "${apt[@]}" install -y --no-install-recommends "$pkg" >"$log" 2>&1; then
		cat "$log" >&2
		echo "test-deps: apt-get install $pkg failed" >&2
		exit 1
	fi
	echo "test-deps: installed $pkg"
done
