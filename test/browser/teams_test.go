package browser

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/test/vodatest"
)

// teamRow is one row of a teams table as testdata/teams.cjs reads it.
type teamRow struct {
	Team         string   `json:"team"`
	State        string   `json:"state"`
	Badge        string   `json:"badge"`
	BadgeTitle   string   `json:"badgeTitle"`
	Cells        []string `json:"cells"`
	BarLabel     string   `json:"barLabel"`
	BarInUse     float64  `json:"barInUse"`
	BarEntitled  float64  `json:"barEntitled"`
	BarGuarantee float64  `json:"barGuarantee"`
}

// teamTables are a page's teams tables by GPU type.
type teamTables map[string]struct {
	Caption string    `json:"caption"`
	Rows    []teamRow `json:"rows"`
}

// row returns the row of team in gpuType's table, or nil.
func (tt teamTables) row(gpuType, team string) *teamRow {
	for _, r := range tt[gpuType].Rows {
		if r.Team == team {
			return &r
		}
	}
	return nil
}

// teamsReport is what testdata/teams.cjs prints.
type teamsReport struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Live       struct {
		Before    teamTables `json:"before"`
		CreateA   int        `json:"createA"`
		ABorrows  bool       `json:"aborrows"`
		Borrowing teamTables `json:"borrowing"`
		CreateB   int        `json:"createB"`
		Shared    bool       `json:"shared"`
		After     teamTables `json:"after"`
		InUse     []int      `json:"inUse"`
		// Requests are the paths the page requested from the first
		// submission until both teams held their guarantees.
		Requests []string `json:"requests"`
	} `json:"live"`
	Scripted struct {
		Tables        teamTables `json:"tables"`
		Headings      []string   `json:"headings"`
		Hidden        bool       `json:"hidden"`
		Streams       int        `json:"streams"`
		HeadingsAfter []string   `json:"headingsAfter"`
		NodesAfter    int        `json:"nodesAfter"`
	} `json:"scripted"`
}

// seedQuotas stores quotas as the v100 scheduler's settings in the
// embedded store of dataDir, as an admin would set them.
func seedQuotas(t *testing.T, dataDir string, quotas ...model.Quota) {
	t.Helper()
	fillStore(t, dataDir, func(ctx context.Context, st store.Store) error {
		return st.PutSettings(ctx, "v100", store.Settings{Quotas: quotas})
	})
}

// teamCases are the teams of the scripted snapshot, one per state the
// panel tells apart, with what their rows must say: the state in words
// (its badge), and every cell.
var teamCases = []struct {
	name      string
	team      api.Team
	state     string // the row's data-state
	badge     string // the badge's text, "" for none
	cells     []string
	inUse     float64 // the bar's in-use width, of 80 px
	entitled  float64 // the bar's entitled width
	guarantee float64 // where the bar marks the guarantee
}{
	{
		name:  "borrowing beyond its guarantee, with a limit",
		team:  api.Team{Team: "borrower", Quota: true, Guarantee: 2, Limit: 6, Weight: 2.0 / 3, GPUsInUse: 5, Entitled: 5, Demand: 8, Running: 2},
		state: "borrowing", badge: "borrowing 3",
		cells: []string{"borrower borrowing 3", "5", "2", "5", "6", "0.6667", "8", "2", "0"},
		inUse: 80, entitled: 80, guarantee: 32,
	},
	{
		name:  "owed: below min(demand, guarantee) with a job waiting",
		team:  api.Team{Team: "owed-team", Quota: true, Guarantee: 4, Weight: 1, GPUsInUse: 1, Entitled: 4, Demand: 6, Running: 1, Waiting: 1},
		state: "owed", badge: "owed 3",
		cells: []string{"owed-team owed 3", "1", "4", "4", "none", "1", "6", "1", "1"},
		inUse: 20, entitled: 80, guarantee: 80,
	},
	{
		name:  "below its guarantee, nothing waiting: not owed",
		team:  api.Team{Team: "idle-share", Quota: true, Guarantee: 4, Weight: model.MaxQuotaWeight, GPUsInUse: 2, Entitled: 4, Demand: 6, Running: 2},
		cells: []string{"idle-share", "2", "4", "4", "none", "1000000", "6", "2", "0"},
		inUse: 40, entitled: 80, guarantee: 80,
	},
	{
		name:  "at its guarantee with jobs waiting: neither",
		team:  api.Team{Team: "at-guarantee", Quota: true, Guarantee: 4, Limit: 4, Weight: 0.5, GPUsInUse: 4, Entitled: 4, Demand: 8, Running: 1, Waiting: 2},
		cells: []string{"at-guarantee", "4", "4", "4", "4", "0.5", "8", "1", "2"},
		inUse: 80, entitled: 80, guarantee: 80,
	},
	{
		name:  "the default quota, holding GPUs: it borrows them all",
		team:  api.Team{Team: "newcomers", Weight: 1, GPUsInUse: 3, Entitled: 2, Demand: 3, Running: 1},
		state: "borrowing", badge: "borrowing 3",
		cells: []string{"newcomers borrowing 3\ndefault quota", "3", "0", "2", "none", "1", "3", "1", "0"},
		inUse: 80, entitled: 160.0 / 3, guarantee: 0,
	},
	{
		name:  "the default quota, no GPUs",
		team:  api.Team{Team: "quiet", Weight: 1},
		cells: []string{"quiet\ndefault quota", "0", "0", "0", "none", "1", "0", "0", "0"},
	},
}

// teamsSnapshot writes an event stream snapshot to a file: a v100
// scheduler with the teams of teamCases on one node of 8 GPUs, and an
// a100 scheduler with none.
func teamsSnapshot(t *testing.T) string {
	t.Helper()
	now := time.Now().UTC()
	var teams []api.Team
	for _, c := range teamCases {
		teams = append(teams, c.team)
	}
	snap := api.Snapshot{
		Now: now, ClockRate: 1, Jobs: []api.Job{},
		Nodes: []api.GPUTypeNodes{{GPUType: "v100", Nodes: []api.Node{{Name: "n0", GPUs: 8, Ready: true, FreeGPUs: 8, Jobs: []api.NodeJob{}}}}},
		Schedulers: []api.Scheduler{
			{GPUType: "a100", Algorithm: "ElasticFIFO", RateLimitSeconds: 30, Now: &now},
			{GPUType: "v100", Algorithm: "ElasticFIFO", RateLimitSeconds: 30, Now: &now, Nodes: 2, GPUs: 16, GPUsInUse: 15, Teams: teams},
		},
	}
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snapshot.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestDashboardTeams opens the cluster view's Teams panel. On a server of
// 8 v100 GPUs where team-a and team-b are guaranteed 4 each: a job of
// team-a takes all 8 and its row says it borrows 4; once team-b submits,
// each holds 4 and neither borrows; every change comes through the open
// event stream, the page asking the server for nothing. On a page whose
// stream the test answers: each state a team can be in is said in words
// and drawn to scale, a GPU type without teams has no table, and the
// panel goes when the schedulers carry no teams (a viewer who may not
// list them).
func TestDashboardTeams(t *testing.T) {
	browserTools(t) // before starting a server
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token-0123456789,root,0,voda:admins\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	seedQuotas(t, data,
		model.Quota{Team: "team-a", Guarantee: 4, Weight: 1},
		model.Quota{Team: "team-b", Guarantee: 4, Weight: 1})
	srv := vodatest.StartServer(t, "--data-dir", data, "--sim-nodes", "v100=2x4", "--speed", "60",
		"--token-auth-file", tokens, "--log-level", "warn")
	// Elastic from 1 to 8 workers, long enough to run all through the test.
	manifests := map[string]string{}
	for _, team := range []string{"team-a", "team-b"} {
		manifests[team] = filepath.Join(dir, team+".yaml")
		if err := os.WriteFile(manifests[team], inNamespace(vodatest.Manifest("train-"+team, 1, 8, 5000), team), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	shots := artifacts(t)
	var r teamsReport
	runScript(t, &r, "teams.cjs", srv.URL(), "admin-token-0123456789", manifests["team-a"], manifests["team-b"], teamsSnapshot(t), shots)
	t.Logf("screenshots in %s", shots)

	t.Run("live", func(t *testing.T) {
		l := r.Live
		for _, team := range []string{"team-a", "team-b"} {
			if row := l.Before.row("v100", team); row == nil || row.Cells[1] != "0" || row.Cells[2] != "4" || row.State != "" {
				t.Errorf("before any job, %s's row: %+v; want 0 in use, guarantee 4, no state", team, row)
			}
		}
		if l.CreateA != 201 || l.CreateB != 201 {
			t.Fatalf("submissions: %d, %d; want 201", l.CreateA, l.CreateB)
		}
		if a := l.Borrowing.row("v100", "team-a"); !l.ABorrows || a == nil || a.Badge != "borrowing 4" {
			t.Errorf("team-a alone: %+v (in time: %v); want 8 in use, borrowing 4", a, l.ABorrows)
		}
		if !l.Shared || !slices.Equal(l.InUse, []int{4, 4}) {
			t.Errorf("after team-b submitted: team-a and team-b hold %v (in time: %v), want 4 and 4; the table:\n%+v", l.InUse, l.Shared, l.After["v100"])
		}
		for _, team := range []string{"team-a", "team-b"} {
			if row := l.After.row("v100", team); row == nil || row.State != "" || row.Cells[3] != "4" || row.Cells[7] != "1" {
				t.Errorf("after team-b submitted, %s's row: %+v; want entitled 4, 1 running, neither borrowing nor owed", team, row)
			}
		}
		if len(l.Requests) != 0 {
			t.Errorf("the page requested %q while the teams changed, want nothing: the open event stream brings them", l.Requests)
		}
	})

	t.Run("states", func(t *testing.T) {
		s := r.Scripted
		if _, ok := s.Tables["a100"]; ok || len(s.Tables) != 1 {
			t.Errorf("teams tables for %d GPU types, want only v100's (a100's scheduler lists no teams)", len(s.Tables))
		}
		if got, want := s.Tables["v100"].Caption, "v100: 6 teams, 15 of 16 GPUs in use at the last cycle"; got != want {
			t.Errorf("caption %q, want %q", got, want)
		}
		if !slices.Contains(s.Headings, "Teams") {
			t.Errorf("headings %q, want Teams", s.Headings)
		}
		for _, c := range teamCases {
			t.Run(c.name, func(t *testing.T) {
				row := s.Tables.row("v100", c.team.Team)
				if row == nil {
					t.Fatalf("no row for %s", c.team.Team)
				}
				if row.State != c.state || row.Badge != c.badge || (c.badge != "" && row.BadgeTitle == "") {
					t.Errorf("state %q, badge %q (%q); want %q, %q with its reason as a hint", row.State, row.Badge, row.BadgeTitle, c.state, c.badge)
				}
				if !slices.Equal(row.Cells, c.cells) {
					t.Errorf("cells %q, want %q", row.Cells, c.cells)
				}
				const px = 0.01
				if d := [3]float64{row.BarInUse - c.inUse, row.BarEntitled - c.entitled, row.BarGuarantee - c.guarantee}; d[0] > px || d[0] < -px || d[1] > px || d[1] < -px || d[2] > px || d[2] < -px {
					t.Errorf("bar: in use %g px, entitled %g px, guarantee at %g px; want %g, %g, %g", row.BarInUse, row.BarEntitled, row.BarGuarantee, c.inUse, c.entitled, c.guarantee)
				}
				if !strings.Contains(row.BarLabel, "in use") {
					t.Errorf("bar label %q: want the numbers in words", row.BarLabel)
				}
			})
		}
		if !s.Hidden || s.Streams < 2 || slices.Contains(s.HeadingsAfter, "Teams") || s.NodesAfter != 1 {
			t.Errorf("after a snapshot without teams (%d streams): hidden %v, headings %q, %d nodes; want no Teams panel, the node drawn",
				s.Streams, s.Hidden, s.HeadingsAfter, s.NodesAfter)
		}
	})

	for _, c := range r.Console {
		t.Errorf("console: %s", c)
	}
	for _, e := range r.PageErrors {
		t.Errorf("page error: %s", e)
	}
}
