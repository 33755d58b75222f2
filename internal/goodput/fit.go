package goodput

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// Obs is one measured configuration: the mean seconds per optimizer step
// of a job on replicas replicas over nodes nodes, atomic samples per
// replica per micro-step and accum extra accumulation steps.
type Obs struct {
	Nodes, Replicas, Atomic, Accum int
	Iteration                      float64
}

// Valid reports whether the observation can enter a fit.
func (o Obs) Valid() bool {
	return o.Nodes >= 1 && o.Replicas >= o.Nodes && o.Replicas <= MaxReplicas && o.Atomic >= 1 &&
		o.Accum >= 0 && o.Iteration > 0 && !math.IsInf(o.Iteration, 1)
}

// key identifies an observation's configuration.
type key struct{ nodes, replicas, atomic, accum int }

func (o Obs) key() key { return key{o.Nodes, o.Replicas, o.Atomic, o.Accum} }

// Predict is the model's iteration time for the observation's
// configuration.
func (p Params) Predict(o Obs) float64 { return p.Iteration(o.Nodes, o.Replicas, o.Atomic, o.Accum) }

// PriorWeight is how strongly a fit is pulled towards its prior: the
// weight of one unit of log-parameter distance against one observation's
// squared log error. A parameter the observations determine moves freely;
// one they say nothing about (synchronisation across nodes, for a job
// only ever seen on one node) stays at the prior.
const PriorWeight = 1e-4

// floor keeps a zero time representable in log space.
const floor = 1e-9

// Generic is the prior for a job of an application never measured,
// scaled to one measured iteration: most of a step is compute and grows
// with the batch, synchronisation on one node costs a tenth of it and
// across nodes a third, and the two overlap a little. Its only role is to
// make the first guesses sane until the job has been measured on a few
// placements.
func Generic(o Obs) Params {
	c := o.Iteration / float64(o.Accum+1)
	return Params{
		AlphaC: 0.2 * c, BetaC: 0.8 * c / float64(o.Atomic),
		AlphaR: 0.1 * c, BetaR: 0.005 * c,
		AlphaN: 0.3 * c, BetaN: 0.01 * c,
		Gamma: 1.5,
	}
}

func toX(p Params) [nParams]float64 {
	lg := func(v float64) float64 { return math.Log(math.Max(v, floor)) }
	g := (min(max(p.Gamma, 1), MaxGamma) - 1) / (MaxGamma - 1)
	g = min(max(g, 1e-6), 1-1e-6)
	return [nParams]float64{lg(p.AlphaC), lg(p.BetaC), lg(p.AlphaR), lg(p.BetaR), lg(p.AlphaN), lg(p.BetaN), math.Log(g / (1 - g))}
}

func fromX(x []float64) Params {
	return Params{
		AlphaC: math.Exp(x[0]), BetaC: math.Exp(x[1]),
		AlphaR: math.Exp(x[2]), BetaR: math.Exp(x[3]),
		AlphaN: math.Exp(x[4]), BetaN: math.Exp(x[5]),
		Gamma: 1 + (MaxGamma-1)/(1+math.Exp(-x[6])),
	}
}

// FitIterations bounds the work of one fit.
const FitIterations = 100

// FitTolerance ends a fit: the search stops at the first step that lowers
// the cost by less than this fraction of it. Step times are predicted to
// a few percent, so a millionth of the squared log error is far below
// what a fit can tell apart; at 1e-12 the fits of Pollux workload 6 took
// 17.5 iterations each instead of 4.8 (docs/simulator.md, "Estimator
// cost").
const FitTolerance = 1e-6

// Fit returns the parameters that best explain obs (least squares on the
// logarithm of the iteration time, each observation weighted equally),
// pulled towards prior with PriorWeight. With no valid observation it
// returns the prior. The search is Levenberg-Marquardt in log-parameter
// space from the prior, so the answer depends only on its inputs.
func Fit(obs []Obs, prior Params) Params {
	var use []Obs
	for _, o := range obs {
		if o.Valid() {
			use = append(use, o)
		}
	}
	if len(use) == 0 || !prior.Valid() {
		return prior
	}
	f := newFitter(use, prior)
	x := f.x0
	cost := f.cost(&x, f.at)
	lambda := 1e-3
	var jtj [nParams * nParams]float64
	var g, step [nParams]float64
	for it := 0; it < FitIterations; it++ {
		f.normal(&x, &jtj, &g)
		improved := false
		for try := 0; try < 20; try++ {
			if !f.solveDamped(&jtj, &g, lambda, &step) {
				lambda *= 10
				continue
			}
			var next [nParams]float64
			for k := range next {
				next[k] = x[k] - step[k]
			}
			if c := f.cost(&next, f.try); c < cost {
				improved = cost-c > FitTolerance*(1+cost)
				x, cost = next, c
				f.at, f.try = f.try, f.at
				lambda = math.Max(lambda/10, 1e-9)
				break
			}
			lambda *= 10
		}
		if !improved {
			break
		}
	}
	p := fromX(x[:])
	if !p.Valid() {
		return prior
	}
	return p
}

const nParams = 7

type fitter struct {
	obs []Obs
	// logIter are the observations' log iteration times, which every
	// step of the search compares with.
	logIter []float64
	// Observations share compute and synchronisation times: a local batch
	// runs on many placements and a placement with many batches (an
	// application's table holds a few distinct local batches and far
	// fewer placements than configurations). Their powers and logarithms
	// are computed once per distinct value: atom[i] indexes obs[i]'s
	// local batch in atoms, place[i] its placement in places. The same
	// operations on the same values give the same bits, so the fit is
	// the one that computes them per observation.
	atom, place []int
	atoms       []atomic
	places      []placing
	x0          [nParams]float64
	// at are the predictions at the search's current point, which the
	// next step's derivatives start from; try those at a point tried.
	at, try []predicted
	// u, m and ch are solveDamped's, reused from step to step.
	u  [nParams * nParams]float64
	m  *mat.SymDense
	ch mat.Cholesky
}

// atomic is one distinct local batch of a fit's observations and what
// cost and normal compute for it at the point they are at.
type atomic struct {
	n int
	// synced: some observation runs it on more than one replica, so its
	// power is needed.
	synced bool
	// c and cg are Compute(n) and its power Gamma; dc and lc are
	// c^(Gamma-1) and log c for normal, when done.
	c, cg, dc, lc float64
	done          bool
}

// placing is one distinct placement of a fit's observations: s and sg
// are Sync and its power Gamma (0 without synchronisation); ds and ls
// are s^(Gamma-1) and log s for normal, when done.
type placing struct {
	nodes, replicas int
	s, sg, ds, ls   float64
	done            bool
}

func newFitter(use []Obs, prior Params) *fitter {
	f := &fitter{obs: use, logIter: make([]float64, len(use)), x0: toX(prior), m: mat.NewSymDense(nParams, nil),
		atom: make([]int, len(use)), place: make([]int, len(use))}
	for i, o := range use {
		f.logIter[i] = math.Log(o.Iteration)
		// A scan rather than a map: a fit has at most MaxConfigs
		// observations, and a map per fit was a fifth of the
		// simulator's allocation.
		a := slices.IndexFunc(f.atoms, func(a atomic) bool { return a.n == o.Atomic })
		if a < 0 {
			a = len(f.atoms)
			f.atoms = append(f.atoms, atomic{n: o.Atomic})
		}
		f.atom[i] = a
		f.atoms[a].synced = f.atoms[a].synced || o.Replicas > 1
		pi := slices.IndexFunc(f.places, func(p placing) bool { return p.nodes == o.Nodes && p.replicas == o.Replicas })
		if pi < 0 {
			pi = len(f.places)
			f.places = append(f.places, placing{nodes: o.Nodes, replicas: o.Replicas})
		}
		f.place[i] = pi
	}
	f.at, f.try = make([]predicted, len(use)), make([]predicted, len(use))
	return f
}

// predicted is one observation's prediction at a point of the search,
// with the parts of it the derivatives reuse.
type predicted struct {
	c, s, step, cg, sg float64 // Compute, Sync and Params.overlap's results
	pred, r            float64 // the iteration time and its log residual
}

// cost is the objective at x; it fills out with the predictions there.
func (f *fitter) cost(x *[nParams]float64, out []predicted) float64 {
	p := fromX(x[:])
	for i := range f.atoms {
		a := &f.atoms[i]
		a.c, a.cg = p.Compute(a.n), 0
		if a.synced {
			a.cg = pow(a.c, p.Gamma)
		}
	}
	for i := range f.places {
		pl := &f.places[i]
		pl.s, pl.sg = p.Sync(pl.nodes, pl.replicas), 0
		if pl.s > 0 {
			pl.sg = pow(pl.s, p.Gamma)
		}
	}
	s := 0.0
	for i, o := range f.obs {
		// Params.Iteration, in parts (Params.overlap).
		e := &out[i]
		a, pl := &f.atoms[f.atom[i]], &f.places[f.place[i]]
		e.c, e.s = a.c, pl.s
		e.step, e.cg, e.sg = e.c, 0, 0
		if e.s > 0 {
			e.cg, e.sg = a.cg, pl.sg
			e.step = p.overlapPowers(e.cg, e.sg)
		}
		e.pred = float64(o.Accum)*e.c + e.step
		e.r = math.Log(e.pred) - f.logIter[i]
		s += e.r * e.r
	}
	return f.withPrior(x, s)
}

// withPrior is the objective at x whose residuals' squares sum to s: with
// the prior's pull, and infinite when not a number.
func (f *fitter) withPrior(x *[nParams]float64, s float64) float64 {
	for k := range x {
		d := x[k] - f.x0[k]
		s += PriorWeight * d * d
	}
	if math.IsNaN(s) {
		return math.Inf(1)
	}
	return s
}

// normal fills the Gauss-Newton system at x, the search's current point
// (whose predictions are f.at): jtj = JᵀJ + w·I and g = Jᵀr + w·(x−x0),
// J being the residuals' derivatives in x.
func (f *fitter) normal(x *[nParams]float64, jtj *[nParams * nParams]float64, g *[nParams]float64) {
	*jtj = [nParams * nParams]float64{}
	*g = [nParams]float64{}
	p := fromX(x[:])
	sig := (p.Gamma - 1) / (MaxGamma - 1)
	for i := range f.atoms {
		f.atoms[i].done = false
	}
	for i := range f.places {
		f.places[i].done = false
	}
	for i, o := range f.obs {
		e := &f.at[i]
		c, s, step, cg, sg, pred, r := e.c, e.s, e.step, e.cg, e.sg, e.pred, e.r
		// Derivatives of pred in the parameters.
		dC, dS, dG := 1.0, 0.0, 0.0
		if s > 0 {
			gm := p.Gamma
			u := cg + sg
			a, pl := &f.atoms[f.atom[i]], &f.places[f.place[i]]
			if !a.done {
				a.dc, a.lc, a.done = pow(c, gm-1), math.Log(c), true
			}
			if !pl.done {
				pl.ds, pl.ls, pl.done = pow(s, gm-1), math.Log(s), true
			}
			dC = step / u * a.dc
			dS = step / u * pl.ds
			dG = step * (-math.Log(u)/(gm*gm) + (cg*a.lc+sg*pl.ls)/(gm*u))
		}
		addResidual(p, sig, o, dC, dS, dG, pred, r, jtj, g)
	}
	for a := range nParams {
		jtj[a*nParams+a] += PriorWeight
		g[a] += PriorWeight * (x[a] - f.x0[a])
	}
}

// addResidual adds to jtj and g observation o's residual r, whose
// prediction pred has derivatives dC, dS and dG in its compute time,
// synchronisation time and Gamma (besides accumulation), at the point p
// (sig: its Gamma mapped to [0, 1]).
func addResidual(p Params, sig float64, o Obs, dC, dS, dG, pred, r float64, jtj *[nParams * nParams]float64, g *[nParams]float64) {
	// Derivatives of pred in x.
	dC += float64(o.Accum)
	var d [nParams]float64
	d[0] = dC * p.AlphaC
	d[1] = dC * float64(o.Atomic) * p.BetaC
	if o.Replicas > 1 {
		if o.Nodes <= 1 {
			d[2] = dS * p.AlphaR
			d[3] = dS * float64(o.Replicas-2) * p.BetaR
		} else {
			d[4] = dS * p.AlphaN
			d[5] = dS * float64(o.Replicas-2) * p.BetaN
		}
		d[6] = dG * (MaxGamma - 1) * sig * (1 - sig)
	}
	for a := range nParams {
		d[a] /= pred
	}
	for a := range nParams {
		g[a] += d[a] * r
		for b := range nParams {
			jtj[a*nParams+b] += d[a] * d[b]
		}
	}
}

// solveDamped solves (A + λ·diag(A))·s = g by Cholesky; false when the
// damped matrix is not positive definite or too ill-conditioned
// (mat.ConditionTolerance).
//
// Gonum's mat.Cholesky estimates the condition number of every
// factorization, which took a fifth of a fit. The damped matrix's
// smallest eigenvalue is at least PriorWeight (the prior's term on the
// diagonal, never damped below it), so its 1-norm condition number is at
// most nParams·‖A‖₁/PriorWeight: while ‖A‖₁ ≤ fastNorm that bound is a
// thousandth of the tolerance, the estimate cannot reach it, and the
// factorization and solve are mat.Cholesky's own LAPACK calls without
// it, to the last bit. Beyond, mat.Cholesky decides.
func (f *fitter) solveDamped(a *[nParams * nParams]float64, g *[nParams]float64, lambda float64, s *[nParams]float64) bool {
	u := &f.u
	for i := range nParams {
		for j := i; j < nParams; j++ {
			v := a[i*nParams+j]
			if i == j {
				v *= 1 + lambda
			}
			u[i*nParams+j] = v
		}
	}
	if norm1(u) > fastNorm {
		return f.solveChecked(u, g, s)
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{N: nParams, Stride: nParams, Data: u[:], Uplo: blas.Upper}); !ok {
		return false
	}
	*s = *g
	lapack64.Potrs(blas64.Triangular{N: nParams, Stride: nParams, Data: u[:], Uplo: blas.Upper, Diag: blas.NonUnit},
		blas64.General{Rows: nParams, Cols: 1, Stride: 1, Data: s[:]})
	return finite(s)
}

// fastNorm bounds the 1-norm of a damped matrix that solveDamped solves
// without estimating its condition number: nParams·fastNorm/PriorWeight
// is 7e12, against mat.ConditionTolerance's 1e16, with room for the
// rounding in JᵀJ.
const fastNorm = 1e8

// norm1 is the 1-norm (largest column sum of magnitudes) of the symmetric
// matrix whose upper triangle is u.
func norm1(u *[nParams * nParams]float64) float64 {
	norm := 0.0
	for j := range nParams {
		sum := 0.0
		for i := range nParams {
			sum += math.Abs(u[min(i, j)*nParams+max(i, j)])
		}
		if !(sum <= norm) { // NaN too
			norm = sum
		}
	}
	return norm
}

// solveChecked is solveDamped through mat.Cholesky, which estimates the
// condition number.
func (f *fitter) solveChecked(u *[nParams * nParams]float64, g *[nParams]float64, s *[nParams]float64) bool {
	m, ch := f.m, &f.ch
	for i := range nParams {
		for j := i; j < nParams; j++ {
			m.SetSym(i, j, u[i*nParams+j])
		}
	}
	if !ch.Factorize(m) {
		return false
	}
	out := mat.NewVecDense(nParams, s[:])
	if err := ch.SolveVecTo(out, mat.NewVecDense(nParams, g[:])); err != nil {
		return false
	}
	return finite(s)
}

func finite(s *[nParams]float64) bool {
	for i := range nParams {
		if math.IsNaN(s[i]) || math.IsInf(s[i], 0) {
			return false
		}
	}
	return true
}
