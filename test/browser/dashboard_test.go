package browser

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/test/vodatest"
)

// dashboardReport is what testdata/dashboard.cjs prints.
type dashboardReport struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Steps      struct {
		Nodes        int     `json:"nodes"`
		CreateStatus int     `json:"createStatus"`
		Job          string  `json:"job"`
		RowMs        float64 `json:"rowMs"`
		GPUsMs       float64 `json:"gpusMs"`
		// RequestsWhileWaiting are the paths the page requested between
		// the submission and the job's GPUs showing.
		RequestsWhileWaiting []string `json:"requestsWhileWaiting"`
		CompletedMs          float64  `json:"completedMs"`
		Reloads              int      `json:"reloads"`
		JobPage              string   `json:"jobPage"`
		JobPageHash          string   `json:"jobPageHash"`
		JobPageText          string   `json:"jobPageText"`
		TimelineCharts       int      `json:"timelineCharts"`
		TimelineJobs         []string `json:"timelineJobs"`
		HistoryEntries       int      `json:"historyEntries"`
		WaitingJob           string   `json:"waitingJob"`
		WaitingTicks         []string `json:"waitingTicks"`
		Refusal              string   `json:"refusal"`
	} `json:"steps"`
}

// TestDashboard runs the dashboard against a real server on the
// simulated cluster, in Chromium: a job submitted through the API shows in
// the jobs table and its GPUs in the cluster view through the open event
// stream (the page asks the server for nothing meanwhile: no reconnect,
// no polling), its completion shows without a reload, clicking it opens its page, and a
// user who is not an admin is refused a settings change.
func TestDashboard(t *testing.T) {
	browserTools(t) // before starting a server
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token-0123456789,root,0,voda:admins\nuser-token-0123456789,alice,1,\"team-a,voda:users\"\n"), 0o600); err != nil {
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
	var r dashboardReport
	runScript(t, &r, "dashboard.cjs", srv.URL(), "admin-token-0123456789", "user-token-0123456789", manifest, waiting, shots)
	s := r.Steps
	t.Logf("job %s: row after %.0f ms, GPUs after %.0f ms, completed after %.0f ms; screenshots in %s", s.Job, s.RowMs, s.GPUsMs, s.CompletedMs, shots)
	if s.Nodes != 2 {
		t.Errorf("cluster view shows %d nodes, want 2", s.Nodes)
	}
	if s.CreateStatus != 201 {
		t.Errorf("create: %d, want 201", s.CreateStatus)
	}
	// How soon is logged above, not asserted: on an idle machine the row
	// shows in about 0.4 s and the GPUs in 1.2 s (after the first
	// cycle); a busy one took 1.9 s and 3.2 s. That it came through the
	// stream is what the page can get wrong.
	if len(s.RequestsWhileWaiting) != 0 {
		t.Errorf("the page requested %q while the job appeared, want nothing: the open event stream brings it", s.RequestsWhileWaiting)
	}
	if s.Reloads != 0 {
		t.Errorf("the page reloaded %d times while the job ran", s.Reloads)
	}
	if !strings.Contains(s.JobPage, s.Job) || !strings.HasPrefix(s.JobPageHash, "#/jobs/") {
		t.Errorf("clicking the job opened %q (%s), want its page", s.JobPage, s.JobPageHash)
	}
	for _, want := range []string{"status", "Completed", "waiting / running / total", "GPUs held", "Placement history", "v100-node-"} {
		if !strings.Contains(s.JobPageText, want) {
			t.Errorf("the job's page lacks %q:\n%s", want, s.JobPageText)
		}
	}
	// A worker of one GPU, as every job this server takes: its page does
	// not dwell on it.
	if strings.Contains(s.JobPageText, "GPUs per worker") {
		t.Errorf("the page of a job of one GPU per worker shows GPUs per worker:\n%s", s.JobPageText)
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

// firstHourReport is what testdata/first-hour.cjs prints.
type firstHourReport struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Loading    struct {
		Header string            `json:"header"`
		Views  map[string]string `json:"views"`
		AtLive *struct {
			Nodes int    `json:"nodes"`
			Text  string `json:"text"`
		} `json:"atLive"`
		AfterNotFound string `json:"afterNotFound"`
	} `json:"loading"`
	Message struct {
		Error string `json:"error"`
		Page  string `json:"page"`
		Row   struct {
			Text   string   `json:"text"`
			Titles []string `json:"titles"`
			Error  string   `json:"error"`
		} `json:"row"`
	} `json:"message"`
	Hashes []struct {
		Hash     string   `json:"hash"`
		Text     string   `json:"text"`
		Errors   []string `json:"errors"`
		Dialogs  []string `json:"dialogs"`
		Live     bool     `json:"live"`
		Main     string   `json:"main"`
		Shows    bool     `json:"shows"`
		Injected []string `json:"injected"`
		Scroll   [2]int   `json:"scroll"`
	} `json:"hashes"`
	Fuzz struct {
		Tried  int      `json:"tried"`
		Errors []string `json:"errors"`
		Blank  []string `json:"blank"`
		Live   bool     `json:"live"`
	} `json:"fuzz"`
	Widths []struct {
		Width int `json:"width"`
		Views []struct {
			Hash             string   `json:"hash"`
			Ready            bool     `json:"ready"`
			TableScrollWidth int      `json:"tableScrollWidth"`
			BoxScrollWidth   int      `json:"boxScrollWidth"`
			BoxClientWidth   int      `json:"boxClientWidth"`
			PageScrollWidth  int      `json:"pageScrollWidth"`
			PageClientWidth  int      `json:"pageClientWidth"`
			Columns          []string `json:"columns"`
			// Teams are the cluster view's teams tables: each one's
			// width and its box's.
			Teams []struct {
				ScrollWidth    int `json:"scrollWidth"`
				BoxScrollWidth int `json:"boxScrollWidth"`
				BoxClientWidth int `json:"boxClientWidth"`
			} `json:"teams"`
		} `json:"views"`
	} `json:"widths"`
}

// inNamespace puts a manifest of vodatest.Manifest in namespace ns.
func inNamespace(manifest []byte, ns string) []byte {
	return bytes.Replace(manifest, []byte("metadata:\n"), []byte("metadata:\n  namespace: "+ns+"\n"), 1)
}

// TestDashboardFirstHour opens the dashboard as a newcomer does, on the
// simulated 4x8 GPU cluster with jobs of long names in long namespaces:
// while the snapshot is still on its way the page says it is loading (not
// live, not "0 jobs" or "no such job"), and live once it is drawn; a job
// that needs more GPUs than the cluster has shows why on its page and in
// the jobs table; malformed addresses render (as text) and the stream
// still connects; and the jobs table fits the window from 1366 px down.
func TestDashboardFirstHour(t *testing.T) {
	browserTools(t) // before starting a server
	dir := t.TempDir()
	srv := vodatest.StartServer(t, "--data-dir", filepath.Join(dir, "data"), "--sim-nodes", "v100=4x8",
		"--speed", "60", "--log-level", "warn")
	c := srv.Client()
	ctx := t.Context()
	submit := func(manifest []byte) string {
		t.Helper()
		j, err := c.CreateJob(ctx, manifest)
		if err != nil {
			t.Fatalf("create job: %v", err)
		}
		return j.Name
	}
	// Names at the longest the API takes (40 characters, then it appends
	// the time), in long namespaces; enough epochs to run all through the
	// test, and more than the cluster holds, so that some wait.
	for _, j := range []struct {
		name, ns string
		min, max int
	}{
		{"bert-large-finetune-squad-elastic-exp07", "ml-research-natural-language-processing", 2, 8},
		{"resnet50-imagenet-elastic-baseline-run12", "computer-vision-team-production", 4, 8},
		{"gpt2-medium-pretraining-openwebtext-v3", "ml-research-natural-language-processing", 2, 16},
		{"efficientnet-b7-autoaugment-ablation-04", "computer-vision-team-production", 4, 8},
		{"wav2vec2-large-librispeech-finetune-02", "speech-recognition-research-group", 4, 8},
		{"vit-huge-patch14-laion2b-contrastive-pre", "ml-research-multimodal-foundation-models", 8, 16},
		{"stable-diffusion-xl-lora-finetune-sweep", "generative-media-research-and-development", 8, 32},
		{"llama-7b-instruction-tuning-dpo-ablation", "alignment-and-safety-research", 4, 8},
	} {
		submit(inNamespace(vodatest.Manifest(j.name, j.min, j.max, 5000), j.ns))
	}
	// 33 workers at least, on 32 GPUs: it can never start.
	unschedulable := submit(inNamespace(vodatest.Manifest("giant-model-needs-more-gpus", 33, 40, 10), "computer-vision-team-production"))
	const jobs = 9

	shots := artifacts(t)
	var r firstHourReport
	runScript(t, &r, "first-hour.cjs", srv.URL(), unschedulable, strconv.Itoa(jobs), shots)
	t.Logf("screenshots in %s", shots)

	t.Run("loading", func(t *testing.T) {
		l := r.Loading
		if !strings.Contains(l.Header, "loading") || strings.Contains(l.Header, "live") {
			t.Errorf("header with the snapshot still on its way: %q, want loading, not live", l.Header)
		}
		if len(l.Views) != 6 {
			t.Errorf("read %d views while loading, want 6", len(l.Views))
		}
		for view, text := range l.Views {
			if !strings.Contains(text, "Loading") {
				t.Errorf("%s while loading lacks \"Loading\":\n%s", view, text)
			}
			for _, empty := range []string{"0 of 0 jobs", "0 of 0 finished", "Every finished job", "No such job", "No schedulers yet", "No GPU nodes yet", "No job held GPUs", "Not found"} {
				if strings.Contains(text, empty) {
					t.Errorf("%s while loading says %q:\n%s", view, empty, text)
				}
			}
		}
		switch a := l.AtLive; {
		case a == nil:
			t.Error("the header did not turn live once the snapshot was let through")
		case a.Nodes != 4 || strings.Contains(a.Text, "Loading"):
			t.Errorf("when the header turned live the page showed %d nodes, want 4, and:\n%s", a.Nodes, a.Text)
		}
		if !strings.Contains(l.AfterNotFound, "No such job") {
			t.Errorf("an unknown job once loaded:\n%s\nwant \"No such job\"", l.AfterNotFound)
		}
	})

	t.Run("message", func(t *testing.T) {
		m := r.Message
		const want = "needs at least 33 GPUs (its minimum workers); the v100 nodes have 32 in all"
		if m.Error != "" || !strings.Contains(m.Page, "Unschedulable") || !strings.Contains(m.Page, want) {
			t.Errorf("the unschedulable job's page (%s) lacks its reason and message %q:\n%s", m.Error, want, m.Page)
		}
		if m.Row.Error != "" || !strings.Contains(m.Row.Text, "Unschedulable") ||
			!slices.ContainsFunc(m.Row.Titles, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("its row in the jobs table (%s): %q with hints %q; want the reason, and the message as a hint", m.Row.Error, m.Row.Text, m.Row.Titles)
		}
	})

	t.Run("hashes", func(t *testing.T) {
		if len(r.Hashes) == 0 {
			t.Fatal("no malformed address tried")
		}
		for _, h := range r.Hashes {
			if !h.Live || len(h.Errors) > 0 || len(h.Dialogs) > 0 {
				t.Errorf("%s: live %v, errors %q, dialogs %q; want live and none", h.Hash, h.Live, h.Errors, h.Dialogs)
			}
			if !h.Shows {
				t.Errorf("%s: the page does not show %q as text:\n%s", h.Hash, h.Text, h.Main)
			}
			if len(h.Injected) > 0 {
				t.Errorf("%s: the address became markup: %q", h.Hash, h.Injected)
			}
			if h.Scroll[0] > h.Scroll[1] {
				t.Errorf("%s: the page scrolls sideways (%d px wide in %d)", h.Hash, h.Scroll[0], h.Scroll[1])
			}
		}
		f := r.Fuzz
		if f.Tried < 300 || len(f.Errors) > 0 || len(f.Blank) > 0 || !f.Live {
			t.Errorf("random addresses: %d tried, errors %q, no view or markup drawn for %q, live after: %v",
				f.Tried, f.Errors, f.Blank, f.Live)
		}
	})

	t.Run("widths", func(t *testing.T) {
		if len(r.Widths) == 0 || r.Widths[0].Width != 1366 {
			t.Fatalf("widths tried: %+v, want 1366 first", r.Widths)
		}
		for _, w := range r.Widths {
			for _, v := range w.Views {
				t.Logf("%d px, %s: table %d px in %d; page %d in %d; columns %q; %d teams tables", w.Width, v.Hash,
					v.TableScrollWidth, v.BoxClientWidth, v.PageScrollWidth, v.PageClientWidth, v.Columns, len(v.Teams))
				if !v.Ready {
					t.Errorf("%d px, %s: not every job's row, or none with a measured throughput, within 60 s", w.Width, v.Hash)
				}
				if v.TableScrollWidth > v.BoxClientWidth || v.BoxScrollWidth > v.BoxClientWidth || v.PageScrollWidth > v.PageClientWidth {
					t.Errorf("%d px, %s: the jobs table is %d px wide (its box scrolls %d in %d), the page %d in %d: want no sideways scrolling",
						w.Width, v.Hash, v.TableScrollWidth, v.BoxScrollWidth, v.BoxClientWidth, v.PageScrollWidth, v.PageClientWidth)
				}
				for i, tt := range v.Teams {
					if tt.ScrollWidth > tt.BoxClientWidth || tt.BoxScrollWidth > tt.BoxClientWidth {
						t.Errorf("%d px, %s: teams table %d is %d px wide (its box scrolls %d in %d): want no sideways scrolling",
							w.Width, v.Hash, i, tt.ScrollWidth, tt.BoxScrollWidth, tt.BoxClientWidth)
					}
				}
			}
		}
		// At 1366 px nothing needs to go.
		for _, v := range r.Widths[0].Views {
			if len(v.Columns) != 12 {
				t.Errorf("at 1366 px, %s: the jobs table shows the columns %q, want all 12", v.Hash, v.Columns)
			}
		}
	})

	for _, c := range r.Console {
		t.Errorf("console: %s", c)
	}
	for _, e := range r.PageErrors {
		t.Errorf("page error: %s", e)
	}
}

// finishedReport is what testdata/finished.cjs prints.
type finishedReport struct {
	Console           []string `json:"console"`
	PageErrors        []string `json:"pageErrors"`
	Lists             []string `json:"lists"`
	LoadLists         []string `json:"loadLists"` // until all were shown
	Paged             bool     `json:"paged"`
	LiveCaption       string   `json:"liveCaption"`
	FirstRows         int      `json:"firstRows"`
	Clicks            int      `json:"clicks"`
	Rows              int      `json:"rows"`
	Caption           string   `json:"caption"`
	End               string   `json:"end"`
	Job               string   `json:"job"`
	LiveRow           string   `json:"liveRow"`
	MovedRow          string   `json:"movedRow"`
	MovedCaption      string   `json:"movedCaption"`
	ListsWhileRunning []string `json:"listsWhileRunning"`
	LiveAfter         int      `json:"liveAfter"`
	Reloaded          bool     `json:"reloaded"`
	FailedRows        []string `json:"failedRows"`
	FailedLists       []string `json:"failedLists"`
	// MultiGPU is the row and the page of seedFinished's job of workers
	// of 4 GPUs.
	MultiGPU struct {
		Row  string `json:"row"`
		Page string `json:"page"`
	} `json:"multiGPU"`
	// Nodes is how a page whose event stream the script answered drew a
	// node of 8 GPUs holding a worker of 4 GPUs and two of one.
	Nodes struct {
		Heading    string `json:"heading"`
		WideGPUs   int    `json:"wideGPUs"`
		NarrowGPUs int    `json:"narrowGPUs"`
		FreeGPUs   int    `json:"freeGPUs"`
		Row        string `json:"row"`
		Timeline   string `json:"timeline"`
	} `json:"nodes"`
	Contract struct {
		Requests  []string `json:"requests"`
		Errors    []string `json:"errors"`
		FirstRows int      `json:"firstRows"`
		Clicks    int      `json:"clicks"`
		Rows      int      `json:"rows"`
		End       string   `json:"end"`
	} `json:"contract"`
}

// fillStore opens the embedded store of dataDir, runs fill on it and
// closes it, so that a server started after it finds what fill wrote.
func fillStore(t *testing.T, dataDir string, fill func(ctx context.Context, st store.Store) error) {
	t.Helper()
	ctx := t.Context()
	st, err := store.Open(ctx, "", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	ferr := fill(ctx, st)
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
}

// seedFinished leaves n finished jobs (Completed, some Failed and
// Canceled) in the embedded store of dataDir, as a server that ran them
// would have, with names as Voda gives them. The first (multiGPUJob) ran
// one worker of 4 GPUs; the others two workers of one.
func seedFinished(t *testing.T, dataDir string, n int) {
	t.Helper()
	fillStore(t, dataDir, func(ctx context.Context, st store.Store) error {
		base := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
		statuses := []model.Status{model.StatusFailed, model.StatusCanceled}
		for i := range n {
			submit := base.Add(time.Duration(i) * time.Minute)
			finish := submit.Add(30 * time.Minute)
			status := model.StatusCompleted
			if i%10 < len(statuses) {
				status = statuses[i%10]
			}
			name := fmt.Sprintf("old-%03d-%s", i, submit.Format("20060102-150405"))
			g, workers := 1, 2
			if i == 0 {
				g, workers = 4, 1
			}
			j := store.Job{Name: name, Kind: "MPIJob", Namespace: "default",
				Spec: model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, RequestedWorkers: 2, GPUsPerWorker: g, Epochs: 1, SubmitTime: submit},
				Status: store.JobStatus{State: model.JobState{Status: status, FirstStart: submit, RunSeconds: 1800, AttainedService: 3600},
					FinishTime: finish, Updated: finish, Allocations: []store.Allocation{
						{At: submit, Placement: model.JobPlacement{{Node: "v100-node-0", Workers: workers}}}, {At: finish}}}}
			if err := st.CreateJob(ctx, j); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
		}
		return nil
	})
}

// TestDashboardFinished opens the dashboard of a server that holds 250
// finished jobs and no live one: the live jobs table is empty (the
// stream's snapshot holds no finished job); Finished shows them 100 at a
// time as "Show more" is clicked, fetched page by page from GET
// /api/v1/jobs when the server answers in pages, until all 250 are
// there; then a job
// submitted through the API shows among the live jobs and, once it
// completes, under Finished, without a reload or another list request
// (the stream brought it), and no longer among the live jobs; choosing
// the status Failed lists that status from the server. The first stored
// job ran a worker of 4 GPUs, which its row and page say; and a node
// holding workers of 4 GPUs and of one, from an event stream the script
// answers, is drawn GPU by GPU.
func TestDashboardFinished(t *testing.T) {
	const finished = 250
	browserTools(t) // before starting a server
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	seedFinished(t, data, finished)
	srv := vodatest.StartServer(t, "--data-dir", data, "--sim-nodes", "v100=2x4", "--speed", "60", "--log-level", "warn")
	manifest := filepath.Join(dir, "job.yaml")
	// Long enough (a few seconds at --speed 60) to be seen live first.
	if err := os.WriteFile(manifest, vodatest.Manifest("moves", 2, 4, 20), 0o600); err != nil {
		t.Fatal(err)
	}
	shots := artifacts(t)
	var r finishedReport
	runScript(t, &r, "finished.cjs", srv.URL(), manifest, shots)
	t.Logf("list requests %q (in pages: %v); %d rows at first, %d after %d clicks; %s moved: %q", r.Lists, r.Paged, r.FirstRows, r.Rows, r.Clicks, r.Job, r.MovedRow)

	if r.LiveCaption != "0 of 0 jobs" {
		t.Errorf("the live jobs table with only finished jobs stored: %q, want 0 of 0 jobs", r.LiveCaption)
	}
	// 100 rows at a time, from one list or from pages of 100.
	wantFirst, wantLists := 100, 1
	if r.Paged {
		wantLists = 3
	}
	if r.FirstRows != wantFirst || r.Rows != finished || len(r.LoadLists) != wantLists || r.End == "" {
		t.Errorf("Finished: %d rows at first, %d at the end (%q), %d list requests, end note %q; want %d, %d, %d, and the note",
			r.FirstRows, r.Rows, r.Caption, len(r.LoadLists), r.End, wantFirst, finished, wantLists)
	}
	for _, l := range r.Lists {
		if !strings.Contains(l, "limit=100") || !strings.HasSuffix(l, " 200") {
			t.Errorf("list request %q, want limit=100 answered 200", l)
		}
	}
	if !strings.Contains(r.MovedRow, "Completed") || len(r.ListsWhileRunning) != 0 || r.LiveAfter != 0 || r.Reloaded {
		t.Errorf("%s (live: %q) under Finished: %q after list requests %q, %d live rows after, reloaded %v; want it Completed, by the stream (no request), not live, no reload",
			r.Job, r.LiveRow, r.MovedRow, r.ListsWhileRunning, r.LiveAfter, r.Reloaded)
	}
	// The job of workers of 4 GPUs says so in its row and on its page.
	if !strings.Contains(r.MultiGPU.Row, "1/2\n4 GPUs per worker") {
		t.Errorf("the row of a job of 4 GPUs per worker: %q, want its workers 1/2 and 4 GPUs per worker", r.MultiGPU.Row)
	}
	for _, want := range []string{"GPUs per worker\n4\n", "GPUs held\n0 (0 workers × 4)\n", "4 GPUs, 1 worker (v100-node-0×1)"} {
		if !strings.Contains(r.MultiGPU.Page, want) {
			t.Errorf("the page of a job of 4 GPUs per worker lacks %q:\n%s", want, r.MultiGPU.Page)
		}
	}
	// A node of 8 GPUs with a worker of 4 GPUs and two of one: 6 in use.
	if n := r.Nodes; n.WideGPUs != 4 || n.NarrowGPUs != 2 || n.FreeGPUs != 2 || !strings.Contains(n.Heading, "6 of 8 GPUs in use") ||
		n.Row != "1/1/2\n4 GPUs, 4 per worker" || !strings.Contains(n.Timeline, "at most 6 of 8 GPUs at once") {
		t.Errorf("a node holding a worker of 4 GPUs and two of one: %+v; want 4, 2 and 2 free GPUs drawn, 6 of 8 in use, the row 1/1/2 with 4 GPUs, 4 per worker, and the timeline at most 6 of 8",
			n)
	}
	if want := fmt.Sprintf("%d of %d finished jobs here", finished+1, finished+1); r.MovedCaption != want {
		t.Errorf("Finished after the job moved there: %q, want %q", r.MovedCaption, want)
	}
	// seedFinished fails one job in ten.
	if len(r.FailedRows) != finished/10 || slices.ContainsFunc(r.FailedRows, func(s string) bool { return s != "Failed" }) ||
		len(r.FailedLists) == 0 || !strings.Contains(r.FailedLists[0], "status=Failed") {
		t.Errorf("Finished with the status Failed: rows %q after list requests %q; want %d Failed, listed with status=Failed",
			r.FailedRows, r.FailedLists, finished/10)
	}
	// The pages as documented, answered by the script: 100 rows at
	// first; "Show more" fetches the second page; the third is 410 once,
	// which the page shows and which starts the list again (the jobs it
	// has are not doubled); then to the end.
	c := r.Contract
	wantRequests := []string{"?limit=100", "?limit=100&continue=p100", "?limit=100&continue=p200",
		"?limit=100", "?limit=100&continue=p100", "?limit=100&continue=p200"}
	if c.FirstRows != 100 || c.Rows != finished+1 || !slices.Equal(c.Requests, wantRequests) || c.End == "" ||
		len(c.Errors) != 1 || !strings.Contains(c.Errors[0], "410 Expired") {
		t.Errorf("pages answered as documented: %d rows at first, %d after %d clicks (end note %q), requests %q, errors shown %q;"+
			" want 100, %d, requests %q, the 410 shown once", c.FirstRows, c.Rows, c.Clicks, c.End, c.Requests, c.Errors, finished+1, wantRequests)
	}
	for _, c := range r.Console {
		if strings.Contains(c, "status of 410") { // the browser logs the expired page itself
			continue
		}
		t.Errorf("console: %s", c)
	}
	for _, e := range r.PageErrors {
		t.Errorf("page error: %s", e)
	}
}
