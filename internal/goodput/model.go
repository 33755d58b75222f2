package goodput

import "math"

// MaxGamma bounds the overlap exponent: γ = 1 is no overlap at all, a
// large γ is perfect overlap (the step takes the longer of the two).
const MaxGamma = 10

// Params are the seven numbers of the throughput model, in seconds
// (Gamma has no unit). The zero value is not a usable model.
type Params struct {
	// AlphaC and BetaC give the compute time of one step of a atomic
	// samples per replica: AlphaC + BetaC·a.
	AlphaC, BetaC float64
	// AlphaR and BetaR give the synchronisation time of r ≥ 2 replicas on
	// one node: AlphaR + BetaR·(r−2).
	AlphaR, BetaR float64
	// AlphaN and BetaN give it across nodes: AlphaN + BetaN·(r−2).
	AlphaN, BetaN float64
	// Gamma is how compute and synchronisation overlap, in [1, MaxGamma].
	Gamma float64
}

// Valid reports whether every time is finite and non-negative, the
// compute time positive and Gamma within its range.
func (p Params) Valid() bool {
	for _, v := range []float64{p.AlphaC, p.BetaC, p.AlphaR, p.BetaR, p.AlphaN, p.BetaN} {
		if !(v >= 0) || math.IsInf(v, 1) {
			return false
		}
	}
	return p.AlphaC+p.BetaC > 0 && p.Gamma >= 1 && p.Gamma <= MaxGamma
}

// Compute is the compute time of one step with atomic samples per replica.
func (p Params) Compute(atomic int) float64 { return p.AlphaC + p.BetaC*float64(atomic) }

// Sync is the synchronisation time of one step of replicas workers
// spread over nodes nodes.
func (p Params) Sync(nodes, replicas int) float64 {
	switch {
	case replicas <= 1:
		return 0
	case nodes <= 1:
		return p.AlphaR + p.BetaR*float64(replicas-2)
	}
	return p.AlphaN + p.BetaN*float64(replicas-2)
}

// Step is the time of one optimizer step without accumulation.
func (p Params) Step(nodes, replicas, atomic int) float64 {
	step, _, _ := p.overlap(p.Compute(atomic), p.Sync(nodes, replicas))
	return step
}

// pow is x^y, as exp(y·ln x) where that is defined (x positive and
// finite, y not 0), else math.Pow. Every power of the model goes through
// it. math.Pow computes the same exp(y·ln x) for 0 < y ≤ 1/2 (the
// overlap's 1/Gamma) after splitting y and x into parts, and for other
// exponents multiplies in the integral part exactly; the splitting alone
// cost a fifth of the estimator's time in the simulator, and the two
// differ at most in the last bits of powers with y > 1/2 (on the Pollux
// workloads at 1.0x and 2.0x every job's result is the same).
func pow(x, y float64) float64 {
	if x > 0 && !math.IsInf(x, 1) && y != 0 {
		return math.Exp(y * math.Log(x))
	}
	return math.Pow(x, y)
}

// overlap is the time of a step of c seconds of compute and s of
// synchronisation, with c^Gamma and s^Gamma (0 without synchronisation),
// which the fit's derivatives reuse: every caller computes the step time
// with the same operations, so that the fit, the curves and the
// predictions agree to the last bit.
func (p Params) overlap(c, s float64) (step, cg, sg float64) {
	if s <= 0 {
		return c, 0, 0
	}
	sg = pow(s, p.Gamma)
	step, cg = p.overlapWith(c, sg)
	return step, cg, sg
}

// overlapWith is overlap with s^Gamma given, for callers that try many
// compute times against one synchronisation time.
func (p Params) overlapWith(c, sg float64) (step, cg float64) {
	cg = pow(c, p.Gamma)
	return p.overlapPowers(cg, sg), cg
}

// overlapPowers is the step time from c^Gamma and s^Gamma.
func (p Params) overlapPowers(cg, sg float64) float64 { return pow(cg+sg, 1/p.Gamma) }

// Iteration is the time of one optimizer step that accumulates accum
// extra micro-steps before synchronising.
func (p Params) Iteration(nodes, replicas, atomic, accum int) float64 {
	return p.placed(nodes, replicas).iteration(atomic, accum)
}

// placement is the model on one placement, for callers that predict many
// batches there: the synchronisation time and its power are computed
// once.
type placement struct {
	p     Params
	s, sg float64 // Sync and Sync^Gamma (0 without synchronisation)
}

func (p Params) placed(nodes, replicas int) placement {
	pl := placement{p: p, s: p.Sync(nodes, replicas)}
	if pl.s > 0 {
		pl.sg = pow(pl.s, p.Gamma)
	}
	return pl
}

// iteration is Params.Iteration on the placement.
func (pl placement) iteration(atomic, accum int) float64 {
	c := pl.p.Compute(atomic)
	if pl.s <= 0 {
		return float64(accum)*c + c
	}
	return pl.synced(c, pow(c, pl.p.Gamma), accum)
}

// synced is iteration with synchronisation (pl.s > 0) for compute time c
// and its power cg, which a table shares among its rows.
func (pl placement) synced(c, cg float64, accum int) float64 {
	return float64(accum)*c + pl.p.overlapPowers(cg, pl.sg)
}

// GradStats are a job's gradient statistics at its initial batch size:
// the squared norm of the true gradient and the variance of one sample's
// gradient around it (both summed over the parameters), as AdaptDL and
// Pollux measure them. Zero values mean unknown: every batch is then as
// efficient as the initial one.
type GradStats struct {
	Sqr, Var float64
}

// Known reports whether the statistics can say anything.
func (g GradStats) Known() bool {
	return g.Sqr >= 0 && g.Var >= 0 && g.Sqr+g.Var > 0 && !math.IsInf(g.Sqr+g.Var, 0)
}

// MaxGain bounds the efficiency gain of a batch over the initial one, and
// so the learning-rate scale Voda advises (LRScale): AdaScale's gain is
// at most the batch's ratio to the initial batch, which a job's bounds
// allow up to 10^9, and a learning rate multiplied by millions trains no
// model. The widest application of the Pollux workloads declares a
// maximum batch 128 times its initial one (ncf, 256 to 32,768), so 1024
// leaves eight times that room and changes none of their choices. Beyond
// it a larger batch is modelled as gaining no more, so the batch of most
// goodput is never larger than its learning rate can follow.
const MaxGain = 1024

// Gain is the progress a step of batch samples makes relative to a step
// of initBatch: (var+sqr)/(var/scale+sqr) with scale = batch/initBatch,
// at most scale (when scale ≥ 1, as the formula is, exactly, without
// rounding) and at most MaxGain. It is 1 with unknown statistics or
// bounds, and grows with the batch towards scale (pure noise) or stays
// at 1 (no noise).
func (g GradStats) Gain(batch, initBatch int) float64 {
	if !g.Known() || batch <= 0 || initBatch <= 0 {
		return 1
	}
	return g.gain(g.Var+g.Sqr, float64(batch)/float64(initBatch))
}

// gain is Gain for a known g with sum = Var+Sqr, which callers scoring
// many batches compute once.
func (g GradStats) gain(sum, scale float64) float64 {
	return min(sum/(g.Var/scale+g.Sqr), max(scale, 1), MaxGain)
}

// LRScale is the factor by which a job running batch instead of initBatch
// scales its learning rate: AdaptDL's AdaScale rule, the efficiency gain
// itself, so that one step goes as far as gain initial steps would. It is
// in (0, MaxGain], and at most max(batch/initBatch, 1).
func (g GradStats) LRScale(batch, initBatch int) float64 { return g.Gain(batch, initBatch) }
