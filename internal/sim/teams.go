package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// Teamed reports whether a run of jobs under opts has teams: quotas
// are given, or a job names a team.
func Teamed(jobs []workload.Job, opts Options) bool {
	return len(opts.Quotas) > 0 || slices.ContainsFunc(jobs, func(j workload.Job) bool { return j.Team != "" })
}

// checkQuotas reports the first quota that is out of range or names a
// team twice.
func checkQuotas(quotas []model.Quota) error {
	seen := map[string]bool{}
	for _, q := range quotas {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("quota: %w", err)
		}
		if seen[q.Team] {
			return fmt.Errorf("quota of team %q given twice", q.Team)
		}
		seen[q.Team] = true
	}
	return nil
}

// ParseQuotas reads quotas as 'voda simulate --quotas' takes them:
// TEAM=GUARANTEE[:LIMIT[:WEIGHT]], comma-separated
// ("team-a=8,team-b=8:16:2"); LIMIT 0 or absent is no limit, WEIGHT
// absent is 1. Every quota must be valid (model.Quota.Validate) and name
// a team once.
func ParseQuotas(s string) ([]model.Quota, error) {
	var out []model.Quota
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		team, spec, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("quota %q: want TEAM=GUARANTEE[:LIMIT[:WEIGHT]]", part)
		}
		q := model.Quota{Team: strings.TrimSpace(team), Weight: 1}
		fields := strings.Split(spec, ":")
		if len(fields) > 3 {
			return nil, fmt.Errorf("quota %q: want TEAM=GUARANTEE[:LIMIT[:WEIGHT]]", part)
		}
		for i, f := range fields {
			f = strings.TrimSpace(f)
			var err error
			switch i {
			case 0:
				q.Guarantee, err = strconv.Atoi(f)
			case 1:
				q.Limit, err = strconv.Atoi(f)
			case 2:
				q.Weight, err = strconv.ParseFloat(f, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("quota %q: %s %q is not a number", part, [...]string{"guarantee", "limit", "weight"}[i], f)
			}
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("quotas %q: none given", s)
	}
	if err := checkQuotas(out); err != nil {
		return nil, err
	}
	return out, nil
}

// TotalGPUs returns the GPUs of the cluster opts describe.
func TotalGPUs(opts Options) (int, error) {
	cl, err := newCluster(opts)
	if err != nil {
		return 0, err
	}
	return cl.total, nil
}

// EqualQuotas returns a quota for each of teams guaranteeing it an equal
// part of gpus (rounded down), with no limit and weight 1.
func EqualQuotas(teams []string, gpus int) []model.Quota {
	out := make([]model.Quota, len(teams))
	for i, t := range teams {
		out[i] = model.Quota{Team: t, Guarantee: gpus / max(len(teams), 1), Weight: 1}
	}
	return out
}

// teamTracker follows each team's GPUs through a run with teams: what it
// holds, what it demands and what its quota entitles it to, integrated
// over time, and the stretches it spends short of min(demand,
// guarantee) while another team borrows (reclaims).
type teamTracker struct {
	total   int
	teams   []algorithm.TeamDemand // by name; Demand is the current one
	index   map[string]int
	records []report.TeamRecord
	// Now, after the latest observe: GPUs held and entitled, and whether
	// the team is short of min(demand, guarantee).
	held, ent []int
	short     []bool
	// waiting says a job of the team holds no GPUs.
	waiting []bool
	// cur is the team's open reclaim; Team "" when none, Running NaN
	// until every job of the team runs.
	cur []report.Reclaim
	// arrived is the earliest submission of the team's jobs delivered
	// since the latest observe, +Inf when none.
	arrived  []float64
	reclaims []report.Reclaim
}

// newTeamTracker returns the tracker of the teams of jobs, with quotas
// (a team none names has model.DefaultQuota), on a cluster of total GPUs.
func newTeamTracker(jobs []workload.Job, quotas []model.Quota, total int) *teamTracker {
	byName := map[string]model.Quota{}
	for _, q := range quotas {
		byName[q.Team] = q
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Team)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	n := len(names)
	t := &teamTracker{total: total, index: map[string]int{}, records: make([]report.TeamRecord, n),
		held: make([]int, n), ent: make([]int, n), short: make([]bool, n), waiting: make([]bool, n), cur: make([]report.Reclaim, n), arrived: make([]float64, n)}
	for i, name := range names {
		q, ok := byName[name]
		if !ok {
			q = model.DefaultQuota
		}
		q.Team = name
		t.teams = append(t.teams, algorithm.TeamDemand{Quota: q})
		t.index[name] = i
		t.records[i] = report.TeamRecord{Team: name, Guarantee: q.Guarantee, Limit: q.Limit, Weight: q.Weight}
		t.arrived[i] = math.Inf(1)
	}
	return t
}

// arrive notes a job of team submitted at submit delivered now.
func (t *teamTracker) arrive(team string, submit float64) {
	i := t.index[team]
	t.arrived[i] = min(t.arrived[i], submit)
}

// elapse integrates the state of the latest observe over dt seconds.
func (t *teamTracker) elapse(dt float64) {
	if dt <= 0 {
		return
	}
	for i := range t.teams {
		r := &t.records[i]
		r.HeldGPUSeconds += float64(t.held[i]) * dt
		r.EntitledGPUSeconds += float64(t.ent[i]) * dt
		if t.teams[i].Demand > 0 {
			r.ActiveSeconds += dt
		}
		if t.short[i] {
			r.ShortSeconds += dt
		}
	}
}

// observe takes the teams' state from the live jobs at now: their GPUs
// and demands (as algorithm.Teams counts a demand: each unfinished job's
// most GPUs, at most the cluster, the sum at most the cluster), the
// entitlements, and opens or closes reclaims.
func (t *teamTracker) observe(now float64, live []*simJob) error {
	for i := range t.teams {
		t.held[i], t.teams[i].Demand, t.waiting[i] = 0, 0, false
	}
	for _, j := range live {
		if j.done {
			continue
		}
		i := t.index[j.w.Team]
		t.held[i] += j.workers()
		t.waiting[i] = t.waiting[i] || j.workers() == 0
		d := &t.teams[i].Demand
		*d = min(*d+min(j.w.MaxWorkers*j.w.PerWorker(), t.total), t.total)
	}
	ent, err := algorithm.Entitlements(t.total, t.teams)
	if err != nil {
		return fmt.Errorf("simulate: teams: %w", err)
	}
	copy(t.ent, ent)
	// A short team holds less than its guarantee, so any team holding
	// more than its own is another team, borrowing.
	borrowing := false
	for i, td := range t.teams {
		t.short[i] = t.held[i] < min(td.Demand, td.Guarantee)
		borrowing = borrowing || t.held[i] > td.Guarantee
	}
	for i, td := range t.teams {
		c := &t.cur[i]
		open := c.Team != ""
		if open && math.IsNaN(c.Running) && (!t.waiting[i] || !t.short[i]) {
			c.Running = now - c.Start
		}
		switch {
		case open && !t.short[i]:
			c.Seconds, c.Resolved = now-c.Start, true
			t.reclaims = append(t.reclaims, *c)
			*c = report.Reclaim{}
		case !open && t.short[i] && t.waiting[i] && borrowing:
			// Short with a job waiting while another team borrows: from
			// the submission that made it short, if one just did.
			*c = report.Reclaim{Team: td.Team, Start: min(now, t.arrived[i]), Running: math.NaN()}
		}
		t.arrived[i] = math.Inf(1)
	}
	return nil
}

// record returns the teams' records and reclaims at the run's end, now:
// reclaims still open end there, unresolved (Running -1 if a job still
// waits).
func (t *teamTracker) record(now float64) ([]report.TeamRecord, []report.Reclaim) {
	out := slices.Clone(t.reclaims)
	for _, c := range t.cur {
		if c.Team != "" {
			c.Seconds = now - c.Start
			if math.IsNaN(c.Running) {
				c.Running = -1
			}
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b report.Reclaim) int { return cmp.Compare(a.Start, b.Start) })
	return slices.Clone(t.records), out
}

// aloneJCT is a job's completion time alone on 1/n of the cluster: a
// restart, then its work at its best rate on min(its most GPUs, total/n)
// GPUs (whole workers, at least its minimum) packed onto the fewest
// nodes, each epoch at the best batch size the job may choose (its fixed
// batch unless it adapts), the rate at each (k, batch, epoch) from its
// performance model. best caches rates by application, GPUs and epoch.
func (e *engine) aloneJCT(j *simJob, n int, best map[aloneKey]float64) (float64, error) {
	g := j.w.PerWorker()
	k := max(min(j.w.MaxWorkers, e.cl.total/max(n, 1)/g), j.w.MinWorkers)
	place := e.cl.pack(k, g)
	batches := []int{j.batch}
	adaptive := e.opts.AdaptiveBatch && j.prof != nil && j.bounds.Adaptive()
	if adaptive {
		batches = batchGrid(j.bounds.Clamp(j.bounds.InitBatch, k*g), j.bounds.Largest(k*g))
	} else if j.prof != nil && j.bounds.Fixed > 0 {
		batches = []int{j.bounds.Fixed}
	}
	t := e.port.restartCost
	for ep := range j.epochs {
		key := aloneKey{app: j.m.Name(), gpus: k * g, epoch: ep, batch: batches[0], adaptive: adaptive}
		r, ok := best[key]
		if !ok {
			for _, b := range batches {
				rb, err := j.m.Rate(place, b, ep)
				if err != nil {
					return 0, fmt.Errorf("simulate: job %s alone: %w", j.w.Name, err)
				}
				r = max(r, rb)
			}
			if !(r > 0) {
				return 0, fmt.Errorf("simulate: job %s alone: no rate on %v", j.w.Name, place)
			}
			best[key] = r
		}
		t += (j.epochProgress(ep+1) - j.epochProgress(ep)) / r
	}
	return t, nil
}

// aloneKey identifies a best rate of aloneJCT: with adaptive batches the
// application's grid from its smallest batch on those GPUs, else the
// fixed batch.
type aloneKey struct {
	app                string
	gpus, epoch, batch int
	adaptive           bool
}

// batchGrid returns 16 batch sizes spaced evenly in ratio from lo to hi,
// both included, without repeats.
func batchGrid(lo, hi int) []int {
	if hi <= lo {
		return []int{lo}
	}
	const steps = 16
	out := []int{lo}
	for s := 1; s <= steps; s++ {
		b := int(math.Round(float64(lo) * math.Pow(float64(hi)/float64(lo), float64(s)/steps)))
		if b > out[len(out)-1] {
			out = append(out, b)
		}
	}
	return out
}
