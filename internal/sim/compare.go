package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim/report"
)

// Comparison runs workloads under every pair of a scheduling algorithm and
// a placer, each run on its own allocator and placer, several at a time.
// Validate checks it before the workloads and models are loaded, so that
// a bad parameter fails fast; Run runs it.
type Comparison struct {
	Workloads []Workload
	// Algorithms and Placers name entries of algorithm.Builtin() and
	// placement.Builtin(); every algorithm runs with every placer.
	Algorithms []string
	Placers    []string
	// AlgorithmParams are name=value settings. With one algorithm every
	// setting goes to it, and one it does not declare is its error to
	// report; with several, each setting goes to those that declare it,
	// and one that none declares is an error. PlacerParams go to the
	// placers the same way; a placer that declares restart_cost and is
	// not given one gets the restart cost of Options, so that it decides
	// with the cost the simulation charges.
	AlgorithmParams []string
	PlacerParams    []string
	// Options configure every run; Run sets their Allocator, Placer,
	// Workload and Progress.
	Options Options
	// Parallelism is how many runs go at a time; 0 means GOMAXPROCS.
	Parallelism int
	// Progress, if set, is called with the fraction of all runs done.
	// Calls do not overlap.
	Progress func(fraction float64)
}

// ParamError is an AlgorithmParams or PlacerParams setting that does not
// parse, that none of the compared entries declares (Param), or that an
// entry rejects (Entry).
type ParamError struct {
	// Kind is "algorithm" or "placer".
	Kind string
	// Param is the parameter none of Names declares.
	Param string
	Names []string
	// Entry is the algorithm or placer that rejected its settings.
	Entry string
	Err   error
}

func (e *ParamError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s param %s: none of %s takes it", e.Kind, e.Param, strings.Join(e.Names, ", "))
	}
	return e.Err.Error()
}

func (e *ParamError) Unwrap() error { return e.Err }

// Validate checks the algorithms, the placers and their parameters by
// building each once. It needs neither Workloads nor Options.Models.
func (c *Comparison) Validate() error {
	_, _, err := c.params()
	return err
}

// params returns the settings of each algorithm and of each placer.
func (c *Comparison) params() (algs, placers map[string][]string, err error) {
	if len(c.Algorithms) == 0 || len(c.Placers) == 0 {
		return nil, nil, errors.New("compare: need an algorithm and a placer")
	}
	if algs, err = settle("algorithm", algorithm.Builtin(), c.Algorithms, c.AlgorithmParams, nil); err != nil {
		return nil, nil, err
	}
	restart := fmt.Sprintf("restart_cost=%g", c.Options.restartCost().Seconds())
	if placers, err = settle("placer", placement.Builtin(), c.Placers, c.PlacerParams, []string{restart}); err != nil {
		return nil, nil, err
	}
	return algs, placers, nil
}

// settle hands each of names the pairs it takes (see
// Comparison.AlgorithmParams), adds each of defaults that an entry
// declares and was not given, and builds every entry once.
func settle[T any](kind string, reg *registry.Registry[T], names, pairs, defaults []string) (map[string][]string, error) {
	for _, n := range names {
		if _, ok := reg.Lookup(n); !ok {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", kind, n, strings.Join(reg.Names(), ", "))
		}
	}
	if _, err := registry.ParseParams(pairs); err != nil {
		return nil, &ParamError{Kind: kind, Err: err}
	}
	declares := func(name, param string) bool {
		e, _ := reg.Lookup(name)
		return slices.ContainsFunc(e.Params, func(pd registry.ParamDoc) bool { return strings.EqualFold(pd.Name, param) })
	}
	out := map[string][]string{}
	if len(names) == 1 {
		out[names[0]] = slices.Clone(pairs)
	} else {
		for _, kv := range pairs {
			used := false
			for _, n := range names {
				if declares(n, paramName(kv)) {
					out[n] = append(out[n], kv)
					used = true
				}
			}
			if !used {
				return nil, &ParamError{Kind: kind, Param: paramName(kv), Names: names}
			}
		}
	}
	for _, n := range names {
		for _, kv := range defaults {
			given := slices.ContainsFunc(out[n], func(g string) bool { return paramName(g) == paramName(kv) })
			if declares(n, paramName(kv)) && !given {
				out[n] = append(out[n], kv)
			}
		}
		if _, err := build(reg, n, out[n]); err != nil {
			return nil, &ParamError{Kind: kind, Entry: n, Err: err}
		}
	}
	return out, nil
}

// paramName is the parameter a name=value pair sets, as ParseParams reads it.
func paramName(kv string) string {
	name, _, _ := strings.Cut(kv, "=")
	return strings.ToLower(strings.TrimSpace(name))
}

func build[T any](reg *registry.Registry[T], name string, pairs []string) (T, error) {
	p, err := registry.ParseParams(pairs)
	if err != nil {
		var zero T
		return zero, err
	}
	return reg.New(name, p)
}

// Run runs every workload with every algorithm and placer and returns
// runs[workload][pair], the pairs in the order of Algorithms, then of
// Placers for each. The errors of failed runs are joined.
func (c *Comparison) Run(ctx context.Context) ([][]*report.Run, error) {
	algParams, placerParams, err := c.params()
	if err != nil {
		return nil, err
	}
	pairs := len(c.Algorithms) * len(c.Placers)
	tasks := len(c.Workloads) * pairs
	runs := make([][]*report.Run, len(c.Workloads))
	for i := range runs {
		runs[i] = make([]*report.Run, pairs)
	}
	progress := c.progress(tasks)
	algs, placers := algorithm.Builtin(), placement.Builtin()
	run := func(i int) error {
		wl := c.Workloads[i/pairs]
		algo, placer := c.Pair(i % pairs)
		opts := c.Options
		opts.Workload = wl.Name
		opts.Progress = func(frac float64) { progress(i, frac) }
		// Run builds the allocator, one per team and priority class in a
		// run with teams.
		opts.NewAllocator = func() (algorithm.Allocator, error) { return build(algs, algo, algParams[algo]) }
		var err error
		if opts.Placer, err = build(placers, placer, placerParams[placer]); err != nil {
			return err
		}
		r, err := Run(ctx, wl.Jobs, opts)
		if err != nil {
			return fmt.Errorf("%s with placer %s on %s: %w", algo, placer, wl.Name, err)
		}
		runs[i/pairs][i%pairs] = r
		progress(i, 1)
		return nil
	}

	workers := c.Parallelism
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	slots := make(chan struct{}, workers)
	errs := make([]error, tasks)
	var wg sync.WaitGroup
	for i := range tasks {
		slots <- struct{}{}
		wg.Go(func() {
			errs[i] = run(i)
			<-slots
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return runs, nil
}

// Pair returns the algorithm and the placer of runs[w][i] from Run, as
// Algorithms and Placers name them.
func (c *Comparison) Pair(i int) (algorithm, placer string) {
	return c.Algorithms[i/len(c.Placers)], c.Placers[i%len(c.Placers)]
}

// progress returns a function that records the fraction of task i done
// and reports the fraction of all tasks done to c.Progress.
func (c *Comparison) progress(tasks int) func(i int, frac float64) {
	if c.Progress == nil {
		return func(int, float64) {}
	}
	var mu sync.Mutex
	done := make([]float64, tasks)
	return func(i int, frac float64) {
		mu.Lock()
		defer mu.Unlock()
		done[i] = frac
		total := 0.0
		for _, d := range done {
			total += d
		}
		c.Progress(total / float64(tasks))
	}
}
