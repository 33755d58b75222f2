package algorithm

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
)

// Quota is one team's share of a GPU type's GPUs (model.Quota).
type Quota = model.Quota

// TeamDemand is a team's quota and the GPUs its jobs want now.
type TeamDemand struct {
	Quota
	Demand int
}

// Entitlements divides total GPUs among teams (sorted by Team, names
// unique) and returns each team's GPUs, in the same order:
//
//  1. each team gets min(demand, guarantee, limit); when those exceed
//     total (guarantees sold beyond the cluster, or nodes lost), total is
//     divided in proportion to the guarantees instead, each team capped
//     at its own;
//  2. what is left goes to the teams that want more, in proportion to
//     their weights, each up to min(demand, limit), the share of a team
//     that needs less going to the others;
//  3. GPUs that do not divide evenly go one at a time to the teams with
//     the largest remainders of their exact shares, ties by team name.
//
// A team of weight 0 gets its guarantee and nothing beyond while another
// team wants GPUs; it never gets more than it demands. The answer depends
// on its arguments only.
func Entitlements(total int, teams []TeamDemand) ([]int, error) {
	if total < 0 {
		return nil, fmt.Errorf("entitlements: %d GPUs", total)
	}
	for i, t := range teams {
		switch {
		case i > 0 && teams[i-1].Team >= t.Team:
			return nil, fmt.Errorf("entitlements: team %q after %q: want unique names in order", t.Team, teams[i-1].Team)
		case t.Demand < 0 || t.Guarantee < 0 || t.Limit < 0:
			return nil, fmt.Errorf("entitlements: team %q: demand %d, guarantee %d, limit %d: want none negative", t.Team, t.Demand, t.Guarantee, t.Limit)
		case !(t.Weight >= 0) || math.IsInf(t.Weight, 1):
			return nil, fmt.Errorf("entitlements: team %q: weight %v: want a finite number, 0 or more", t.Team, t.Weight)
		}
	}
	want := make([]int, len(teams)) // min(demand, limit)
	base := make([]int, len(teams)) // min(want, guarantee)
	sum := 0
	for i, t := range teams {
		want[i] = t.Demand
		if t.Limit > 0 {
			want[i] = min(want[i], t.Limit)
		}
		base[i] = min(want[i], t.Guarantee)
		sum += base[i]
	}
	got := make([]int, len(teams))
	if sum > total {
		// More guaranteed than there is: by guarantee, each up to its own.
		shares := make([]float64, len(teams))
		for i := range teams {
			shares[i] = float64(teams[i].Guarantee)
		}
		fill(got, base, shares, total, teams)
		return got, nil
	}
	copy(got, base)
	shares := make([]float64, len(teams))
	for i := range teams {
		shares[i] = teams[i].Weight
	}
	fill(got, want, shares, total-sum, teams)
	return got, nil
}

// fill hands out left GPUs to the teams below their caps in proportion to
// their shares (water-filling: a team that reaches its cap leaves its
// share to the others), then the GPUs the proportions leave over one at a
// time by the largest remainder, ties by team order. Teams of share 0 get
// nothing while a team of a positive share is below its cap.
func fill(got, caps []int, shares []float64, left int, teams []TeamDemand) {
	for left > 0 {
		var open []int
		var w float64
		for i := range got {
			if got[i] < caps[i] && shares[i] > 0 {
				open = append(open, i)
				w += shares[i]
			}
		}
		if len(open) == 0 {
			// Only teams of share 0 want more: nobody else wants these
			// GPUs, so they share them equally rather than leave them idle.
			shares = slices.Clone(shares)
			for i := range got {
				if got[i] < caps[i] {
					open = append(open, i)
					shares[i], w = 1, w+1
				}
			}
			if len(open) == 0 {
				return
			}
		}
		type rem struct {
			i    int
			frac float64
		}
		var rems []rem
		given, capped := 0, false
		for _, i := range open {
			exact := float64(left) * shares[i] / w
			n := int(exact)
			if room := caps[i] - got[i]; n >= room {
				n, capped = room, true
			} else {
				rems = append(rems, rem{i, exact - float64(n)})
			}
			got[i] += n
			given += n
		}
		left -= given
		if capped {
			continue // the capped teams' shares go round again
		}
		// Nobody capped: the fractions are what is left, fewer GPUs than
		// open teams.
		slices.SortStableFunc(rems, func(a, b rem) int {
			return cmp.Or(cmp.Compare(b.frac, a.frac), cmp.Compare(teams[a.i].Team, teams[b.i].Team))
		})
		for _, r := range rems {
			if left == 0 {
				break
			}
			if got[r.i] < caps[r.i] {
				got[r.i]++
				left--
			}
		}
	}
}

// Teams composes an algorithm across teams and priority classes: the
// GPUs are divided among the teams by their quotas and demands
// (Entitlements); within a team, the classes of its jobs' priorities (0
// first) are served in order, each by its own instance of the algorithm
// on a snapshot of the class's jobs whose capacity is what the team's
// entitlement and the classes before it leave (model.Snapshot.Reserved).
// The algorithm's own logic is unchanged: within a class it decides as
// it would alone on a cluster of that capacity. GPUs a team cannot use
// (its jobs' minimums or workers of several GPUs do not fill its
// entitlement) go again to the teams that want more.
type Teams struct {
	newInner func() (Allocator, error)
	name     string
	quotas   map[string]Quota
	inner    map[teamClass]Allocator
	// requeue runs the algorithm's queue moves on the whole snapshot,
	// when it has any (Tiresias): they are each job's own.
	requeue Prioritizer
	// last is the division of the last Allocate.
	last []TeamShare
}

// TeamShare is how one decision divided the GPUs for one team.
type TeamShare struct {
	Team string
	// Demand is what its jobs want (the sum of their maximums, in GPUs,
	// at most the capacity); Entitled what the quotas give it, after
	// the GPUs other teams could not use went round; Allocated what its
	// jobs got.
	Demand, Entitled, Allocated int
}

// Shares returns the division of the last decision by team, sorted by
// team; nil before the first.
func (t *Teams) Shares() []TeamShare { return t.last }

type teamClass struct {
	team     string
	priority int
}

// NewTeams returns the composition of the algorithm newInner builds, one
// instance per team and priority class, with quotas by team; a team no
// quota names has model.DefaultQuota.
func NewTeams(newInner func() (Allocator, error), quotas []Quota) (*Teams, error) {
	probe, err := newInner()
	if err != nil {
		return nil, err
	}
	t := &Teams{newInner: newInner, name: probe.Name(), quotas: map[string]Quota{}, inner: map[teamClass]Allocator{}}
	if p, ok := probe.(Prioritizer); ok {
		t.requeue = p
	}
	for _, q := range quotas {
		if _, dup := t.quotas[q.Team]; dup {
			return nil, fmt.Errorf("teams: quota of %q given twice", q.Team)
		}
		t.quotas[q.Team] = q
	}
	return t, nil
}

// Name returns the composed algorithm's name.
func (t *Teams) Name() string { return t.name }

// Requeue passes the algorithm's queue moves through.
func (t *Teams) Requeue(snap *model.Snapshot) []model.QueueChange {
	if t.requeue == nil {
		return nil
	}
	return t.requeue.Requeue(snap)
}

// Allocate divides the snapshot's capacity among teams and classes.
func (t *Teams) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	if snap == nil {
		return model.Allocation{}, fmt.Errorf("teams: nil snapshot")
	}
	total := snap.Capacity()
	if snap.Reserved < 0 || total < 0 {
		return model.Allocation{}, fmt.Errorf("teams: %d GPUs reserved of %d", snap.Reserved, snap.TotalGPUs())
	}
	// The teams, by name, each with its jobs' classes in priority order.
	byTeam := map[string][]int{}
	for i := range snap.Jobs {
		byTeam[snap.Jobs[i].Spec.Team] = append(byTeam[snap.Jobs[i].Spec.Team], i)
	}
	names := slices.Sorted(maps.Keys(byTeam))
	if len(names) == 1 {
		// One team under no limit, one class: the algorithm alone, on
		// the snapshot as it is.
		q, ok := t.quotas[names[0]]
		if !ok {
			q = model.DefaultQuota
		}
		prio := snap.Jobs[0].Spec.Priority
		one := q.Limit == 0 || q.Limit >= total
		for i := range snap.Jobs {
			one = one && snap.Jobs[i].Spec.Priority == prio
		}
		if one {
			key := teamClass{names[0], prio}
			a, err := t.instance(key)
			if err != nil {
				return model.Allocation{}, err
			}
			for k := range t.inner {
				if k != key {
					delete(t.inner, k)
				}
			}
			got, err := a.Allocate(snap)
			if err != nil {
				return got, err
			}
			d := 0
			for i := range snap.Jobs {
				s := &snap.Jobs[i].Spec
				d = min(d+min(s.MaxWorkers*s.PerWorker(), total), total)
			}
			t.last = []TeamShare{{Team: names[0], Demand: d, Entitled: cmp.Or(q.Limit, total), Allocated: got.Total()}}
			if q.Limit > total {
				t.last[0].Entitled = total
			}
			return got, nil
		}
	}
	demands := make([]TeamDemand, len(names))
	for k, name := range names {
		q, ok := t.quotas[name]
		if !ok {
			q = model.DefaultQuota
		}
		q.Team = name
		d := 0
		for _, i := range byTeam[name] {
			s := &snap.Jobs[i].Spec
			d += min(s.MaxWorkers*s.PerWorker(), total)
			d = min(d, total)
		}
		demands[k] = TeamDemand{Quota: q, Demand: d}
	}
	wanted := make([]int, len(names)) // the demands before the passes below lower them
	for k := range demands {
		wanted[k] = demands[k].Demand
	}
	out := model.Allocation{GPUs: map[string]int{}}
	used := make([]int, len(names))
	answers := make([][]model.Allocation, len(names))
	seen := map[teamClass]bool{}
	// Each team's classes, built on the team's first run and kept for
	// the passes below, which only change the capacity: a decision copies
	// each job once.
	type class struct {
		priority int
		jobs     []model.Job
	}
	classes := make([][]class, len(names))
	ran := make([]int, len(names)) // the capacity of the team's last run, -1 for none
	for k := range ran {
		ran[k] = -1
	}
	run := func(k int, capacity int) error {
		if ran[k] == capacity {
			return nil // the same answer: the algorithms are deterministic
		}
		ran[k] = capacity
		if classes[k] == nil {
			idx := byTeam[names[k]]
			prios := make([]int, 0, 4)
			for _, i := range idx {
				prios = append(prios, snap.Jobs[i].Spec.Priority)
			}
			slices.Sort(prios)
			prios = slices.Compact(prios)
			// One array for the team's jobs, class after class, each in
			// the snapshot's order.
			all := make([]model.Job, 0, len(idx))
			for _, p := range prios {
				from := len(all)
				for _, i := range idx {
					if snap.Jobs[i].Spec.Priority == p {
						all = append(all, snap.Jobs[i])
					}
				}
				classes[k] = append(classes[k], class{priority: p, jobs: all[from:len(all):len(all)]})
			}
		}
		answers[k] = answers[k][:0]
		used[k] = 0
		left := capacity
		for _, c := range classes[k] {
			key := teamClass{names[k], c.priority}
			seen[key] = true
			a, err := t.instance(key)
			if err != nil {
				return err
			}
			sub := &model.Snapshot{Now: snap.Now, GPUType: snap.GPUType, Nodes: snap.Nodes, Reserved: snap.TotalGPUs() - left, Jobs: c.jobs}
			got, err := a.Allocate(sub)
			if err != nil {
				return fmt.Errorf("teams: team %q, priority %d: %w", names[k], c.priority, err)
			}
			answers[k] = append(answers[k], got)
			left -= got.Total()
			used[k] += got.Total()
		}
		return nil
	}
	ent, err := Entitlements(total, demands)
	if err != nil {
		return model.Allocation{}, fmt.Errorf("teams: %w", err)
	}
	for k := range names {
		if err := run(k, ent[k]); err != nil {
			return model.Allocation{}, err
		}
	}
	// GPUs a team could not use go to the teams that used all theirs:
	// a team's demand is now what it used, unless it used everything.
	for range names {
		sum := 0
		for k := range names {
			sum += used[k]
		}
		if sum >= total {
			break
		}
		changed := false
		for k := range names {
			if used[k] < ent[k] && demands[k].Demand != used[k] {
				demands[k].Demand, changed = used[k], true
			}
		}
		if !changed {
			break
		}
		next, err := Entitlements(total, demands)
		if err != nil {
			return model.Allocation{}, fmt.Errorf("teams: %w", err)
		}
		for k := range names {
			if next[k] > ent[k] {
				if err := run(k, next[k]); err != nil {
					return model.Allocation{}, err
				}
			}
		}
		ent = next
	}
	// GPUs still free: no team's entitlement held a whole minimum of its
	// waiting jobs (two teams of 2 GPUs each, each with a job of 4).
	// They are offered whole to one team at a time: teams below their
	// guarantee first, then the teams whose jobs hold the most GPUs now
	// (so that a running job keeps running rather than two jobs waiting),
	// then by name.
	free := total
	for k := range names {
		free -= used[k]
	}
	if free > 0 {
		holds := make([]int, len(names))
		for k, name := range names {
			for _, i := range byTeam[name] {
				holds[k] += snap.Jobs[i].State.GPUs
			}
		}
		order := make([]int, len(names))
		for k := range order {
			order[k] = k
		}
		below := func(k int) bool { return used[k] < min(demands[k].Guarantee, total) }
		slices.SortStableFunc(order, func(a, b int) int {
			switch ba, bb := below(a), below(b); {
			case ba && !bb:
				return -1
			case bb && !ba:
				return 1
			}
			return cmp.Compare(holds[b], holds[a])
		})
		for _, k := range order {
			if free == 0 {
				break
			}
			limit := demands[k].Limit
			capacity := used[k] + free
			if limit > 0 {
				capacity = min(capacity, limit)
			}
			if capacity <= used[k] {
				continue
			}
			before := used[k]
			if err := run(k, capacity); err != nil {
				return model.Allocation{}, err
			}
			free -= used[k] - before
		}
	}
	for k := range names {
		for _, a := range answers[k] {
			for name, g := range a.GPUs {
				out.GPUs[name] = g
			}
			for name, b := range a.Batch {
				if out.Batch == nil {
					out.Batch = map[string]int{}
				}
				out.Batch[name] = b
			}
			out.Order = append(out.Order, a.Order...)
		}
	}
	t.last = make([]TeamShare, len(names))
	for k, name := range names {
		t.last[k] = TeamShare{Team: name, Demand: wanted[k], Entitled: max(ent[k], used[k]), Allocated: used[k]}
	}
	for key := range t.inner {
		if !seen[key] {
			delete(t.inner, key) // a team or class with no job now
		}
	}
	return out, nil
}

// instance returns the algorithm's instance for a team's class, built on
// first use, so that an algorithm that carries work from one decision to
// the next (the tracker) sees the same jobs each time.
func (t *Teams) instance(key teamClass) (Allocator, error) {
	if a, ok := t.inner[key]; ok {
		return a, nil
	}
	a, err := t.newInner()
	if err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	t.inner[key] = a
	return a, nil
}

// Reclaim returns the waiting jobs owed GPUs that other teams borrow
// (Reclaimer): a team is owed when it holds less than its guarantee (at
// most its demand and its limit) and has a waiting job whose minimum fits
// in the difference; GPUs are borrowed when a team holds more than its
// guarantee.
func (t *Teams) Reclaim(total int, jobs iter.Seq[*model.Job]) []string {
	if len(t.quotas) == 0 {
		return nil // no guarantees: nothing is owed
	}
	type team struct {
		held, demand int
		waiting      []*model.Job
	}
	teams := map[string]*team{}
	for j := range jobs {
		tm := teams[j.Spec.Team]
		if tm == nil {
			tm = &team{}
			teams[j.Spec.Team] = tm
		}
		tm.held += j.State.GPUs
		tm.demand = min(tm.demand+min(j.Spec.MaxWorkers*j.Spec.PerWorker(), total), total)
		if j.State.GPUs == 0 {
			tm.waiting = append(tm.waiting, j)
		}
	}
	borrowed := false
	for name, tm := range teams {
		if tm.held > t.quota(name).Guarantee {
			borrowed = true
			break
		}
	}
	if !borrowed {
		return nil
	}
	var owed []string
	for name, tm := range teams {
		q := t.quota(name)
		due := min(q.Guarantee, tm.demand)
		if q.Limit > 0 {
			due = min(due, q.Limit)
		}
		for _, j := range tm.waiting {
			if s := &j.Spec; tm.held+s.MinWorkers*s.PerWorker() <= due {
				owed = append(owed, s.Name)
			}
		}
	}
	slices.Sort(owed)
	return owed
}

func (t *Teams) quota(team string) Quota {
	if q, ok := t.quotas[team]; ok {
		return q
	}
	return model.DefaultQuota
}
