package goodput

import (
	"math"

	"gonum.org/v1/gonum/optimize"
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
const PriorWeight = 0.02

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

func toX(p Params) []float64 {
	lg := func(v float64) float64 { return math.Log(math.Max(v, floor)) }
	g := (min(max(p.Gamma, 1), MaxGamma) - 1) / (MaxGamma - 1)
	g = min(max(g, 1e-6), 1-1e-6)
	return []float64{lg(p.AlphaC), lg(p.BetaC), lg(p.AlphaR), lg(p.BetaR), lg(p.AlphaN), lg(p.BetaN), math.Log(g / (1 - g))}
}

func fromX(x []float64) Params {
	return Params{
		AlphaC: math.Exp(x[0]), BetaC: math.Exp(x[1]),
		AlphaR: math.Exp(x[2]), BetaR: math.Exp(x[3]),
		AlphaN: math.Exp(x[4]), BetaN: math.Exp(x[5]),
		Gamma: 1 + (MaxGamma-1)/(1+math.Exp(-x[6])),
	}
}

// FitEvaluations bounds the work of one fit.
const FitEvaluations = 4000

// Fit returns the parameters that best explain obs (least squares on the
// logarithm of the iteration time, each observation weighted equally),
// pulled towards prior with PriorWeight. With no valid observation it
// returns the prior. The search is Nelder-Mead from the prior, so the
// answer depends only on its inputs.
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
	x0 := toX(prior)
	logObs := make([]float64, len(use))
	for i, o := range use {
		logObs[i] = math.Log(o.Iteration)
	}
	loss := func(x []float64) float64 {
		p := fromX(x)
		s := 0.0
		for i, o := range use {
			d := math.Log(p.Predict(o)) - logObs[i]
			s += d * d
		}
		for k := range x {
			d := x[k] - x0[k]
			s += PriorWeight * d * d
		}
		if math.IsNaN(s) {
			return math.Inf(1)
		}
		return s
	}
	res, err := optimize.Minimize(optimize.Problem{Func: loss}, x0, &optimize.Settings{
		FuncEvaluations: FitEvaluations,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-12, Relative: 1e-10, Iterations: 200},
	}, &optimize.NelderMead{})
	if res == nil || (err != nil && res.X == nil) {
		return prior
	}
	p := fromX(res.X)
	if !p.Valid() || !(res.F <= loss(x0)) {
		return prior
	}
	return p
}
