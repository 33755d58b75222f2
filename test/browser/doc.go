// Package browser holds Voda's tests in a real browser: Debian's Chromium
// (/usr/bin/chromium, or $VODA_CHROMIUM) driven by playwright-core from
// the npm registry, installed by hack/tools.sh into
// $VODA_TOOLS/browser/node_modules; nothing downloads a browser. `make test`
// installs both (hack/test-deps.sh, hack/tools.sh). The tests fail, rather
// than skip, when either is missing, so that CI never passes without them.
//
// Screenshots are saved under $VODA_ARTIFACTS (default .cache/artifacts
// in the repository), for people to look at.
//
// TestDashboardLoad measures the server's cost of the dashboard's live
// stream with many jobs and several dashboards open in one Chromium. Its
// sizes come from the environment; the defaults are small, for `make test`:
//
//	VODA_DASHBOARD_LOAD_JOBS    jobs submitted (default 100)
//	VODA_DASHBOARD_LOAD_PAGES   dashboards open at once (default 2)
//	VODA_DASHBOARD_LOAD_WINDOW  each measuring window (default 10s)
//
// `make dashboard-cost` runs it with 1,000 jobs, 10 dashboards and 60 s
// windows.
package browser
