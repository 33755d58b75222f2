package algorithm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

func team(name string, demand, guarantee, limit int, weight float64) TeamDemand {
	return TeamDemand{Quota: Quota{Team: name, Guarantee: guarantee, Limit: limit, Weight: weight}, Demand: demand}
}

// Hand-computed entitlements.
func TestEntitlements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
		teams []TeamDemand
		want  []int
	}{
		// The case: guarantees 8 and 8 on 16 GPUs.
		{"team-a borrows all 16", 16, []TeamDemand{team("a", 16, 8, 0, 1), team("b", 0, 8, 0, 1)}, []int{16, 0}},
		{"team-b wants its 8 back", 16, []TeamDemand{team("a", 16, 8, 0, 1), team("b", 8, 8, 0, 1)}, []int{8, 8}},
		{"team-b wants less than its guarantee", 16, []TeamDemand{team("a", 16, 8, 0, 1), team("b", 3, 8, 0, 1)}, []int{13, 3}},
		// Guarantees 4 and 4, then 12 by weights 1:3.
		{"surplus by weight", 20, []TeamDemand{team("a", 20, 4, 0, 1), team("b", 20, 4, 0, 3)}, []int{7, 13}},
		// a is capped at 6 by its limit; b takes the rest.
		{"limit", 20, []TeamDemand{team("a", 20, 4, 6, 1), team("b", 20, 4, 0, 1)}, []int{6, 14}},
		// a wants only 5: its surplus share goes to b.
		{"water-filling", 20, []TeamDemand{team("a", 5, 2, 0, 1), team("b", 30, 2, 0, 1)}, []int{5, 15}},
		// 10 GPUs, 16 guaranteed: by guarantee, 5 and 5.
		{"guarantees beyond the cluster", 10, []TeamDemand{team("a", 8, 8, 0, 1), team("b", 8, 8, 0, 1)}, []int{5, 5}},
		// 10 GPUs, guarantees 12 and 4 but b wants 1: b 1, a the other 9.
		{"guarantees beyond the cluster, one wants less", 10, []TeamDemand{team("a", 12, 12, 0, 1), team("b", 1, 4, 0, 1)}, []int{9, 1}},
		// 3 GPUs beyond the guarantees, three equal teams: one each.
		{"even split", 3, []TeamDemand{team("a", 9, 0, 0, 1), team("b", 9, 0, 0, 1), team("c", 9, 0, 0, 1)}, []int{1, 1, 1}},
		// 2 GPUs for three equal teams: the first two by name.
		{"remainders by name", 2, []TeamDemand{team("a", 9, 0, 0, 1), team("b", 9, 0, 0, 1), team("c", 9, 0, 0, 1)}, []int{1, 1, 0}},
		// 7 by weights 2:1: 4.67 and 2.33, so 5 and 2.
		{"largest remainder", 7, []TeamDemand{team("a", 9, 0, 0, 2), team("b", 9, 0, 0, 1)}, []int{5, 2}},
		// Weight 0: its guarantee while b wants more, the rest once b is full.
		{"weight 0 behind others", 16, []TeamDemand{team("a", 16, 2, 0, 0), team("b", 16, 2, 0, 1)}, []int{2, 14}},
		{"weight 0 alone", 16, []TeamDemand{team("a", 16, 2, 0, 0), team("b", 4, 2, 0, 1)}, []int{12, 4}},
		{"nobody wants", 16, []TeamDemand{team("a", 0, 8, 0, 1), team("b", 0, 8, 0, 1)}, []int{0, 0}},
		{"no GPUs", 0, []TeamDemand{team("a", 4, 8, 0, 1)}, []int{0}},
		{"no teams", 8, nil, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Entitlements(tc.total, tc.teams)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Entitlements(%d, %+v) = %v, want %v", tc.total, tc.teams, got, tc.want)
			}
		})
	}
}

func TestEntitlementsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		total int
		teams []TeamDemand
		want  string
	}{
		{-1, nil, "-1 GPUs"},
		{8, []TeamDemand{team("b", 1, 0, 0, 1), team("a", 1, 0, 0, 1)}, "unique names in order"},
		{8, []TeamDemand{team("a", 1, 0, 0, 1), team("a", 1, 0, 0, 1)}, "unique names in order"},
		{8, []TeamDemand{team("a", -1, 0, 0, 1)}, "none negative"},
		{8, []TeamDemand{team("a", 1, 0, 0, -1)}, "weight -1"},
	} {
		if _, err := Entitlements(tc.total, tc.teams); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Entitlements(%d, %+v): %v, want an error containing %q", tc.total, tc.teams, err, tc.want)
		}
	}
}

// Over random teams: nobody gets more than it wants or than its limit,
// the GPUs handed out are min(total, what is wanted), every team wanting
// at least its guarantee gets it when the guarantees fit, and no GPU is
// left idle while a team below its limit wants it.
func TestEntitlementsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for n := range 5000 {
		total := rng.IntN(200)
		var teams []TeamDemand
		for i := range 1 + rng.IntN(6) {
			teams = append(teams, team(fmt.Sprintf("t%d", i), rng.IntN(120), rng.IntN(60), rng.IntN(3)*rng.IntN(100), float64(rng.IntN(4))))
		}
		got, err := Entitlements(total, teams)
		if err != nil {
			t.Fatal(err)
		}
		sum, wanted, guaranteed := 0, 0, 0
		for i, tm := range teams {
			w := tm.Demand
			if tm.Limit > 0 {
				w = min(w, tm.Limit)
			}
			if got[i] < 0 || got[i] > w {
				t.Fatalf("case %d: team %s got %d, wants %d (demand %d, limit %d)", n, tm.Team, got[i], w, tm.Demand, tm.Limit)
			}
			sum += got[i]
			wanted += w
			guaranteed += min(w, tm.Guarantee)
		}
		if sum != min(total, wanted) {
			t.Fatalf("case %d: %d GPUs handed out of %d, %d wanted: %v for %+v", n, sum, total, wanted, got, teams)
		}
		if guaranteed <= total {
			for i, tm := range teams {
				if g := min(tm.Demand, tm.Guarantee); tm.Limit > 0 && g > tm.Limit {
					continue
				} else if got[i] < g {
					t.Fatalf("case %d: team %s got %d below its guarantee %d: %v for %+v", n, tm.Team, got[i], g, got, teams)
				}
			}
		}
	}
}

// Every algorithm hands out at most the snapshot's capacity: the nodes'
// GPUs less those reserved (a team's entitlement, what higher priority
// classes leave); more reserved than the nodes hold is an error.
func TestAllAlgorithmsHonourReserved(t *testing.T) {
	reg := Builtin()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			a := mustNew(t, name)
			r := rand.New(rand.NewPCG(3, 30))
			for range 300 {
				snap := randomSnapshot(r, 30, 6)
				if total := snap.TotalGPUs(); total > 0 {
					snap.Reserved = r.IntN(total + 1)
				}
				got := allocate(t, a, snap) // checkAllocation: within Capacity
				if n := got.Total(); n > snap.Capacity() {
					t.Fatalf("%d GPUs handed out, capacity %d (%d reserved)", n, snap.Capacity(), snap.Reserved)
				}
			}
			snap := randomSnapshot(r, 5, 2)
			snap.Reserved = snap.TotalGPUs() + 1
			if _, err := a.Allocate(snap); err == nil || !strings.Contains(err.Error(), "reserved") {
				t.Errorf("more reserved than the nodes have: %v, want an error", err)
			}
		})
	}
}

func inTeam(team string, prio int) jobOpt {
	return func(j *model.Job) { j.Spec.Team, j.Spec.Priority = team, prio }
}

// Every algorithm, composed across two teams of guarantees 8 and 8 on 16
// GPUs, decides within each team exactly as it does alone on that team's
// jobs with the team's entitlement as the cluster: the composition
// changes nothing in its own logic.
func TestTeamsComposeEveryAlgorithmUnchanged(t *testing.T) {
	reg := Builtin()
	quotas := []Quota{{Team: "a", Guarantee: 8, Weight: 1}, {Team: "b", Guarantee: 8, Weight: 1}}
	jobs := func() []model.Job {
		return []model.Job{
			job("a1", 1, 4, 16, submitted(1), inTeam("a", 0), rem(500), curve(1, 1.9, 2.7, 3.4, 4)),
			job("b1", 2, 4, 8, submitted(2), inTeam("b", 0), rem(300), curve(1, 1.8, 2.5, 3.1)),
			job("a2", 1, 2, 8, submitted(3), inTeam("a", 0), rem(100), curve(1, 2, 3, 4)),
			job("b2", 1, 1, 2, submitted(4), inTeam("b", 0), rem(900)),
		}
	}
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			composed, err := NewTeams(func() (Allocator, error) { return reg.New(name, nil) }, quotas)
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot([]int{8, 8}, jobs()...)
			got := allocate(t, composed, snap)
			for _, team := range []string{"a", "b"} {
				alone := snapshot([]int{8, 8})
				held := 0
				for _, j := range jobs() {
					if j.Spec.Team == team {
						alone.Jobs = append(alone.Jobs, j)
						held += got.GPUs[j.Spec.Name]
					}
				}
				if held > 16 {
					t.Fatalf("team %s holds %d GPUs of 16", team, held)
				}
				// Each team wants more than 8 (a: 24, b: 10): each is
				// entitled to its guarantee, 8.
				alone.Reserved = 16 - 8
				want := allocate(t, mustNew(t, name), alone)
				for _, j := range alone.Jobs {
					if g, w := got.GPUs[j.Spec.Name], want.GPUs[j.Spec.Name]; g != w {
						t.Errorf("team %s, job %s: %d GPUs composed, %d alone on 8 GPUs", team, j.Spec.Name, g, w)
					}
				}
			}
		})
	}
}

// Hand-computed with ElasticFIFO (minimums first, then a GPU at a time in
// arrival order): borrowing, reclaiming, limits and priority classes.
func TestTeamsElasticFIFO(t *testing.T) {
	quotas := []Quota{{Team: "a", Guarantee: 8, Weight: 1}, {Team: "b", Guarantee: 8, Weight: 1}}
	for _, tc := range []struct {
		name   string
		quotas []Quota
		jobs   []model.Job
		want   map[string]int
	}{
		// team-b has no job: team-a borrows all 16.
		{"borrow", quotas, []model.Job{
			job("a1", 1, 1, 16, submitted(1), inTeam("a", 0)), job("a2", 1, 1, 8, submitted(2), inTeam("a", 0)),
		}, map[string]int{"a1": 8, "a2": 8}},
		// team-b arrives: team-a is back to its 8, shared in arrival order.
		{"reclaim", quotas, []model.Job{
			job("a1", 1, 1, 16, submitted(1), inTeam("a", 0)), job("a2", 1, 1, 8, submitted(2), inTeam("a", 0)),
			job("b1", 1, 1, 8, submitted(3), inTeam("b", 0)),
		}, map[string]int{"a1": 4, "a2": 4, "b1": 8}},
		// team-a may hold at most 6.
		{"limit", []Quota{{Team: "a", Guarantee: 2, Limit: 6, Weight: 1}}, []model.Job{
			job("a1", 1, 1, 16, submitted(1), inTeam("a", 0)), job("x1", 1, 1, 16, submitted(2), inTeam("x", 0)),
		}, map[string]int{"a1": 6, "x1": 10}},
		// Within team-a, priority 0 is served before priority 1, whatever
		// the arrival: a2 (priority 0) takes the team's 8 up to its max 8.
		{"priority classes", quotas, []model.Job{
			job("a1", 1, 1, 16, submitted(1), inTeam("a", 1)), job("a2", 1, 1, 8, submitted(2), inTeam("a", 0)),
			job("b1", 1, 1, 8, submitted(3), inTeam("b", 0)),
		}, map[string]int{"a1": 0, "a2": 8, "b1": 8}},
		// b1's minimum of 3 workers of 4 GPUs cannot use its 8: the 8
		// GPUs go to team-a's job.
		{"unusable entitlement goes back", quotas, []model.Job{
			job("a1", 1, 1, 16, submitted(1), inTeam("a", 0)),
			job("b1", 3, 3, 3, submitted(2), inTeam("b", 0), func(j *model.Job) { j.Spec.GPUsPerWorker = 4 }),
		}, map[string]int{"a1": 16, "b1": 0}},
		// Two teams of no guarantee, each entitled to 8, each with a job
		// of 12 GPUs at least: the running one keeps running on 12
		// rather than both waiting, and the rest goes to nobody.
		{"whole minimum beyond the entitlement, running first", nil, []model.Job{
			job("x1", 12, 12, 12, submitted(1), inTeam("x", 0)),
			job("y1", 12, 12, 12, submitted(2), inTeam("y", 0), running(12)),
		}, map[string]int{"x1": 0, "y1": 12}},
		// The same with team-x guaranteed 12: team-x's job runs, team-y's
		// is halted.
		{"whole minimum beyond the entitlement, guarantee first", []Quota{{Team: "x", Guarantee: 12, Weight: 1}}, []model.Job{
			job("x1", 12, 12, 12, submitted(1), inTeam("x", 0)),
			job("y1", 12, 12, 12, submitted(2), inTeam("y", 0), running(12)),
		}, map[string]int{"x1": 12, "y1": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			composed, err := NewTeams(func() (Allocator, error) { return Builtin().New(NameElasticFIFO, nil) }, tc.quotas)
			if err != nil {
				t.Fatal(err)
			}
			got := allocate(t, composed, snapshot([]int{8, 8}, tc.jobs...))
			for name, want := range tc.want {
				if got.GPUs[name] != want {
					t.Errorf("%s: %d GPUs, want %d (all: %v)", name, got.GPUs[name], want, got.GPUs)
				}
			}
		})
	}
}

// What a priority means, for every algorithm: within a team, the classes
// are served in order (0 first), each by the algorithm alone on what the
// classes before it left. On random snapshots where the team wants more
// than the cluster, the composed answer for class 0 is the algorithm's
// answer for class 0's jobs alone on the whole cluster, and for class 1
// the algorithm's answer for class 1's jobs alone on the rest.
func TestPriorityClassesEveryAlgorithm(t *testing.T) {
	reg := Builtin()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 70))
			checked := 0
			for range 200 {
				snap := randomSnapshot(r, 12, 4)
				total := snap.TotalGPUs()
				if total == 0 || len(snap.Jobs) == 0 {
					continue
				}
				// A class-1 job that wants everything: the team's demand
				// is the cluster.
				snap.Jobs = append(snap.Jobs, job("greedy", 1, 1, 1000, submitted(0), inTeam("", 1)))
				for i := range snap.Jobs[:len(snap.Jobs)-1] {
					snap.Jobs[i].Spec.Priority = r.IntN(2)
				}
				composed, err := NewTeams(func() (Allocator, error) { return reg.New(name, nil) }, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := allocate(t, composed, snap)
				used := 0
				for _, prio := range []int{0, 1} {
					alone := &model.Snapshot{Now: snap.Now, GPUType: snap.GPUType, Nodes: snap.Nodes, Reserved: used}
					for _, j := range snap.Jobs {
						if j.Spec.Priority == prio {
							alone.Jobs = append(alone.Jobs, j)
						}
					}
					if len(alone.Jobs) == 0 {
						continue
					}
					want := allocate(t, mustNew(t, name), alone)
					for _, j := range alone.Jobs {
						if g, w := got.GPUs[j.Spec.Name], want.GPUs[j.Spec.Name]; g != w {
							t.Fatalf("priority %d, job %s: %d GPUs composed, %d by the algorithm alone on %d of %d GPUs\nall: %v",
								prio, j.Spec.Name, g, w, total-used, total, got.GPUs)
						}
					}
					used += want.Total()
				}
				checked++
			}
			if checked < 100 {
				t.Fatalf("only %d snapshots checked", checked)
			}
		})
	}
}

// Hand-computed for every algorithm: on 8 GPUs, a job of priority 0
// submitted after a job of priority 1 that holds all 8 takes the GPUs it
// would take alone; the priority-1 job keeps only what is left.
func TestHighPriorityFirstEveryAlgorithm(t *testing.T) {
	reg := Builtin()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			composed, err := NewTeams(func() (Allocator, error) { return reg.New(name, nil) }, nil)
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot([]int{8},
				job("low", 4, 8, 8, submitted(1), inTeam("", 1), running(8), rem(100), curve(1, 2, 3, 4, 5, 6, 7, 8)),
				job("high", 8, 8, 8, submitted(2), inTeam("", 0), rem(1000), curve(1, 2, 3, 4, 5, 6, 7, 8)))
			got := allocate(t, composed, snap)
			if got.GPUs["high"] != 8 || got.GPUs["low"] != 0 {
				t.Fatalf("high %d, low %d GPUs; want 8 and 0: priority 0 is served first", got.GPUs["high"], got.GPUs["low"])
			}
		})
	}
}

// Reclaim names the waiting jobs whose team is owed GPUs another team
// borrows, and only those.
func TestTeamsReclaim(t *testing.T) {
	quotas := []Quota{{Team: "a", Guarantee: 8, Weight: 1}, {Team: "b", Guarantee: 8, Weight: 1}}
	for _, tc := range []struct {
		name   string
		quotas []Quota
		jobs   []model.Job
		want   []string
	}{
		{"a borrows, b waits", quotas, []model.Job{
			job("a1", 1, 1, 16, inTeam("a", 0), running(16)), job("b1", 1, 1, 8, inTeam("b", 0)), job("b2", 2, 2, 8, inTeam("b", 0)),
		}, []string{"b1", "b2"}},
		{"nobody borrows", quotas, []model.Job{
			job("a1", 1, 1, 16, inTeam("a", 0), running(8)), job("b1", 1, 1, 8, inTeam("b", 0)),
		}, nil},
		{"b holds its guarantee", quotas, []model.Job{
			job("a1", 1, 1, 16, inTeam("a", 0), running(8)), job("b1", 1, 1, 8, inTeam("b", 0), running(8)), job("b2", 1, 1, 8, inTeam("b", 0)),
		}, nil},
		{"b's minimum exceeds what it is owed", quotas, []model.Job{
			job("a1", 1, 1, 16, inTeam("a", 0), running(12)), job("b1", 1, 1, 4, inTeam("b", 0), running(4)), job("b2", 5, 5, 8, inTeam("b", 0)),
		}, nil},
		{"no quotas", nil, []model.Job{
			job("a1", 1, 1, 16, inTeam("a", 0), running(16)), job("b1", 1, 1, 8, inTeam("b", 0)),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			composed, err := NewTeams(func() (Allocator, error) { return Builtin().New(NameElasticFIFO, nil) }, tc.quotas)
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot([]int{8, 8}, tc.jobs...)
			got := composed.Reclaim(snap.Capacity(), func(yield func(*model.Job) bool) {
				for i := range snap.Jobs {
					if !yield(&snap.Jobs[i]) {
						return
					}
				}
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("owed %v, want %v", got, tc.want)
			}
		})
	}
}
