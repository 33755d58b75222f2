package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/auth"
)

// The tokens of newAuthFixture's callers.
const (
	adminToken  = "admin-token-0123456789"
	userToken   = "user-token-0123456789"
	scrapeToken = "scrape-token-0123456789" // in no group
)

// newAuthFixture is a fixture with the standalone token file and roles.
func newAuthFixture(t *testing.T) *fixture {
	t.Helper()
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0,voda:admins\n" +
		userToken + ",alice,1,\"team-a,voda:users\"\n" +
		scrapeToken + ",prometheus,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureWith(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, auth.NewRoles("", "") })
}

// as is fixture.do with a bearer token, returning the answer's headers
// and error detail (zero unless the body is an Error) too.
func (f *fixture) as(token, method, path, contentType, body string) (int, http.Header, ErrorDetail, []byte) {
	f.t.Helper()
	code, h, b := f.doWith(token, method, path, contentType, body)
	var e Error
	if code >= 400 && h.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(b, &e); err != nil {
			f.t.Fatalf("%s %s: %d with a body that is no Error: %s", method, path, code, b)
		}
	}
	return code, h, e.Error, b
}

func TestAuthentication(t *testing.T) {
	f := newAuthFixture(t)
	for _, c := range []struct {
		name, token, method, path string
		wantCode                  int
		wantMessage               string
	}{
		{"no token", "", "GET", RouteJobs, 401, "requires a bearer token"},
		{"unknown token", "guess", "GET", RouteJobs, 401, "not valid"},
		{"no token, legacy route", "", "DELETE", RouteLegacyJobs, 401, "requires a bearer token"},
		{"no token, metrics", "", "GET", RouteMetrics, 401, "requires a bearer token"},
		{"no token, unknown path", "", "GET", "/api/v2/jobs", 401, "requires a bearer token"},
		{"token, unknown path", userToken, "GET", "/api/v2/jobs", 404, "no route"},
		{"no token, healthz", "", "GET", RouteHealthz, 200, ""},
		{"no token, readyz", "", "GET", RouteReadyz, 200, ""},
		{"no token, HEAD healthz", "", "HEAD", RouteHealthz, 200, ""},
		{"token, healthz", "guess", "GET", RouteHealthz, 200, ""},
	} {
		code, h, e, _ := f.as(c.token, c.method, c.path, "", "")
		if code != c.wantCode || !strings.Contains(e.Message, c.wantMessage) {
			t.Errorf("%s: %d %+v, want %d with a message containing %q", c.name, code, e, c.wantCode, c.wantMessage)
		}
		if code == 401 && (h.Get("WWW-Authenticate") != `Bearer realm="voda"` || e.Reason != "Unauthorized" || e.Code != 401) {
			t.Errorf("%s: WWW-Authenticate %q, error %+v; want a Bearer challenge and reason Unauthorized", c.name, h.Get("WWW-Authenticate"), e)
		}
	}
	// Refused requests are counted under their route.
	_, _, _, b := f.as(scrapeToken, "GET", RouteMetrics, "", "")
	if want := `voda_http_requests_total{code="401",route="GET /api/v1/jobs"} 2`; !strings.Contains(string(b), want) {
		t.Errorf("metrics lack %s:\n%.2000s", want, b)
	}
}

func TestAuthorization(t *testing.T) {
	f := newAuthFixture(t)
	code, _, _, b := f.as(userToken, "POST", RouteJobs, "application/yaml", mpiJob("mine", "1", "2", "v100"))
	if code != http.StatusCreated {
		t.Fatalf("a user submits: %d %s", code, b)
	}
	var job Job
	if err := json.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	algo := `{"algorithm": "` + f.srv.cfg.DefaultAlgorithm + `"}`
	for _, c := range []struct {
		name, token, method, path, contentType, body string
		wantCode                                     int
		wantMessage                                  string
	}{
		{"user changes the algorithm", userToken, "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", algo,
			403, `user "alice" may not update schedulers/algorithm v100: needs the admin role: membership of group "voda:admins"`},
		{"user changes the rate limit", userToken, "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 5}`, 403, "needs the admin role"},
		{"user changes the algorithm, legacy route", userToken, "PUT", RouteLegacyAlgo, "", "FIFO", 403, "update schedulers/algorithm"},
		{"user changes the rate limit, legacy route", userToken, "PUT", RouteLegacyLimit + "?gpuType=v100", "", "5", 403, "update schedulers/ratelimit v100"},
		{"scraper gets a job", scrapeToken, "GET", "/api/v1/jobs/" + job.Name, "", "", 403, `user "prometheus" may not get MPIJob jobs ` + job.Name + ` in namespace default: needs the user role`},
		{"scraper submits", scrapeToken, "POST", RouteJobs, "application/yaml", mpiJob("theirs", "1", "2", "v100"), 403, "may not create MPIJob jobs in namespace default"},
		{"scraper reads metrics", scrapeToken, "GET", RouteMetrics, "", "", 200, ""},
		{"scraper reads the API description", scrapeToken, "GET", RouteOpenAPI, "", "", 200, ""},
		{"user lists jobs", userToken, "GET", RouteJobs, "", "", 200, ""},
		{"user lists jobs, legacy route", userToken, "GET", RouteLegacyJobs, "", "", 200, ""},
		{"user reads schedulers", userToken, "GET", RouteSchedulers, "", "", 200, ""},
		{"user reads algorithms", userToken, "GET", RouteAlgorithms, "", "", 200, ""},
		{"user reprioritises", userToken, "PUT", "/api/v1/jobs/" + job.Name + "/priority", "application/json", `{"priority": 1}`, 200, ""},
		{"admin changes the algorithm", adminToken, "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", algo, 200, ""},
		{"admin changes the rate limit", adminToken, "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 5}`, 200, ""},
		{"admin deletes a user's job", adminToken, "DELETE", "/api/v1/jobs/" + job.Name, "", "", 202, ""},
	} {
		code, _, e, b := f.as(c.token, c.method, c.path, c.contentType, c.body)
		if code != c.wantCode || !strings.Contains(e.Message, c.wantMessage) {
			t.Errorf("%s: %d %s, want %d with a message containing %q", c.name, code, b, c.wantCode, c.wantMessage)
		}
		if code == 403 && (e.Reason != "Forbidden" || e.Code != 403) {
			t.Errorf("%s: error %+v, want reason Forbidden", c.name, e)
		}
	}
	// A list shows only what the caller may see: nothing, to a caller
	// without the user role.
	if code, _, _, b := f.as(scrapeToken, "GET", RouteJobs, "", ""); code != 200 || !strings.Contains(string(b), `"items": []`) {
		t.Errorf("scraper lists jobs: %d %s, want 200 and no items", code, b)
	}
}

// TestEveryRouteHasAttributes: every route the server registers is in
// routeAttributes or openRoutes, and the roles let a caller in no group
// read exactly the non-resource routes they are meant for.
func TestEveryRouteHasAttributes(t *testing.T) {
	f := newFixture(t)
	seen := map[string]bool{}
	for _, route := range []string{
		RouteJobs, RouteJob, RouteJobPriority, RouteJobProgress, RouteSchedulers, RouteScheduler, RouteAlgorithm, RouteRateLimit,
		RouteTeams, RouteTeam, RouteAlgorithms, RouteNodes, RouteEvents, RouteOpenAPI, RouteLegacyJobs, RouteLegacyAlgo, RouteLegacyLimit, RouteMetrics, RouteHealthz, RouteReadyz,
	} {
		path := strings.NewReplacer("{name}", "j", "{gpuType}", "v100", "{team}", "team-a").Replace(route)
		for _, m := range probeMethods {
			r, _ := http.NewRequest(m, path, nil)
			if _, pattern := f.srv.mux.Handler(r); pattern != "/" && pattern != "" {
				seen[pattern] = true
			}
		}
	}
	for pattern := range seen {
		_, guarded := routeAttributes[pattern]
		if guarded == openRoutes[pattern] {
			t.Errorf("route %q: in routeAttributes %v, in openRoutes %v; want exactly one", pattern, guarded, openRoutes[pattern])
		}
	}
	for pattern := range routeAttributes {
		if !seen[pattern] {
			t.Errorf("routeAttributes has %q, which the server does not register", pattern)
		}
	}
	nobody := auth.User{Name: "nobody"}
	for _, pattern := range []string{"GET " + RouteMetrics, "GET " + RouteOpenAPI} {
		if ok, reason, _ := auth.NewRoles("", "").Authorize(t.Context(), nobody, routeAttributes[pattern]); !ok {
			t.Errorf("%s: refused to an authenticated caller in no group: %s", pattern, reason)
		}
	}
}

func TestNewWantsAuthenticatorAndAuthorizerTogether(t *testing.T) {
	cfg := newFixture(t).srv.cfg
	cfg.Authorizer = auth.NewRoles("", "")
	if _, err := New(cfg); err == nil {
		t.Error("New with an authorizer and no authenticator succeeded")
	}
}
