package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

// realAPI is the real API server, without authentication, on the
// embedded store, scheduling gpuTypes: the quota commands' tests use it
// rather than a fake, so that they cover what the server accepts.
func realAPI(t *testing.T, gpuTypes ...string) (url string, st store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(ctx) })
	q, err := queue.Open(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	reg := prometheus.NewRegistry()
	srv, err := api.New(api.Config{Store: st, Queue: q, GPUTypes: gpuTypes, Algorithms: algorithm.Builtin(),
		DefaultAlgorithm: algorithm.DefaultName, DefaultRateLimit: 30 * time.Second, Metrics: metrics.New(reg), Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, st
}

func TestQuotaCommands(t *testing.T) {
	url, st := realAPI(t, "a100", "v100")
	// team-c has jobs on v100 and no quota.
	if err := st.PutStatus(context.Background(), "v100", store.SchedulerStatus{GPUs: 16,
		Teams: []store.TeamState{{Team: "team-c", GPUs: 6, Entitled: 4, Demand: 8, Running: 2, Waiting: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "quota", "team-a", "--guarantee", "8", "--limit", "16", "--gpu-type", "v100"},
			"Quota of team-a on v100 set: guarantee 8, limit 16, weight 1\n"},
		{[]string{"set", "quota", "team-c", "--guarantee", "2", "--limit", "6", "--weight", "0.5", "--gpu-type", "v100"},
			"Quota of team-c on v100 set: guarantee 2, limit 6, weight 0.5\n"},
		{[]string{"set", "quota", "team-b", "--guarantee", "0", "--weight", "2", "--gpu-type", "a100"},
			"Quota of team-b on a100 set: guarantee 0, limit none, weight 2\n"},
		{[]string{"get", "teams", "--gpu-type", "v100"}, "" +
			"TEAM     QUOTA   GUARANTEE   LIMIT   WEIGHT   IN-USE   ENTITLED   DEMAND   RUNNING   WAITING   USAGE\n" +
			"team-a   set     8           16      1        0        0          0        0         0         within guarantee\n" +
			"team-c   set     2           6       0.5      6        4          8        2         1         borrowing 4, at limit\n"},
		{[]string{"get", "teams", "team-c", "team-z", "--gpu-type", "v100"}, "" +
			"TEAM     QUOTA     GUARANTEE   LIMIT   WEIGHT   IN-USE   ENTITLED   DEMAND   RUNNING   WAITING   USAGE\n" +
			"team-c   set       2           6       0.5      6        4          8        2         1         borrowing 4, at limit\n" +
			"team-z   default   0           -       1        0        0          0        0         0         within guarantee\n"},
		{[]string{"get", "teams"}, "" +
			"GPU-TYPE   TEAM     QUOTA   GUARANTEE   LIMIT   WEIGHT   IN-USE   ENTITLED   DEMAND   RUNNING   WAITING   USAGE\n" +
			"a100       team-b   set     0           -       2        0        0          0        0         0         within guarantee\n" +
			"v100       team-a   set     8           16      1        0        0          0        0         0         within guarantee\n" +
			"v100       team-c   set     2           6       0.5      6        4          8        2         1         borrowing 4, at limit\n"},
		{[]string{"get", "teams", "-o", "name"}, "team-b\nteam-a\nteam-c\n"},
		{[]string{"delete", "quota", "team-a", "--gpu-type", "v100"}, "Quota of team-a on v100 deleted\n"},
		{[]string{"get", "teams", "--gpu-type", "v100", "-o", "name"}, "team-c\n"},
	} {
		if got := mustVoda(t, append(c.args, "--server", url)...); got != c.want {
			t.Errorf("voda %s:\n%s\nwant:\n%s", strings.Join(c.args, " "), got, c.want)
		}
	}
	// -o json of one GPU type is its TeamList; -o yaml of several, a list.
	var one api.TeamList
	if err := json.Unmarshal([]byte(mustVoda(t, "get", "teams", "--gpu-type", "v100", "-o", "json", "--server", url)), &one); err != nil ||
		one.GPUType != "v100" || one.GPUs != 16 || one.Default.Weight != 1 || len(one.Items) != 1 || one.Items[0].Weight != 0.5 {
		t.Errorf("get teams -o json: %+v, %v", one, err)
	}
	var all teamLists
	if err := yaml.Unmarshal([]byte(mustVoda(t, "get", "teams", "-o", "yaml", "--server", url)), &all); err != nil ||
		len(all.Items) != 2 || all.Items[0].GPUType != "a100" || all.Items[0].Items[0].Team != "team-b" {
		t.Errorf("get teams -o yaml: %+v, %v", all, err)
	}
	rec, err := st.GetScheduler(context.Background(), "v100")
	if err != nil || len(rec.Settings.Quotas) != 1 || rec.Settings.Quotas[0].Team != "team-c" || rec.Settings.Quotas[0].Weight != 0.5 {
		t.Errorf("v100's stored quotas %+v (%v), want team-c's alone", rec.Settings.Quotas, err)
	}
}

func TestQuotaCommandErrors(t *testing.T) {
	url, st := realAPI(t, "a100", "v100")
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"set", "quota", "--gpu-type", "v100"}, []string{"missing the team (its namespace): voda set quota TEAM", "voda get teams lists them"}},
		{[]string{"set", "quota", "team-a", "--gpu-type", "v100"}, []string{"missing --guarantee"}},
		{[]string{"set", "quota", "team-a", "--guarantee", "8"}, []string{"several GPU types (a100, v100): choose one with --gpu-type"}},
		{[]string{"set", "quota", "team-a", "--guarantee", "8", "--limit", "4", "--gpu-type", "v100"}, []string{"limit 4 below guarantee 8", "field limit"}},
		{[]string{"set", "quota", "Team_A", "--guarantee", "1", "--gpu-type", "v100"}, []string{"want a namespace name", "field team"}},
		{[]string{"set", "quota", "team-a", "--guarantee", "1", "--weight", "-1", "--gpu-type", "v100"}, []string{"weight -1", "field weight"}},
		{[]string{"set", "quota", "team-a", "--guarantee", "1", "--gpu-type", "h100"}, []string{"no scheduler"}},
		{[]string{"delete", "quota", "--gpu-type", "v100"}, []string{"missing the team (its namespace): voda delete quota TEAM..."}},
		{[]string{"delete", "quota", "team-a", "team-b", "--gpu-type", "v100"},
			[]string{`delete quota of team-a: `, `"team-a" has no quota on v100`, `delete quota of team-b: `}},
		{[]string{"get", "teams", "--gpu-type", "h100"}, []string{"teams of h100", "no scheduler"}},
	} {
		wantError(t, append(c.args, "--server", url), c.wants...)
	}
	if rec, err := st.GetScheduler(context.Background(), "v100"); err == nil && len(rec.Settings.Quotas) != 0 {
		t.Errorf("stored quotas %+v after refusals only", rec.Settings.Quotas)
	}
	// An empty list says so on stderr.
	stdout, stderr, err := runVoda(t, "", "get", "teams", "--server", url)
	if err != nil || stdout != "" || !strings.Contains(stderr, "No teams found") {
		t.Errorf("get teams with none: %q, %q, %v", stdout, stderr, err)
	}
}

// The plugin has the quota commands, against the server its context (or
// --server) names.
func TestPluginQuotaCommands(t *testing.T) {
	url, _ := realAPI(t, "v100")
	kc := pluginKubeconfig(t)
	if out, err := runPlugin(t, kc, "", "set", "quota", "team-a", "--guarantee", "4", "--server", url); err != nil ||
		out != "Quota of team-a on v100 set: guarantee 4, limit none, weight 1\n" {
		t.Fatalf("kubectl voda set quota: %q, %v", out, err)
	}
	if out, err := runPlugin(t, kc, "", "get", "teams", "-o", "name", "--server", url); err != nil || out != "team-a\n" {
		t.Errorf("kubectl voda get teams: %q, %v", out, err)
	}
	if out, err := runPlugin(t, kc, "", "delete", "quota", "team-a", "--server", url); err != nil || !strings.Contains(out, "deleted") {
		t.Errorf("kubectl voda delete quota: %q, %v", out, err)
	}
}
