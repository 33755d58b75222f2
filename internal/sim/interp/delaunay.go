package interp

import (
	"errors"
	"fmt"
)

// ErrDegenerate is returned when the points do not span three dimensions:
// fewer than four distinct points, or all of them collinear or coplanar.
var ErrDegenerate = errors.New("interp: points do not span three dimensions (need 4 non-coplanar points)")

// infinite is the vertex index of the point at infinity. Hull faces are
// closed off by "ghost" tetrahedra that join them to this vertex, so that
// every tetrahedron has four neighbours and points outside the hull are
// inserted exactly like points inside it.
const infinite = -1

// noTet marks a missing neighbour in the final triangulation (a hull face).
const noTet = -1

// delaunay is an incremental (Bowyer-Watson) Delaunay tetrahedralization of
// a 3-D point set with ghost tetrahedra on the hull.
//
// Orientation invariant: a finite tetrahedron (v0, v1, v2, v3) has
// orient3d(v0, v1, v2, v3) > 0. A ghost tetrahedron has the infinite vertex
// at some position k; replacing it by any point strictly outside the hull
// face formed by the other three vertices gives a positively oriented
// tetrahedron. With that convention "the tetrahedron with vertex i replaced
// by p" keeps its orientation whenever p is on the same side of face i as
// vertex i, for finite and ghost tetrahedra alike.
//
// Neighbour i of a tetrahedron is the one across the face opposite vertex i.
type delaunay struct {
	pts []vec3
	ar  arena

	verts [][4]int32
	nbrs  [][4]int32
	dead  []bool
	free  []int32

	// Per-insertion scratch.
	stamp     []int32
	conflict  []bool
	cur       int32
	cavity    []int32
	boundary  []face
	stack     []int32
	halfEdges []halfEdge
	paired    []bool
	table     []int32
	created   []int32

	// rng (a fixed-seed LCG) shuffles the insertion order and varies the
	// face order of the visibility walk, deterministically.
	rng  uint32
	last int32
}

type face struct {
	tet int32
	idx int8
}

// halfEdge records that face idx of new tetrahedron tet contains the
// inserted point and the edge (a, b).
type halfEdge struct {
	a, b int32
	tet  int32
	idx  int8
}

// buildDelaunay triangulates pts (which must be pairwise distinct). It starts
// from the first four points (in input order) that span 3-D and inserts the
// others in a fixed pseudo-random order, so the result is deterministic.
func buildDelaunay(pts []vec3) (*delaunay, error) {
	d := &delaunay{pts: pts, rng: 0x9e3779b9}
	init, err := d.initialSimplex()
	if err != nil {
		return nil, err
	}
	d.makeInitial(init)
	used := make([]bool, len(pts))
	for _, i := range init {
		used[i] = true
	}
	order := make([]int32, 0, len(pts))
	for i := range pts {
		if !used[i] {
			order = append(order, int32(i))
		}
	}
	// Insert in a pseudo-random but fixed order. Sorted input (the job
	// model's points come sorted by nodes, replicas and batch size) would
	// put every new point outside the current hull, facing a large part of
	// it, and make cavities large.
	for i := len(order) - 1; i > 0; i-- {
		j := int(uint64(d.nextRand()) * uint64(i+1) >> 16)
		order[i], order[j] = order[j], order[i]
	}
	for _, i := range order {
		if err := d.insert(i); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// initialSimplex picks, in input order, the first point, the first point
// not on the line through the first two distinct ones and so on.
func (d *delaunay) initialSimplex() ([4]int32, error) {
	var s [4]int32
	n := len(d.pts)
	if n < 4 {
		return s, fmt.Errorf("%w: %d distinct points", ErrDegenerate, n)
	}
	s[0] = 0
	s[1] = 1 // points are distinct
	i := 2
	for ; i < n; i++ {
		if !collinear(&d.ar, &d.pts[s[0]], &d.pts[s[1]], &d.pts[i]) {
			break
		}
	}
	if i == n {
		return s, fmt.Errorf("%w: all points collinear", ErrDegenerate)
	}
	s[2] = int32(i)
	for i = 2; i < n; i++ {
		if int32(i) == s[2] {
			continue
		}
		if orient3d(&d.ar, &d.pts[s[0]], &d.pts[s[1]], &d.pts[s[2]], &d.pts[i]) != 0 {
			break
		}
	}
	if i == n {
		return s, fmt.Errorf("%w: all points coplanar", ErrDegenerate)
	}
	s[3] = int32(i)
	return s, nil
}

func (d *delaunay) makeInitial(s [4]int32) {
	if orient3d(&d.ar, &d.pts[s[0]], &d.pts[s[1]], &d.pts[s[2]], &d.pts[s[3]]) < 0 {
		s[0], s[1] = s[1], s[0]
	}
	t0 := d.newTet(s)
	var ghosts [4]int32
	for i := 0; i < 4; i++ {
		g := s
		g[i] = infinite
		// The infinite vertex lies on the other side of face i than s[i]:
		// swap two finite vertices to restore the orientation invariant.
		j, k := (i+1)%4, (i+2)%4
		g[j], g[k] = g[k], g[j]
		ghosts[i] = d.newTet(g)
	}
	all := append([]int32{t0}, ghosts[:]...)
	// Link faces by their vertex sets.
	type key [3]int32
	seen := map[key]face{}
	for _, t := range all {
		for i := int8(0); i < 4; i++ {
			k := sortedFace(d.verts[t], i)
			if f, ok := seen[k]; ok {
				d.nbrs[t][i] = f.tet
				d.nbrs[f.tet][f.idx] = t
				delete(seen, k)
			} else {
				seen[k] = face{t, i}
			}
		}
	}
	d.last = t0
}

func sortedFace(v [4]int32, skip int8) [3]int32 {
	var f [3]int32
	j := 0
	for i := int8(0); i < 4; i++ {
		if i != skip {
			f[j] = v[i]
			j++
		}
	}
	if f[0] > f[1] {
		f[0], f[1] = f[1], f[0]
	}
	if f[1] > f[2] {
		f[1], f[2] = f[2], f[1]
	}
	if f[0] > f[1] {
		f[0], f[1] = f[1], f[0]
	}
	return f
}

func (d *delaunay) newTet(v [4]int32) int32 {
	var t int32
	if n := len(d.free); n > 0 {
		t = d.free[n-1]
		d.free = d.free[:n-1]
		d.verts[t] = v
		d.nbrs[t] = [4]int32{noTet, noTet, noTet, noTet}
		d.dead[t] = false
		return t
	}
	t = int32(len(d.verts))
	d.verts = append(d.verts, v)
	d.nbrs = append(d.nbrs, [4]int32{noTet, noTet, noTet, noTet})
	d.dead = append(d.dead, false)
	d.stamp = append(d.stamp, 0)
	d.conflict = append(d.conflict, false)
	return t
}

func (d *delaunay) isGhost(t int32) bool {
	v := d.verts[t]
	return v[0] == infinite || v[1] == infinite || v[2] == infinite || v[3] == infinite
}

func ghostIndex(v [4]int32) int {
	for i, x := range v {
		if x == infinite {
			return i
		}
	}
	return -1
}

// orientWith returns orient3d of tetrahedron t with vertex i replaced by p.
// t must be finite, or i must be its infinite vertex.
func (d *delaunay) orientWith(t int32, i int, p *vec3) int {
	v := d.verts[t]
	var q [4]*vec3
	for j := 0; j < 4; j++ {
		if j == i {
			q[j] = p
		} else {
			q[j] = &d.pts[v[j]]
		}
	}
	return orient3d(&d.ar, q[0], q[1], q[2], q[3])
}

// inConflict reports whether p lies strictly inside the circumsphere of
// tetrahedron t. For a ghost tetrahedron this means strictly outside its hull
// face, or in the plane of that face and strictly inside its circumcircle.
func (d *delaunay) inConflict(t int32, p *vec3) bool {
	v := d.verts[t]
	k := ghostIndex(v)
	if k < 0 {
		return insphere(&d.ar, &d.pts[v[0]], &d.pts[v[1]], &d.pts[v[2]], &d.pts[v[3]], p) > 0
	}
	o := d.orientWith(t, k, p)
	if o != 0 {
		return o > 0
	}
	// p is in the plane of the hull face. The circumcircle of the face is
	// the intersection of that plane with any sphere through the face and
	// an off-plane point q; choose q on the outer side so that the
	// orientation invariant holds, and test p against that sphere.
	q, ok := d.outerPoint(t, k)
	if !ok {
		return false
	}
	var s [4]*vec3
	for j := 0; j < 4; j++ {
		if j == k {
			s[j] = &q
		} else {
			s[j] = &d.pts[v[j]]
		}
	}
	return insphere(&d.ar, s[0], s[1], s[2], s[3], p) > 0
}

// outerPoint returns a point strictly on the infinite side of ghost t's hull
// face (k is the infinite vertex's position).
func (d *delaunay) outerPoint(t int32, k int) (vec3, bool) {
	v := d.verts[t]
	var f [3]*vec3
	j := 0
	for i := 0; i < 4; i++ {
		if i != k {
			f[j] = &d.pts[v[i]]
			j++
		}
	}
	a, b, c := f[0], f[1], f[2]
	u := vec3{b[0] - a[0], b[1] - a[1], b[2] - a[2]}
	w := vec3{c[0] - a[0], c[1] - a[1], c[2] - a[2]}
	n := vec3{u[1]*w[2] - u[2]*w[1], u[2]*w[0] - u[0]*w[2], u[0]*w[1] - u[1]*w[0]}
	size := 1.0
	for i := 0; i < 3; i++ {
		size = max(size, abs(u[i]), abs(w[i]))
	}
	// Try axes in order of decreasing normal component, both directions.
	axes := [3]int{0, 1, 2}
	for i := 0; i < 3; i++ {
		for j := i + 1; j < 3; j++ {
			if abs(n[axes[j]]) > abs(n[axes[i]]) {
				axes[i], axes[j] = axes[j], axes[i]
			}
		}
	}
	for _, ax := range axes {
		for _, s := range [2]float64{1, -1} {
			q := *a
			q[ax] += s * size
			if d.orientWith(t, k, &q) > 0 {
				return q, true
			}
		}
	}
	return vec3{}, false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func (d *delaunay) nextRand() uint32 {
	d.rng = d.rng*1664525 + 1013904223
	return d.rng >> 16
}

// locate returns a tetrahedron in conflict with p: a finite tetrahedron
// whose closure contains p, or a ghost whose hull face p is strictly
// outside of. It uses a visibility walk from the last created tetrahedron.
func (d *delaunay) locate(p *vec3) int32 {
	t := d.last
	if d.dead[t] {
		t = d.anyFinite()
	}
	if k := ghostIndex(d.verts[t]); k >= 0 {
		t = d.nbrs[t][k]
	}
	limit := 4*len(d.verts) + 16
	for step := 0; step < limit; step++ {
		r := int(d.nextRand() & 3)
		moved := false
		for j := 0; j < 4; j++ {
			i := (r + j) & 3
			if d.orientWith(t, i, p) < 0 {
				t = d.nbrs[t][i]
				if d.isGhost(t) {
					return t
				}
				moved = true
				break
			}
		}
		if !moved {
			return t
		}
	}
	return d.locateBrute(p)
}

func (d *delaunay) anyFinite() int32 {
	for t := range d.verts {
		if !d.dead[t] && !d.isGhost(int32(t)) {
			return int32(t)
		}
	}
	return 0
}

// locateBrute is the fallback of locate should the walk not terminate.
func (d *delaunay) locateBrute(p *vec3) int32 {
	for t := range d.verts {
		if d.dead[t] || d.isGhost(int32(t)) {
			continue
		}
		inside := true
		for i := 0; i < 4 && inside; i++ {
			inside = d.orientWith(int32(t), i, p) >= 0
		}
		if inside {
			return int32(t)
		}
	}
	for t := range d.verts {
		if !d.dead[t] && d.isGhost(int32(t)) && d.inConflict(int32(t), p) {
			return int32(t)
		}
	}
	return noTet
}

// insert adds point index pi with the Bowyer-Watson algorithm: remove the
// tetrahedra whose open circumsphere contains the point and connect it to
// the boundary of the resulting star-shaped cavity. Using strict conflicts
// never creates flat tetrahedra, even for cospherical points.
func (d *delaunay) insert(pi int32) error {
	p := &d.pts[pi]
	start := d.locate(p)
	if start == noTet || !d.inConflict(start, p) {
		return fmt.Errorf("interp: internal error: cannot locate point %d %v", pi, *p)
	}
	d.cur++
	cur := d.cur
	d.cavity = d.cavity[:0]
	d.boundary = d.boundary[:0]
	d.stack = append(d.stack[:0], start)
	d.stamp[start], d.conflict[start] = cur, true
	for len(d.stack) > 0 {
		t := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		d.cavity = append(d.cavity, t)
		for i := int8(0); i < 4; i++ {
			n := d.nbrs[t][i]
			if d.stamp[n] != cur {
				d.stamp[n] = cur
				d.conflict[n] = d.inConflict(n, p)
				if d.conflict[n] {
					d.stack = append(d.stack, n)
				}
			}
			if !d.conflict[n] {
				d.boundary = append(d.boundary, face{t, i})
			}
		}
	}

	// Create one tetrahedron per boundary face and link it to the outside
	// neighbour. Its other three faces contain pi and one edge of the
	// boundary face each; two new tetrahedra sharing such an edge are
	// neighbours: pairHalfEdges matches them up.
	d.created = d.created[:0]
	d.halfEdges = d.halfEdges[:0]
	for _, f := range d.boundary {
		v := d.verts[f.tet]
		v[f.idx] = pi
		nt := d.newTet(v)
		d.created = append(d.created, nt)
		out := d.nbrs[f.tet][f.idx]
		d.nbrs[nt][f.idx] = out
		for j := 0; j < 4; j++ {
			if d.nbrs[out][j] == f.tet {
				d.nbrs[out][j] = nt
				break
			}
		}
		for j := int8(0); j < 4; j++ {
			if j == f.idx {
				continue
			}
			var e [2]int32
			m := 0
			for k := int8(0); k < 4; k++ {
				if k != j && k != f.idx {
					e[m] = v[k]
					m++
				}
			}
			if e[0] > e[1] {
				e[0], e[1] = e[1], e[0]
			}
			d.halfEdges = append(d.halfEdges, halfEdge{e[0], e[1], nt, j})
		}
	}
	if !d.pairHalfEdges() {
		return fmt.Errorf("interp: internal error: cavity of point %d not closed", pi)
	}
	for _, t := range d.cavity {
		d.dead[t] = true
		d.free = append(d.free, t)
	}
	d.last = d.created[0]
	for _, t := range d.created {
		if !d.isGhost(t) {
			d.last = t
			break
		}
	}
	return nil
}

// pairHalfEdges links the new tetrahedra that share an edge of the cavity
// boundary, using a small open-addressing hash table (a map would be
// slower here and is not needed: every edge occurs exactly twice). It
// reports false if some edge does not occur exactly twice.
func (d *delaunay) pairHalfEdges() bool {
	h := d.halfEdges
	size := 16
	for size < 2*len(h) {
		size *= 2
	}
	if cap(d.table) < size {
		d.table = make([]int32, size)
	}
	table := d.table[:size]
	for i := range table {
		table[i] = -1
	}
	d.paired = d.paired[:0]
	for range h {
		d.paired = append(d.paired, false)
	}
	mask := uint32(size - 1)
	for i := range h {
		k := (uint32(h[i].a)*0x9e3779b1 ^ uint32(h[i].b)*0x85ebca77) >> 7 & mask
		for {
			s := table[k]
			if s < 0 {
				table[k] = int32(i)
				break
			}
			if h[s].a == h[i].a && h[s].b == h[i].b {
				if d.paired[s] {
					return false
				}
				d.paired[s], d.paired[i] = true, true
				d.nbrs[h[s].tet][h[s].idx] = h[i].tet
				d.nbrs[h[i].tet][h[i].idx] = h[s].tet
				break
			}
			k = (k + 1) & mask
		}
	}
	for _, p := range d.paired {
		if !p {
			return false
		}
	}
	return true
}
