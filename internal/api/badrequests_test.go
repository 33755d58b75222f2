package api

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the bad-requests table in docs/api.md")

// badRequests are requests the API must refuse, with the status and the
// field it must name. The table in docs/api.md is generated from them.
var badRequests = []struct {
	what                      string
	method, path, ctype, body string
	code                      int
	field                     string
}{
	{"manifest: min above max", "POST", RouteJobs, "application/yaml", mpiJob("a", "4", "2", "v100"), 400, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[MIN_NUM_PROC]"},
	{"manifest: unknown GPU type", "POST", RouteJobs, "application/yaml", mpiJob("a", "1", "2", "k80"), 400, "spec.mpiReplicaSpecs.Worker.template.spec.nodeSelector[vodascheduler/accelerator]"},
	{"manifest: max 0", "POST", RouteJobs, "application/yaml", mpiJob("a", "1", "0", "v100"), 400, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[MAX_NUM_PROC]"},
	{"manifest: name with capitals", "POST", RouteJobs, "application/yaml", mpiJob("MyJob", "1", "2", "v100"), 400, "metadata.name"},
	{"manifest: not YAML", "POST", RouteJobs, "application/yaml", "kind: [", 400, "body"},
	{"manifest: empty body", "POST", RouteJobs, "application/yaml", "", 400, "body"},
	{"manifest: a Deployment", "POST", RouteJobs, "application/yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", 400, "kind"},
	{"manifest: larger than 1 MiB", "POST", RouteJobs, "application/yaml", "# " + strings.Repeat("x", 1<<20), 413, "body"},
	{"manifest: Content-Type image/png", "POST", RouteJobs, "image/png", mpiJob("a", "1", "2", "v100"), 415, "Content-Type"},
	{"manifest: Content-Type text/plain", "POST", RouteJobs, "text/plain", mpiJob("a", "1", "2", "v100"), 415, "Content-Type"},
	{"manifest: no Content-Type (legacy route only)", "POST", RouteJobs, "", mpiJob("a", "1", "2", "v100"), 415, "Content-Type"},
	{"manifest: form Content-Type (legacy route only)", "POST", RouteJobs, "application/x-www-form-urlencoded", mpiJob("a", "1", "2", "v100"), 415, "Content-Type"},
	{"dry run: dryRun=true", "POST", RouteJobs + "?dryRun=true", "application/yaml", mpiJob("a", "1", "2", "v100"), 400, "dryRun"},
	{"dry run: invalid manifest", "POST", RouteJobs + "?dryRun=All", "application/yaml", mpiJob("a", "4", "2", "v100"), 400, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[MIN_NUM_PROC]"},
	{"legacy POST /training: min above max", "POST", RouteLegacyJobs, "", mpiJob("a", "4", "2", "v100"), 400, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[MIN_NUM_PROC]"},
	{"get: unknown job", "GET", "/api/v1/jobs/nope", "", "", 404, "name"},
	{"delete: unknown job", "DELETE", "/api/v1/jobs/nope", "", "", 404, "name"},
	{"legacy DELETE /training: empty body", "DELETE", RouteLegacyJobs, "", "", 400, "body"},
	{"legacy DELETE /training: unknown job", "DELETE", RouteLegacyJobs, "", "nope", 404, "name"},
	{"list: bad status", "GET", RouteJobs + "?status=Done", "", "", 400, "status"},
	{"list: bad live flag", "GET", RouteJobs + "?live=maybe", "", "", 400, "live"},
	{"list: limit 0", "GET", RouteJobs + "?limit=0", "", "", 400, "limit"},
	{"list: limit over the maximum", "GET", RouteJobs + "?limit=10000", "", "", 400, "limit"},
	{"list: a continue token the server did not issue", "GET", RouteJobs + "?continue=bm90LWEtdG9rZW4", "", "", 400, "continue"},
	{"priority: missing", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{}`, 400, "priority"},
	{"priority: -1", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": -1}`, 400, "priority"},
	{"priority: 101", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": 101}`, 400, "priority"},
	{"priority: not a number", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": "high"}`, 400, "priority"},
	{"priority: unknown field", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": 1, "urgent": true}`, 400, "urgent"},
	{"priority: key in capitals", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"PRIORITY": 1}`, 400, "PRIORITY"},
	{"priority: given twice", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": 1, "priority": 2}`, 400, "priority"},
	{"priority: not an object", "PUT", "/api/v1/jobs/nope/priority", "application/json", `[1]`, 400, "body"},
	{"priority: trailing data", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": 1} {}`, 400, "body"},
	{"priority: unknown job", "PUT", "/api/v1/jobs/nope/priority", "application/json", `{"priority": 1}`, 404, "name"},
	{"scheduler: unknown GPU type", "GET", "/api/v1/schedulers/k80", "", "", 404, "gpuType"},
	{"algorithm: unknown", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "LIFO"}`, 400, "algorithm"},
	{"algorithm: unknown parameter", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "Tiresias", "params": {"speed": "2"}}`, 400, "params"},
	{"algorithm: bad parameter value", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "Tiresias", "params": {"threshold": "soon"}}`, 400, "params"},
	{"algorithm: key in capitals", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"Algorithm": "SRJF"}`, 400, "Algorithm"},
	{"algorithm: parameter given twice", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "Tiresias", "params": {"threshold": "1", "threshold": "2"}}`, 400, "params.threshold"},
	{"algorithm: unknown GPU type", "PUT", "/api/v1/schedulers/k80/algorithm", "application/json", `{"algorithm": "SRJF"}`, 404, "gpuType"},
	{"rate limit: missing", "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{}`, 400, "seconds"},
	{"rate limit: negative", "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": -5}`, 400, "seconds"},
	{"rate limit: given twice", "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 5, "seconds": 0}`, 400, "seconds"},
	{"rate limit: not sent as JSON", "PUT", "/api/v1/schedulers/v100/ratelimit", "text/plain", `{"seconds": 5}`, 415, "Content-Type"},
	{"rate limit: over a day", "PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 90000}`, 400, "seconds"},
	{"quota: limit below guarantee", "PUT", "/api/v1/schedulers/v100/teams/team-a", "application/json", `{"guarantee": 8, "limit": 4}`, 400, "limit"},
	{"quota: negative weight", "PUT", "/api/v1/schedulers/v100/teams/team-a", "application/json", `{"weight": -1}`, 400, "weight"},
	{"quota: a team that is no namespace", "PUT", "/api/v1/schedulers/v100/teams/Team_A", "application/json", `{"guarantee": 1}`, 400, "team"},
	{"quota: unknown field", "PUT", "/api/v1/schedulers/v100/teams/team-a", "application/json", `{"guarantee": 1, "borrow": true}`, 400, "borrow"},
	{"quota: delete a team without one", "DELETE", "/api/v1/schedulers/v100/teams/team-a", "", "", 404, "team"},
	{"teams: unknown GPU type", "GET", "/api/v1/schedulers/k80/teams", "", "", 404, "gpuType"},
	{"legacy PUT /ratelimit: not a number", "PUT", RouteLegacyLimit, "", "fast", 400, "body"},
	{"legacy PUT /algorithm: unknown", "PUT", RouteLegacyAlgo, "", "LIFO", 400, "algorithm"},
	{"legacy POST /training: Content-Type image/png", "POST", RouteLegacyJobs, "image/png", mpiJob("a", "1", "2", "v100"), 415, "Content-Type"},
	{"unknown route", "GET", "/api/v2/jobs", "", "", 404, ""},
	{"wrong method", "DELETE", RouteJobs, "", "", 405, ""},
	{"wrong method, legacy route", "PATCH", RouteLegacyJobs, "", "", 405, ""},
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	var rows []string
	for _, c := range badRequests {
		code, b := f.do(c.method, c.path, c.ctype, c.body)
		var e Error
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("%s: body is not an API error: %.200s", c.what, b)
			continue
		}
		if code != c.code || e.Error.Code != c.code || e.Error.Field != c.field || e.Error.Message == "" {
			t.Errorf("%s: got %d field %q (%s), want %d field %q", c.what, code, e.Error.Field, e.Error.Message, c.code, c.field)
		}
		msg := e.Error.Message
		if len(msg) > 160 {
			msg = msg[:157] + "..."
		}
		rows = append(rows, fmt.Sprintf("| %s | `%s %s` | %d %s | `%s` | %s |", c.what, c.method, c.path,
			code, http.StatusText(code), e.Error.Field, strings.ReplaceAll(msg, "|", `\|`)))
	}
	checkDocTable(t, "../../docs/api.md", "bad-requests", "| request | route | status | field | message |\n|---|---|---|---|---|\n"+strings.Join(rows, "\n")+"\n")
}

// checkDocTable compares the text between the doc's begin and end markers
// with want, or rewrites it with -update.
func checkDocTable(t *testing.T, path, marker, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+marker+":begin -->\n", "<!-- "+marker+":end -->"
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q and %q markers", path, begin, end)
	}
	got := doc[i+len(begin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the table in %s is out of date; run: go test ./internal/api -run TestBadRequests -update", path)
}
