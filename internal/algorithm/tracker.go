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
	// (job indices), when ordered is set, with okeys[k] the key of
	// order[k]; oldKeys, oldOrder and oldOkeys are those of old, usable
	// when oldOrdered is set. okeys let the merge compare keys in
	// sequence rather than look each one up by job index, a cache miss
	// apiece at 100,000 jobs.
	keys, oldKeys       []sortKey
	order, oldOrder     []int
	okeys, oldOkeys     []sortKey
	ordered, oldOrdered bool
	ident               []int   // arrival's answer, apart from order
	keep                []int32 // scratch: old position -> new index of a job whose key is unchanged
	removed, added      []int32
	dirty, dirtySorted  []keyedJob
	dirtyRefs           []keyRef
}

// keyRef is what sorting the changed jobs moves and mostly compares: a
// key's f (which decides almost every comparison) and the position of the
// full keyedJob. Sorting these 16 bytes is about twice as fast as sorting
// the 48-byte keyedJobs.
type keyRef struct {
	f   float64
	pos int32
}

// keyedJob is a job index with its sort key, so that sorting the changed
// jobs reads their keys from one compact slice.
type keyedJob struct {
	k sortKey
	i int
}

// cmpKeyed orders by key, then by index: in an arrival-ordered snapshot a
// lower index is an earlier arrival.
func cmpKeyed(a, b *keyedJob) int {
	if c := cmpKey(&a.k, &b.k); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// jobColumns are what the allocators read of every job, copied out of
// the snapshot in the check's one sequential walk: reading them in
// priority order from these compact slices costs cache hits, where
// reading the snapshot's large jobs in that order costs a miss each.
type jobColumns struct {
	submit []time.Time
	name   []string
	// minW, req and maxW are the job's worker counts in GPUs (workers x
	// G), per its G, the GPUs of one worker: an allocator hands out whole
	// workers, per[i] GPUs at a time.
	minW, req, maxW, per []int32
	// curve holds each job's Est.Speedup when the allocator asked check
	// for it: a key derived from a curve is reused while the job keeps the
	// same curve (sameCurve).
	curve [][]float64
}

func (c *jobColumns) clear() {
	c.submit, c.name = c.submit[:0], c.name[:0]
	c.minW, c.req, c.maxW, c.per = c.minW[:0], c.req[:0], c.maxW[:0], c.per[:0]
	clear(c.curve) // let the curves go
	c.curve = c.curve[:0]
}

func (c *jobColumns) add(s *model.JobSpec) {
	c.submit = append(c.submit, s.SubmitTime)
	c.name = append(c.name, s.Name)
	g := s.PerWorker()
	c.minW = append(c.minW, inGPUs(s.MinWorkers, g))
	c.req = append(c.req, inGPUs(s.RequestedWorkers, g))
	c.maxW = append(c.maxW, inGPUs(s.MaxWorkers, g))
	c.per = append(c.per, int32(g))
}

// inGPUs is workers x g, at most the first multiple of g above
// maxClusterGPUs: a job that asks for more can never be given it, and the
// count stays far from overflowing.
func inGPUs(workers, g int) int32 {
	return int32(min(workers, maxClusterGPUs/g+1) * g)
}

// keyFunc returns a job's sort key; m is the job's position in the
// previous snapshot (t.old, whose keys are t.oldKeys), -1 for a new job.
type keyFunc func(j *model.Job, m int32) sortKey

// keyed returns a visit for check that records each job's key in t.keys.
func (t *tracker) keyed(key keyFunc) func(j *model.Job, m int32) {
	return func(j *model.Job, m int32) { t.keys = append(t.keys, key(j, m)) }
}

// jobKey adapts a key that depends on the job alone.
func jobKey(key func(*model.Job) sortKey) keyFunc {
	return func(j *model.Job, _ int32) sortKey { return key(j) }
}

// sameCurve reports whether two curves are the same slice. Snapshots are
// immutable (model.Snapshot), and the core replaces a job's curve rather
// than modify it, so the same slice has the same values: what was derived
// from it can be reused without reading it again. The columns hold the
// slices themselves, so their arrays cannot be freed and reused for
// another curve while compared.
func sameCurve(a, b []float64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
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
// every job. visit, if not nil, is called for each job in the same walk,
// while the job is in cache, with its position in the previous snapshot
// (-1 if new): t.keyed(key) records each job's sort key, which sorted then
// uses when given no key of its own. With curves set the walk also
// records each job's speedup curve in t.cur.curve. The caller holds t.mu.
func (t *tracker) check(snap *model.Snapshot, visit func(j *model.Job, m int32), curves bool) (*input, error) {
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
	t.oldOkeys, t.okeys = t.okeys, t.oldOkeys
	t.oldOrdered, t.ordered = t.ordered, false
	t.keys = t.keys[:0]
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
		if curves {
			t.cur.curve = append(t.cur.curve, snap.Jobs[i].Est.Speedup)
		}
		if visit != nil {
			visit(&snap.Jobs[i], m)
		}
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
	if cap(t.ident) < n {
		t.ident = make([]int, n)
	}
	t.ident = t.ident[:n]
	for i := range t.ident {
		t.ident[i] = i
	}
	return t.ident
}

// sorted returns the job indices ordered by key(i), ties by arrival; a
// nil key takes the keys check read. Jobs matched with the previous
// snapshot whose key did not change keep their relative order; only the
// others are sorted, then merged in. The slice belongs to the tracker:
// read it before the next call.
func (t *tracker) sorted(in *input, key func(i int) sortKey) []int {
	snap := in.snap
	n := len(snap.Jobs)
	if key != nil {
		t.keys = slices.Grow(t.keys[:0], n)[:n]
		for i := range n {
			t.keys[i] = key(i)
		}
	}
	keys := t.keys
	if !in.sorted {
		return sortByKey(snap, func(i int) sortKey { return keys[i] })
	}
	// The jobs whose key did not change, in the previous order.
	order := slices.Grow(t.order[:0], n)
	okeys := slices.Grow(t.okeys[:0], n)
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
				t.dirty = append(t.dirty, keyedJob{k: keys[i], i: i})
			}
		}
		for k, p := range t.oldOrder {
			if i := t.keep[p]; i >= 0 {
				order = append(order, int(i))
				okeys = append(okeys, t.oldOkeys[k])
			}
		}
	} else {
		for i := range n {
			t.dirty = append(t.dirty, keyedJob{k: keys[i], i: i})
		}
	}
	t.order, t.okeys = mergeKeyed(order, okeys, t.sortDirty())
	t.ordered = true
	return t.order
}

// sortDirty returns t.dirty sorted by cmpKeyed.
func (t *tracker) sortDirty() []keyedJob {
	d := t.dirty
	refs := t.dirtyRefs[:0]
	for p := range d {
		refs = append(refs, keyRef{f: d[p].k.f, pos: int32(p)})
	}
	slices.SortFunc(refs, func(a, b keyRef) int {
		if a.f < b.f {
			return -1
		}
		if a.f > b.f {
			return 1
		}
		return cmpKeyed(&d[a.pos], &d[b.pos])
	})
	out := t.dirtySorted[:0]
	for _, r := range refs {
		out = append(out, d[r.pos])
	}
	t.dirtyRefs, t.dirtySorted = refs, out
	return out
}

// mergeKeyed merges the sorted jobs b into the sorted order (whose keys
// are okeys), in place at the end of their backing arrays (which must have
// room for both): it fills from the back so no element is overwritten
// before it is read.
func mergeKeyed(order []int, okeys []sortKey, b []keyedJob) ([]int, []sortKey) {
	na, nb := len(order), len(b)
	order, okeys = order[:na+nb], okeys[:na+nb]
	for k := na + nb - 1; nb > 0; k-- {
		if na > 0 && cmpKeyed(&keyedJob{k: okeys[na-1], i: order[na-1]}, &b[nb-1]) > 0 {
			order[k], okeys[k] = order[na-1], okeys[na-1]
			na--
		} else {
			order[k], okeys[k] = b[nb-1].i, b[nb-1].k
			nb--
		}
	}
	return order, okeys
}
