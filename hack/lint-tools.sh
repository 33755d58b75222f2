#!/usr/bin/env bash
# Installs the linters `make vet` runs, at pinned versions, from the Go
# module proxy into $VODA_TOOLS/bin (default .cache/tools/bin, ignored by
# git): staticcheck and deadcode. A tool is reinstalled only when its
# binary was built from another version or with another Go (a linter built
# by an older Go cannot load code that needs a newer one), so a second run
# takes well under a second. Unlike hack/tools.sh it builds no Kubernetes.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${VODA_TOOLS:-$root/.cache/tools}/bin"
mkdir -p "$bin"

# install MODULE VERSION PACKAGE
install() {
	local module=$1 version=$2 pkg=$3
	local exe="$bin/${pkg##*/}"
	local info
	info="$(go version -m "$exe" 2>/dev/null || true)"
	if [[ "$info" == "$exe: $(go env GOVERSION)"* && "$info" == *$'\tmod\t'"$module"$'\t'"$version"$'\t'* ]]; then
		return 0
	fi
	echo "hack/lint-tools.sh: installing $pkg@$version" >&2
	GOBIN="$bin" go install "$pkg@$version"
}

install honnef.co/go/tools v0.8.2 honnef.co/go/tools/cmd/staticcheck # 2026.2.2
install golang.org/x/tools v0.52.0 golang.org/x/tools/cmd/deadcode
