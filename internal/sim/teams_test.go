package sim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// newAllocFunc returns a builder of the named algorithm, for runs with
// teams.
func newAllocFunc(t testing.TB, name string, params ...string) func() (algorithm.Allocator, error) {
	t.Helper()
	p, err := registry.ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	return func() (algorithm.Allocator, error) { return algorithm.Builtin().New(name, p) }
}

// TestTeamReclaimsItsGuarantee takes the first six jobs of a Pollux
// workload on 16 GPUs with two teams guaranteed 8 each: team-a submits
// four elastic jobs and borrows the whole cluster; team-b submits two
// later. With the quotas held, team-b reaches min(demand, 8) GPUs within
// one cycle (its job then restarts for the restart cost) under
// ElasticFIFO, and within the ramp of Goodput's estimates; with the
// quotas ignored, it waits longer.
func TestTeamReclaimsItsGuarantee(t *testing.T) {
	dir := polluxDir(t)
	models := polluxModels(t, dir)
	all, err := workload.Read(filepath.Join(dir, "workloads", "workload-6.csv"), workload.FormatAuto, workload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := all[:6]
	for i := range jobs {
		jobs[i].Team = "team-a"
		if i >= 4 {
			jobs[i].Team = "team-b"
		}
	}
	quotas := []model.Quota{{Team: "team-a", Guarantee: 8, Weight: 1}, {Team: "team-b", Guarantee: 8, Weight: 1}}
	const interval = 60 * time.Second
	type testCase struct {
		name   string
		alg    string
		mode   time.Duration
		ignore bool
		// bound is the longest reclaim wanted, 0 for one longer than a
		// cycle; every job of team-b must run within running.
		bound, running time.Duration
	}
	runWith := func(t *testing.T, tc testCase) *report.Run {
		r, err := Run(context.Background(), jobs, Options{
			Nodes: 4, GPUsPerNode: 4, Interval: tc.mode, Models: models, Placer: topologyPlacer(t),
			NewAllocator: newAllocFunc(t, tc.alg), AdaptiveBatch: tc.alg == "Goodput", Quotas: quotas, IgnoreQuotas: tc.ignore,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range r.Reclaims {
			t.Logf("reclaim: %+v", rc)
		}
		return r
	}
	cases := []testCase{
		{name: "ElasticFIFO/interval", alg: "ElasticFIFO", mode: interval, bound: interval, running: interval},
		// Event-driven, the cycle that reclaims may wait for the rate
		// limit (30 s) at 5c937ad.
		{name: "ElasticFIFO/event-driven", alg: "ElasticFIFO", bound: 30 * time.Second, running: 30 * time.Second},
		// Goodput's estimates ramp a new job up: its goodput curve
		// reaches twice the most GPUs it has run on (estimate.Online.Ramp),
		// so team-b's job gets 1, 2, 4 then 8 GPUs, a cycle each, and the
		// GPUs it cannot use yet stay with team-a (algorithm.Teams hands
		// them on). The reclaim takes three cycles more than the
		// composition's one: measured, not the target.
		{name: "Goodput/interval", alg: "Goodput", mode: interval, bound: 4 * interval, running: interval},
		{name: "Goodput/event-driven", alg: "Goodput", bound: 30*time.Second + 3*time.Minute, running: 30 * time.Second},
		{name: "ElasticFIFO/interval/quotas ignored", alg: "ElasticFIFO", mode: interval, ignore: true, running: interval},
		{name: "Goodput/interval/quotas ignored", alg: "Goodput", mode: interval, ignore: true, running: interval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, tc)
			if len(r.Reclaims) == 0 {
				t.Fatal("no reclaim: team-b never found team-a borrowing")
			}
			s := report.Summarize(r)
			if s.ReclaimRunningMax > tc.running.Seconds() {
				t.Errorf("a job of team-b waited %.1f s, want within %v", s.ReclaimRunningMax, tc.running)
			}
			if tc.bound == 0 {
				if s.ReclaimMax <= interval.Seconds() && s.Unreclaimed == 0 {
					t.Errorf("quotas ignored: worst reclaim %.1f s, want one longer than a cycle (%v)", s.ReclaimMax, interval)
				}
				return
			}
			if s.Unreclaimed > 0 || s.ReclaimMax > tc.bound.Seconds() {
				t.Errorf("worst reclaim %.1f s (%d unresolved), want within %v", s.ReclaimMax, s.Unreclaimed, tc.bound)
			}
			for _, j := range r.Jobs {
				if !j.Done {
					t.Errorf("job %s did not finish", j.Name)
				}
			}
		})
	}
}

func TestParseQuotas(t *testing.T) {
	cases := []struct {
		in      string
		want    []model.Quota
		wantErr string
	}{
		{in: "team-a=8,team-b=8:16:2", want: []model.Quota{{Team: "team-a", Guarantee: 8, Weight: 1}, {Team: "team-b", Guarantee: 8, Limit: 16, Weight: 2}}},
		{in: " a = 0:0 , ", want: []model.Quota{{Team: "a", Weight: 1}}},
		{in: "a=1:2:0.5", want: []model.Quota{{Team: "a", Guarantee: 1, Limit: 2, Weight: 0.5}}},
		{in: "", wantErr: "none given"},
		{in: "a", wantErr: "want TEAM=GUARANTEE"},
		{in: "a=1:2:3:4", wantErr: "want TEAM=GUARANTEE"},
		{in: "a=x", wantErr: `guarantee "x" is not a number`},
		{in: "a=1:y", wantErr: `limit "y" is not a number`},
		{in: "a=1:2:z", wantErr: `weight "z" is not a number`},
		{in: "A=1", wantErr: `team "A"`},
		{in: "a=-1", wantErr: "guarantee -1"},
		{in: "a=4:2", wantErr: "limit 2 below guarantee 4"},
		{in: "a=1:0:NaN", wantErr: "weight NaN"},
		{in: "a=1,a=2", wantErr: `team "a" given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseQuotas(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func FuzzParseQuotas(f *testing.F) {
	for _, s := range []string{"team-a=8,team-b=8:16:2", "a=1:2:0.5", "a=1,a=2", "a=1:0:Inf", "=", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		qs, err := ParseQuotas(in)
		if err != nil {
			return
		}
		if err := checkQuotas(qs); err != nil {
			t.Fatalf("accepted %q: %v", in, err)
		}
		if _, err := algorithm.NewTeams(func() (algorithm.Allocator, error) { return algorithm.Builtin().New("FIFO", nil) }, qs); err != nil {
			t.Fatalf("accepted %q, which NewTeams refuses: %v", in, err)
		}
	})
}

// TestTeamTracker steps the tracker through hand-made states of two
// teams guaranteed 8 of 16 GPUs each.
func TestTeamTracker(t *testing.T) {
	job := func(team string, gpus, maxW int) *simJob {
		j := &simJob{w: workload.Job{Name: team, Team: team, MinWorkers: 1, MaxWorkers: maxW, Requested: 1}}
		if gpus > 0 {
			j.place = []int{gpus}
		}
		return j
	}
	quotas := []model.Quota{{Team: "a", Guarantee: 8, Weight: 1}, {Team: "b", Guarantee: 8, Weight: 1}}
	tr := newTeamTracker([]workload.Job{{Team: "b"}, {Team: "a"}}, quotas, 16)
	steps := []struct {
		now  float64
		live []*simJob
		// arrived is a job of b delivered now, submitted then; 0: none.
		arrived float64
	}{
		{now: 0, live: []*simJob{job("a", 16, 16)}},                                // a borrows 8
		{now: 100, live: []*simJob{job("a", 16, 16), job("b", 0, 4)}, arrived: 90}, // b waits: a reclaim from 90
		{now: 120, live: []*simJob{job("a", 14, 16), job("b", 2, 4)}},              // b runs, short of 4
		{now: 180, live: []*simJob{job("a", 12, 16), job("b", 4, 4)}},              // b at min(4, 8)
		{now: 200, live: []*simJob{job("a", 12, 16), job("b", 4, 16)}},             // short, none waiting: no reclaim
		{now: 300, live: []*simJob{job("a", 8, 8), job("b", 0, 16)}},               // b waits, nobody borrows: none
		{now: 400, live: []*simJob{job("a", 12, 16), job("b", 0, 16)}},             // a borrows: a reclaim from 400
	}
	last := 0.0
	for _, s := range steps {
		tr.elapse(s.now - last)
		last = s.now
		if s.arrived > 0 {
			tr.arrive("b", s.arrived)
		}
		if err := tr.observe(s.now, s.live); err != nil {
			t.Fatal(err)
		}
	}
	tr.elapse(100)
	records, reclaims := tr.record(500)
	want := []report.Reclaim{
		{Team: "b", Start: 90, Running: 30, Seconds: 90, Resolved: true},
		{Team: "b", Start: 400, Running: -1, Seconds: 100},
	}
	if diff := cmp.Diff(want, reclaims); diff != "" {
		t.Errorf("reclaims (-want,+got):\n%s", diff)
	}
	// b: held 0 (0-120), 2 (120-180), 4 (180-300), 0 (300-500); entitled
	// 0, then 4 (100-200: demand 4), 8 (200-500); short 100-180 and
	// 200-500, active 100-500.
	wantB := report.TeamRecord{Team: "b", Guarantee: 8, Weight: 1, HeldGPUSeconds: 2*60 + 4*120,
		EntitledGPUSeconds: 4*100 + 8*300, ActiveSeconds: 400, ShortSeconds: 80 + 300}
	if diff := cmp.Diff(wantB, records[1]); diff != "" {
		t.Errorf("team b (-want,+got):\n%s", diff)
	}
	if records[0].Team != "a" || records[0].HeldGPUSeconds != 16*120+14*60+12*120+8*100+12*100 {
		t.Errorf("team a: %+v", records[0])
	}
}
