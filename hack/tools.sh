#!/usr/bin/env bash
# Builds the real components the Kubernetes integration tests run against:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok,
# mpi-operator and training-operator; and helm, which renders deploy/helm/voda
# for the chart's tests (test/chart) and `make chart`. Each group is its own Go module under
# hack/tools/ (they pin different k8s.io versions), built from the Go module
# proxy into $VODA_TOOLS/bin (default .cache/tools/bin, ignored by git).
# A group is rebuilt only when its go.mod/go.sum or the Go version change, so
# the first run takes about ten minutes on two cores and later runs a second.
#
# The browser group installs playwright-core from the npm registry into
# $VODA_TOOLS/browser/node_modules (hack/tools/browser/package-lock.json pins
# it); it drives Debian's Chromium (hack/test-deps.sh) in test/browser and
# downloads no browser of its own.
#
# Usage: hack/tools.sh [group...]   groups: k8s etcd kwok mpi training helm
# browser (the default), mpi-v0.8 (mpi-operator v0.8.0, for
# VODA_MPI_OPERATOR=v0.8.0)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="${VODA_TOOLS:-$root/.cache/tools}"
bin="$tools/bin"
mkdir -p "$bin"

k8s_version=v1.34.4
helm_version=v3.22.0 # keep in step with hack/tools/helm/go.mod

build() {
	local group=$1
	shift
	local dir="$root/hack/tools/$group"
	local stamp="$bin/.stamp-$group"
	local want
	want="$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -d' ' -f1) $(go env GOVERSION)"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		return 0
	fi
	echo "hack/tools.sh: building $group (first build takes minutes)" >&2
	local start=$SECONDS
	(cd "$dir" && go build -trimpath "$@")
	echo "$want" >"$stamp"
	echo "hack/tools.sh: built $group in $((SECONDS - start)) s" >&2
}

k8s_ldflags() {
	local major=${k8s_version#v}
	major=${major%%.*}
	local minor=${k8s_version#v*.}
	minor=${minor%%.*}
	local f=""
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		f+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
		f+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	echo "-s -w$f"
}

# helm's version, and the Kubernetes version `helm template` and `helm
# lint` assume without a cluster: that of its client-go (v0.N.x is
# Kubernetes 1.N), as helm's own Makefile sets them.
helm_ldflags() {
	local cg
	cg=$(awk '$1 == "k8s.io/client-go" {print $2}' "$root/hack/tools/helm/go.mod")
	local minor=${cg#v0.}
	minor=${minor%%.*}
	local f="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
	for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		f+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
	done
	echo "$f"
}

# npm_install installs a group's locked npm packages into $tools/<group>,
# again only when its package-lock.json or node's version change.
npm_install() {
	local group=$1
	local dir="$root/hack/tools/$group"
	local dest="$tools/$group"
	local stamp="$bin/.stamp-$group"
	local want
	want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1) $(node --version)"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$dest/node_modules" ]]; then
		return 0
	fi
	echo "hack/tools.sh: installing $group from the npm registry" >&2
	local start=$SECONDS
	mkdir -p "$dest"
	cp "$dir/package.json" "$dir/package-lock.json" "$dest/"
	(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
	echo "$want" >"$stamp"
	echo "hack/tools.sh: installed $group in $((SECONDS - start)) s" >&2
}

groups=("$@")
if [[ ${#groups[@]} -eq 0 ]]; then
	groups=(etcd k8s kwok mpi training helm browser)
fi
for g in "${groups[@]}"; do
	case $g in
	k8s)
		build k8s -ldflags "$(k8s_ldflags)" -o "$bin/" \
			k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kube-controller-manager \
			k8s.io/kubernetes/cmd/kube-scheduler \
			k8s.io/kubernetes/cmd/kubectl
		;;
	etcd)
		build etcd -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
		;;
	kwok)
		build kwok -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok
		;;
	mpi)
		build mpi -ldflags "-s -w" -o "$bin/mpi-operator" github.com/kubeflow/mpi-operator/cmd/mpi-operator
		;;
	mpi-v0.8)
		build mpi-v0.8 -ldflags "-s -w" -o "$bin/mpi-operator-v0.8" github.com/kubeflow/mpi-operator/cmd/mpi-operator
		;;
	training)
		build training -ldflags "-s -w" -o "$bin/training-operator" \
			github.com/kubeflow/training-operator/cmd/training-operator.v1
		;;
	helm)
		build helm -ldflags "$(helm_ldflags)" -o "$bin/helm" helm.sh/helm/v3/cmd/helm
		;;
	browser)
		npm_install browser
		;;
	*)
		echo "hack/tools.sh: unknown group $g (want k8s etcd kwok mpi mpi-v0.8 training helm browser)" >&2
		exit 2
		;;
	esac
done
