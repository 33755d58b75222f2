package browser

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/test/vodatest"
)

// dashboardReport is what testdata/dashboard.cjs prints.
type dashboardReport struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Steps      struct {
		Nodes          int      `json:"nodes"`
		CreateStatus   int      `json:"createStatus"`
		Job            string   `json:"job"`
		RowMs          float64  `json:"rowMs"`
		GPUsMs         float64  `json:"gpusMs"`
		CompletedMs    float64  `json:"completedMs"`
		Reloads        int      `json:"reloads"`
		JobPage        string   `json:"jobPage"`
		JobPageHash    string   `json:"jobPageHash"`
		JobPageText    string   `json:"jobPageText"`
		TimelineCharts int      `json:"timelineCharts"`
		TimelineJobs   []string `json:"timelineJobs"`
		HistoryEntries int      `json:"historyEntries"`
		WaitingJob     string   `json:"waitingJob"`
		WaitingTicks   []string `json:"waitingTicks"`
		Refusal        string   `json:"refusal"`
	} `json:"steps"`
}

// TestDashboard runs the dashboard against a real server on the
// simulated cluster, in Chromium: a job submitted through the API shows in
// the jobs table and its GPUs in the cluster view within 2 s, its
// completion shows without a reload, clicking it opens its page, and a
// user who is not an admin is refused a settings change.
func TestDashboard(t *testing.T) {
	node, modules, chromium := browserTools(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token,root,0,voda:admins\nuser-token,alice,1,\"team-a,voda:users\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := vodatest.StartServer(t, "--data-dir", filepath.Join(dir, "data"), "--sim-nodes", "v100=2x4",
		"--speed", "60", "--token-auth-file", tokens, "--log-level", "warn")
	manifest := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(manifest, vodatest.Manifest("dash-job", 2, 4, 2), 0o600); err != nil {
		t.Fatal(err)
	}
	// More GPUs than the cluster has: it waits for good.
	waiting := filepath.Join(dir, "waiting.yaml")
	if err := os.WriteFile(waiting, vodatest.Manifest("dash-wait", 16, 16, 2), 0o600); err != nil {
		t.Fatal(err)
	}
	shots := artifacts(t)
	cmd := exec.Command(node, filepath.Join(repoRoot(t), "test", "browser", "testdata", "dashboard.cjs"),
		srv.URL(), "admin-token", "user-token", manifest, waiting, shots)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "VODA_CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dashboard.cjs: %v\n%s", err, stderr.String())
	}
	var r dashboardReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("dashboard.cjs printed %q: %v", stdout.String(), err)
	}
	s := r.Steps
	t.Logf("job %s: row after %.0f ms, GPUs after %.0f ms, completed after %.0f ms; screenshots in %s", s.Job, s.RowMs, s.GPUsMs, s.CompletedMs, shots)
	if s.Nodes != 2 {
		t.Errorf("cluster view shows %d nodes, want 2", s.Nodes)
	}
	if s.CreateStatus != 201 {
		t.Errorf("create: %d, want 201", s.CreateStatus)
	}
	if s.RowMs > 2000 || s.GPUsMs > 2000 {
		t.Errorf("the job showed after %.0f ms (row) and %.0f ms (GPUs): want within 2 s", s.RowMs, s.GPUsMs)
	}
	if s.Reloads != 0 {
		t.Errorf("the page reloaded %d times while the job ran", s.Reloads)
	}
	if !strings.Contains(s.JobPage, s.Job) || !strings.HasPrefix(s.JobPageHash, "#/jobs/") {
		t.Errorf("clicking the job opened %q (%s), want its page", s.JobPage, s.JobPageHash)
	}
	for _, want := range []string{"status", "Completed", "waiting / running / total", "Placement history", "v100-node-"} {
		if !strings.Contains(s.JobPageText, want) {
			t.Errorf("the job's page lacks %q:\n%s", want, s.JobPageText)
		}
	}
	if strings.Contains(s.JobPageText, "[object") || strings.Contains(s.JobPageText, "undefined") {
		t.Errorf("the job's page shows a rendering bug:\n%s", s.JobPageText)
	}
	if s.HistoryEntries < 2 || !strings.Contains(s.JobPageText, "no GPUs") {
		t.Errorf("the job's placement history has %d entries, want its start and its end (no GPUs):\n%s", s.HistoryEntries, s.JobPageText)
	}
	if s.TimelineCharts != 1 || !slices.Contains(s.TimelineJobs, s.Job) {
		t.Errorf("timeline after a reload: %d charts, jobs %v; want 1 chart with %s", s.TimelineCharts, s.TimelineJobs, s.Job)
	}
	// At --speed 60, 2.5 s of real time are 150 s of the server's.
	if len(s.WaitingTicks) != 2 || s.WaitingTicks[0] == s.WaitingTicks[1] || !strings.Contains(s.WaitingTicks[1], "min") {
		t.Errorf("waiting time of %s read 2.5 s apart: %q, want it advanced past a minute", s.WaitingJob, s.WaitingTicks)
	}
	if !strings.Contains(s.Refusal, "403") {
		t.Errorf("a user's settings change: %q, want a 403 refusal", s.Refusal)
	}
	for _, c := range r.Console {
		// The browser logs the refused request itself.
		if strings.HasPrefix(c, "user ") && strings.Contains(c, "status of 403") {
			continue
		}
		t.Errorf("console: %s", c)
	}
	for _, e := range r.PageErrors {
		t.Errorf("page error: %s", e)
	}
}
