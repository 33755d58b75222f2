// Package browser holds Voda's tests in a real browser: Debian's Chromium
// (/usr/bin/chromium, or $VODA_CHROMIUM) driven by playwright-core from
// the npm registry, installed by hack/tools.sh into
// $VODA_TOOLS/browser/node_modules; nothing downloads a browser. `make test`
// installs both (hack/test-deps.sh, hack/tools.sh). The tests fail, rather
// than skip, when either is missing, so that CI never passes without them.
//
// Screenshots are saved under $VODA_ARTIFACTS (default .cache/artifacts
// in the repository), for people to look at.
package browser
