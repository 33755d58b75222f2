package algorithm

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// tracker is what an allocator remembers of the previous snapshot it
// answered, so that a decision costs what changed rather than a sort and
// a map of every job. At 100,000 live jobs on 8,000 GPUs most jobs only
// wait, and between two cycles few of them change: the scheduler's
// snapshots list the jobs in arrival order (model.Snapshot.Jobs), so the
// tracker matches the new snapshot's jobs with the previous one's in one
// merge walk, checks only the new names for duplicates (against a set it
// keeps up to date), and keeps the priority order of the jobs whose sort
// key did not change, sorting only the others and merging them in.
//
// The answer never depends on the tracker's state: the order is the one
// total order of the keys (ties by arrival, names unique), which a full
// sort would give too. A snapshot not in arrival order is answered
// without the tracker (a full sort and a name map, as before) and resets
// it. The mutex makes an allocator safe for concurrent use; the
// scheduler calls it from one goroutine, so it is never contended.
type tracker struct {
	mu sync.Mutex
	// valid says cur, names and keys describe the last snapshot checked.
	valid bool
	// cur are the last snapshot's jobs in its (arrival) order; old the
	// ones of the snapshot before, and match[i] the position in old of
	// cur[i]'s job, -1 for a job that is new.
	cur, old jobColumns
	match    []int32
	// names holds the names of cur.
	names map[string]struct{}
	// keys[i] is cur[i]'s sort key and order the priority order of cur
	// (job indices), when ordered is set; oldKeys and oldOrder are those
	// of old, usable when oldOrdered is set.
	keys, oldKeys       []sortKey
	order, oldOrder     []int
	ordered, oldOrdered bool
	keep                []int32 // scratch: old position -> new index of a job whose key is unchanged
	removed, added      []int32
	dirty               []int
}

// jobColumns are what the allocators read of every job, copied out of
// the snapshot in the check's one sequential walk: reading them in
// priority order from these compact slices costs cache hits, where
// reading the snapshot's large jobs in that order costs a miss each.
type jobColumns struct {
	submit          []time.Time
	name            []string
	minW, req, maxW []int32
}

func (c *jobColumns) clear() {
	c.submit, c.name = c.submit[:0], c.name[:0]
	c.minW, c.req, c.maxW = c.minW[:0], c.req[:0], c.maxW[:0]
}

func (c *jobColumns) add(s *model.JobSpec) {
	c.submit = append(c.submit, s.SubmitTime)
	c.name = append(c.name, s.Name)
	c.minW = append(c.minW, int32(s.MinWorkers))
	c.req = append(c.req, int32(s.RequestedWorkers))
	c.maxW = append(c.maxW, int32(s.MaxWorkers))
}

// sortKey is what a priority order compares before arrival: f first
// (never NaN), then unknown (false first), then t.
type sortKey struct {
	f       float64
	t       time.Time
	unknown bool
}

func cmpKey(a, b *sortKey) int {
	if a.f < b.f {
		return -1
	}
	if a.f > b.f {
		return 1
	}
	if a.unknown != b.unknown {
		if a.unknown {
			return 1
		}
		return -1
	}
	return a.t.Compare(b.t)
}

// check rejects input no allocator can answer sensibly. It checks only
// what allocators rely on: node GPU counts (checkNodes), unique non-empty
// job names and 1 <= min <= requested <= max (checkSpec). For a snapshot
// in arrival order the duplicate check costs the jobs that arrived or left
// since the previous snapshot, within the one walk that checks and copies
// every job. The caller holds t.mu.
func (t *tracker) check(snap *model.Snapshot) (*input, error) {
	in, err := checkNodes(snap)
	if err != nil {
		return nil, err
	}
	if !t.valid {
		t.reset()
		t.cur.clear()
	}
	t.old, t.cur = t.cur, t.old
	t.cur.clear()
	t.oldKeys, t.keys = t.keys, t.oldKeys
	t.oldOrder, t.order = t.order, t.oldOrder
	t.oldOrdered, t.ordered = t.ordered, false
	t.match = t.match[:0]
	t.removed, t.added = t.removed[:0], t.added[:0]
	old := t.old
	p := 0
	sorted := true
	for i := range snap.Jobs {
		s := &snap.Jobs[i].Spec
		if err := checkSpec(i, s); err != nil {
			t.reset()
			return nil, err
		}
		m := int32(-1)
		for p < len(old.name) {
			c := old.submit[p].Compare(s.SubmitTime)
			if c == 0 && old.name[p] != s.Name { // == is cheap for a shared string
				c = strings.Compare(old.name[p], s.Name)
			}
			if c > 0 {
				break
			}
			if c == 0 {
				m = int32(p)
				p++
				break
			}
			t.removed = append(t.removed, int32(p))
			p++
		}
		// Two jobs matched in a row are in the order they had in old,
		// which was strictly sorted (p only grows): only the others are
		// compared, so a tie in submit time costs no name comparison.
		if sorted && i > 0 && (m < 0 || t.match[i-1] < 0) && cmpArrival(&snap.Jobs[i-1], &snap.Jobs[i]) >= 0 {
			sorted = false
		}
		if m < 0 {
			t.added = append(t.added, int32(i))
		}
		t.match = append(t.match, m)
		t.cur.add(s)
	}
	in.jobColumns = &t.cur
	if !sorted {
		t.reset()
		if err := uniqueNames(snap); err != nil {
			return nil, err
		}
		return in, nil
	}
	in.sorted = true
	for ; p < len(old.name); p++ {
		t.removed = append(t.removed, int32(p))
	}
	if t.names == nil {
		t.names = make(map[string]struct{}, len(snap.Jobs))
	}
	// Departures first: a job may leave and another of the same name
	// arrive (at another submit time) between two snapshots.
	for _, p := range t.removed {
		delete(t.names, old.name[p])
	}
	for _, i := range t.added {
		name := snap.Jobs[i].Spec.Name
		if _, dup := t.names[name]; dup {
			t.reset()
			return nil, dupError(name)
		}
		t.names[name] = struct{}{}
	}
	t.valid = true
	return in, nil
}

// reset forgets the previous snapshot.
func (t *tracker) reset() {
	t.valid, t.ordered, t.oldOrdered = false, false, false
	t.old.clear()
	t.names = nil
}

// arrival returns the job indices in arrival order. The slice belongs to
// the tracker: read it before the next call.
func (t *tracker) arrival(in *input) []int {
	n := len(in.snap.Jobs)
	if !in.sorted {
		return sortedIndices(in.snap, byArrival)
	}
	if cap(t.order) < n {
		t.order = make([]int, n)
	}
	t.order = t.order[:n]
	for i := range t.order {
		t.order[i] = i
	}
	return t.order
}

// sorted returns the job indices ordered by key(i), ties by arrival.
// Jobs matched with the previous snapshot whose key did not change keep
// their relative order; only the others are sorted, then merged in. The
// slice belongs to the tracker: read it before the next call.
func (t *tracker) sorted(in *input, key func(i int) sortKey) []int {
	snap := in.snap
	n := len(snap.Jobs)
	if !in.sorted {
		return sortByKey(snap, key)
	}
	t.keys = slices.Grow(t.keys[:0], n)[:n]
	keys := t.keys
	for i := range n {
		keys[i] = key(i)
	}
	// The jobs whose key did not change, in the previous order.
	order := slices.Grow(t.order[:0], n)
	t.dirty = t.dirty[:0]
	if t.oldOrdered {
		t.keep = slices.Grow(t.keep[:0], len(t.old.name))[:len(t.old.name)]
		for p := range t.keep {
			t.keep[p] = -1
		}
		for i, p := range t.match {
			if p >= 0 && cmpKey(&t.oldKeys[p], &keys[i]) == 0 {
				t.keep[p] = int32(i)
			} else {
				t.dirty = append(t.dirty, i)
			}
		}
		for _, p := range t.oldOrder {
			if i := t.keep[p]; i >= 0 {
				order = append(order, int(i))
			}
		}
	} else {
		for i := range n {
			t.dirty = append(t.dirty, i)
		}
	}
	// In an arrival-ordered snapshot a lower index is an earlier arrival.
	byKey := func(a, b int) int {
		if c := cmpKey(&keys[a], &keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(t.dirty, byKey)
	order = mergeSorted(order, t.dirty, byKey)
	t.order, t.ordered = order, true
	return order
}

// mergeSorted merges b into a, both sorted by cmp, in place at the end of
// a's backing array (which must have room for both): it fills from the
// back so no element of a is overwritten before it is read.
func mergeSorted(a, b []int, cmp func(x, y int) int) []int {
	na, nb := len(a), len(b)
	out := a[:na+nb]
	for k := na + nb - 1; nb > 0; k-- {
		if na > 0 && cmp(a[na-1], b[nb-1]) > 0 {
			out[k] = a[na-1]
			na--
		} else {
			out[k] = b[nb-1]
			nb--
		}
	}
	return out
}
