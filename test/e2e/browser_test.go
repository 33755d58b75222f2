package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// TestBrowserRequestsToTheBinary sends the server, listening on
// 127.0.0.1, what a web page can make a browser send: a cross-origin
// "simple" POST (no preflight) and a DNS-rebound request under a foreign
// Host. Both are refused and create or change nothing, while a
// same-origin JSON request passes.
func TestBrowserRequestsToTheBinary(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn")
	base := "http://" + srv.Addr
	_, port, _ := net.SplitHostPort(srv.Addr)
	send := func(method, path, ctype, body string, header map[string]string, host string) (int, api.Error) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}

	code, e := send("POST", api.RouteJobs, "text/plain", string(manifest("csrf", 1, 2, 3)),
		map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, "")
	if code != http.StatusForbidden || e.Error.Reason != "CrossOrigin" {
		t.Errorf("cross-origin text/plain POST: %d %+v, want 403 CrossOrigin", code, e.Error)
	}
	code, e = send("PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "SRJF"}`,
		map[string]string{"Origin": "http://attacker.example:" + port}, "attacker.example:"+port)
	if code != http.StatusForbidden || e.Error.Reason != "UnknownHost" {
		t.Errorf("PUT algorithm under Host attacker.example: %d %+v, want 403 UnknownHost", code, e.Error)
	}
	if code, e = send("GET", api.RouteJobs, "", "", nil, "attacker.example"); code != http.StatusForbidden {
		t.Errorf("GET jobs under Host attacker.example: %d %+v, want 403", code, e.Error)
	}

	c := srv.Client()
	ctx := ctxT(t)
	if jobs, err := c.ListJobs(ctx, client.ListOptions{}); err != nil || len(jobs) != 0 {
		t.Errorf("after refused requests: %d jobs (%v), want none", len(jobs), err)
	}
	if sch, err := c.GetScheduler(ctx, "v100"); err != nil || sch.Algorithm == "SRJF" {
		t.Errorf("after a refused PUT: algorithm %q (%v), want it unchanged", sch.Algorithm, err)
	}

	code, e = send("PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "SRJF"}`,
		map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, "")
	if code != http.StatusOK {
		t.Errorf("same-origin JSON PUT: %d %+v, want 200", code, e.Error)
	}
	if sch, err := c.GetScheduler(ctx, "v100"); err != nil || sch.Algorithm != "SRJF" {
		t.Errorf("after a same-origin PUT: algorithm %q (%v), want SRJF", sch.Algorithm, err)
	}
}
