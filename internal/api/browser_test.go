package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBrowserSafety sends what a web page can make a browser send, and
// what the CLI, Go programs and curl send, to a server that listens on a
// loopback address.
func TestBrowserSafety(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(c *Config) { c.ListenAddr = "127.0.0.1:55587" })
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	self := "http://" + u.Host // the test server's own origin
	const form = "application/x-www-form-urlencoded"
	job := mpiJob("b", "1", "2", "v100")
	browser := func(origin, site string) map[string]string {
		return map[string]string{"Origin": origin, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"}
	}
	tests := []struct {
		name         string
		method, path string
		ctype, body  string
		host         string // the Host header, if not the server's address
		header       map[string]string
		code         int
		reason       Reason
	}{
		{name: "cross-origin simple request", method: "POST", path: RouteJobs, ctype: "text/plain", body: job,
			header: browser("http://attacker.example", "cross-site"), code: 403, reason: "CrossOrigin"},
		{name: "cross-origin, Origin only (no Fetch Metadata)", method: "POST", path: RouteJobs, ctype: "text/plain", body: job,
			header: map[string]string{"Origin": "http://attacker.example"}, code: 403, reason: "CrossOrigin"},
		{name: "cross-origin JSON request", method: "PUT", path: "/api/v1/schedulers/v100/ratelimit", ctype: "application/json", body: `{"seconds": 5}`,
			header: map[string]string{"Origin": "http://attacker.example"}, code: 403, reason: "CrossOrigin"},
		{name: "sandboxed page: Origin null", method: "POST", path: RouteJobs, ctype: "application/yaml", body: job,
			header: map[string]string{"Origin": "null"}, code: 403, reason: "CrossOrigin"},
		{name: "same-site, another port", method: "POST", path: RouteJobs, ctype: "text/plain", body: job,
			header: browser("http://127.0.0.1:1", "same-site"), code: 403, reason: "CrossOrigin"},
		{name: "Sec-Fetch-Site cross-site without Origin", method: "DELETE", path: "/api/v1/jobs/nope",
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}, code: 403, reason: "CrossOrigin"},
		{name: "foreign Host (DNS rebinding) reading", method: "GET", path: RouteJobs,
			host: "attacker.example", code: 403, reason: "UnknownHost"},
		{name: "foreign Host (DNS rebinding) writing", method: "PUT", path: "/api/v1/schedulers/v100/algorithm", ctype: "application/json", body: `{"algorithm": "SRJF"}`,
			host: "attacker.example:55587", header: map[string]string{"Origin": "http://attacker.example:55587"}, code: 403, reason: "UnknownHost"},
		{name: "Host localhost with another port", method: "GET", path: RouteJobs, host: "localhost:8080", code: 200},
		{name: "Host [::1]", method: "GET", path: RouteJobs, host: "[::1]", code: 200},
		{name: "same-origin JSON request", method: "PUT", path: "/api/v1/schedulers/v100/ratelimit", ctype: "application/json; charset=utf-8", body: `{"seconds": 5}`,
			header: map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, code: 200},
		{name: "Go client: JSON, no Origin", method: "PUT", path: "/api/v1/schedulers/v100/algorithm", ctype: "application/json", body: `{"algorithm": "SRJF"}`, code: 200},
		{name: "curl: YAML manifest", method: "POST", path: RouteJobs, ctype: "application/yaml", body: job, code: 201},
		{name: "+json suffix", method: "PUT", path: "/api/v1/schedulers/v100/ratelimit", ctype: "application/merge-patch+json", body: `{"seconds": 5}`, code: 200},
		{name: "curl -X DELETE without a body", method: "DELETE", path: "/api/v1/jobs/nope", code: 404, reason: "NotFound"},
		{name: "text/plain manifest to /api/v1/jobs", method: "POST", path: RouteJobs, ctype: "text/plain", body: job, code: 415, reason: "UnsupportedMediaType"},
		{name: "manifest without Content-Type to /api/v1/jobs", method: "POST", path: RouteJobs, body: job, code: 415, reason: "UnsupportedMediaType"},
		{name: "JSON body without Content-Type", method: "PUT", path: "/api/v1/schedulers/v100/ratelimit", body: `{"seconds": 5}`, code: 415, reason: "UnsupportedMediaType"},
		{name: "legacy: original CLI, no Content-Type", method: "POST", path: RouteLegacyJobs, body: mpiJob("cli", "1", "2", "v100"), code: 201},
		{name: "legacy: curl form POST", method: "POST", path: RouteLegacyJobs, ctype: form, body: mpiJob("curl", "1", "2", "v100"), code: 201},
		{name: "legacy: curl form PUT", method: "PUT", path: RouteLegacyLimit, ctype: form, body: "30", code: 200},
		{name: "legacy: same-origin browser form", method: "PUT", path: RouteLegacyLimit, ctype: form, body: "30",
			header: map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"}, code: 200},
		{name: "legacy: cross-origin form", method: "POST", path: RouteLegacyJobs, ctype: form, body: job,
			header: browser("http://attacker.example", "cross-site"), code: 403, reason: "CrossOrigin"},
		{name: "legacy: browser form with own Origin, no Fetch Metadata", method: "POST", path: RouteLegacyJobs, ctype: form, body: job,
			header: map[string]string{"Origin": self}, code: 403, reason: "BrowserRequest"},
		{name: "legacy: Sec-Fetch-Mode only", method: "PUT", path: RouteLegacyAlgo, body: "SRJF",
			header: map[string]string{"Sec-Fetch-Mode": "no-cors"}, code: 403, reason: "BrowserRequest"},
		{name: "no route: 405 as before", method: "POST", path: RouteSchedulers, code: 405, reason: "MethodNotAllowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, f.url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e Error
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tc.code || e.Error.Reason != tc.reason {
				t.Errorf("%d %+v, want %d %s", resp.StatusCode, e.Error, tc.code, tc.reason)
			}
			if tc.code >= 400 && e.Error.Message == "" {
				t.Errorf("%d without a message", resp.StatusCode)
			}
		})
	}
}

// A server listening on all interfaces is reached by names it cannot
// list, so it does not check Host; it still refuses cross-origin changes.
func TestBrowserSafetyNotLoopback(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(c *Config) { c.ListenAddr = "0.0.0.0:55587" })
	req, _ := http.NewRequest("GET", f.url+RouteJobs, nil)
	req.Host = "voda.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with Host voda.example: %d, want 200", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", f.url+RouteJobs, strings.NewReader(mpiJob("x", "1", "2", "v100")))
	req.Host = "voda.example"
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "https://attacker.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d, want 403", resp.StatusCode)
	}
}

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"http://localhost:55587", "localhost:55587", true},
		{"http://LOCALHOST:55587", "localhost:55587", true},
		{"http://voda.example", "voda.example:80", true},
		{"http://voda.example:80", "voda.example", true},
		{"https://voda.example", "voda.example", false}, // the request is not TLS
		{"http://voda.example:8080", "voda.example", false},
		{"http://[::1]:55587", "[::1]:55587", true},
		{"null", "localhost:55587", false},
		{"http://user@localhost:55587", "localhost:55587", false},
		{"localhost:55587", "localhost:55587", false},
	} {
		r := &http.Request{Host: c.host}
		if got := sameOrigin(c.origin, r); got != c.want {
			t.Errorf("sameOrigin(%q) with Host %q = %v, want %v", c.origin, c.host, got, c.want)
		}
	}
}

// FuzzBrowserHeaders: no Origin, Host or Sec-Fetch-Site panics the
// checks, and an Origin passes as the request's own only when it names
// the same host.
func FuzzBrowserHeaders(f *testing.F) {
	f.Add("http://localhost:55587", "localhost:55587", "same-origin")
	f.Add("null", "[::1]:80", "cross-site")
	f.Add("http://[::1", "127.0.0.1", "")
	f.Add("http://a@b:c/d?e#f", "b:c", "none")
	f.Fuzz(func(t *testing.T, origin, host, site string) {
		r := &http.Request{Method: "POST", Host: host, Header: http.Header{}}
		r.Header.Set("Origin", origin)
		r.Header.Set("Sec-Fetch-Site", site)
		_ = loopbackHost(host)
		_ = browserSent(r)
		field, why := crossOrigin(r)
		if (field == "") != (why == "") {
			t.Errorf("crossOrigin = %q, %q: a field without a reason or the reverse", field, why)
		}
		if sameOrigin(origin, r) {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Hostname(), (&url.URL{Host: host}).Hostname()) {
				t.Errorf("sameOrigin(%q) with Host %q, a different host", origin, host)
			}
		}
	})
}
