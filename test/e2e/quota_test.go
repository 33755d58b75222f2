package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// TestQuotaAPI: the binary with --token-auth-file and --quotas-file
// seeds the file's quotas, answers 401 to an anonymous caller and 403 to
// a user changing a quota, lets an admin set and delete one (with the CLI
// too), shows the teams to users, and leaves the stored quotas alone at
// a restart with the same file: the API owns them.
func TestQuotaAPI(t *testing.T) {
	data, quotas := t.TempDir(), filepath.Join(t.TempDir(), "quotas.yaml")
	if err := os.WriteFile(quotas, []byte("- {gpuType: v100, team: team-a, guarantee: 2, limit: 4}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--data-dir", data, "--sim-nodes", "v100=1x4", "--log-level", "warn", "--token-auth-file", tokenFile(t), "--quotas-file", quotas}
	srv := startServer(t, args...)
	base, hc := srv.URL(), srv.HTTPClient()
	const (
		admin = "admin-token-0123456789"
		user  = "user-token-0123456789"
		teams = "/api/v1/schedulers/v100/teams"
	)
	for _, c := range []struct {
		name, token, method, path, body string
		want                            int
		wantBody                        string
	}{
		{"seeded, read by a user", user, "GET", teams, "", 200, `"team": "team-a",
      "quota": true,
      "guarantee": 2,
      "limit": 4,`},
		{"anonymous reads", "", "GET", teams, "", 401, "requires a bearer token"},
		{"anonymous sets", "", "PUT", teams + "/team-b", `{"guarantee": 1}`, 401, "requires a bearer token"},
		{"anonymous deletes", "", "DELETE", teams + "/team-a", "", 401, "requires a bearer token"},
		{"user sets", user, "PUT", teams + "/team-b", `{"guarantee": 1}`, 403, `user \"alice\" may not update teams team-b: needs the admin role`},
		{"user deletes", user, "DELETE", teams + "/team-a", "", 403, `may not delete teams team-a: needs the admin role`},
		{"scraper reads", "scrape-token-0123456789", "GET", teams, "", 403, "may not list teams"},
		{"admin sets", admin, "PUT", teams + "/team-b", `{"guarantee": 1, "weight": 2}`, 200, `"weight": 2`},
		{"admin sets a bad one", admin, "PUT", teams + "/team-b", `{"guarantee": 4, "limit": 2}`, 400, `"field": "limit"`},
		{"a user sees the teams in the schedulers", user, "GET", api.RouteSchedulers, "", 200, `"team": "team-b"`},
		{"admin deletes", admin, "DELETE", teams + "/team-a", "", 204, ""},
		{"admin deletes again", admin, "DELETE", teams + "/team-a", "", 404, "has no quota"},
	} {
		code, _, b := call(t, hc, c.token, c.method, base+c.path, "application/json", []byte(c.body))
		if code != c.want || !strings.Contains(string(b), c.wantBody) {
			t.Errorf("%s: %d %s, want %d containing %s", c.name, code, b, c.want, c.wantBody)
		}
	}

	cli := func(token string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary(t), append(args, "--server", base, "--token", token)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli(user, "set", "quota", "team-c", "--guarantee", "1"); err == nil || !strings.Contains(out, "needs the admin role") {
		t.Errorf("voda set quota as a user: %v\n%s", err, out)
	}
	if out, err := cli(admin, "set", "quota", "team-c", "--guarantee", "1", "--limit", "3"); err != nil || out != "Quota of team-c on v100 set: guarantee 1, limit 3, weight 1\n" {
		t.Fatalf("voda set quota as an admin: %v\n%s", err, out)
	}
	wantTeams := func(when string, want ...string) {
		t.Helper()
		out, err := cli(user, "get", "teams", "--gpu-type", "v100", "-o", "json")
		var list api.TeamList
		if err != nil || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("%s: voda get teams: %v\n%s", when, err, out)
		}
		var got []string
		for _, tm := range list.Items {
			if tm.Quota {
				got = append(got, tm.Team)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: teams with quotas %v, want %v", when, got, want)
		}
	}
	wantTeams("after the changes", "team-b", "team-c")

	// A restart with the same file seeds nothing: v100 has quotas, which
	// the API changed.
	srv.Stop()
	srv = startServer(t, args...)
	base = srv.URL()
	wantTeams("after a restart", "team-b", "team-c")
}
