package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

type simulateFlags struct {
	workload    string
	format      string
	profiles    string
	algorithm   string
	compare     string
	params      []string
	placer      string
	placerArgs  []string
	nodes       int
	gpusPerNode int
	interval    time.Duration
	rateLimit   time.Duration
	tick        time.Duration
	restartCost time.Duration
	oracle      bool
	scaling     string
	genJobs     int
	genSeed     uint64
	jsonOut     string
	jobsCSV     string
	plot        string
	quiet       bool
}

func newSimulateCommand() *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload on a simulated cluster and report job completion times",
		Long: `Replay a workload on a simulated GPU cluster with Voda's scheduling core.

Jobs arrive at their submission times, progress according to a performance
model on the placement the scheduler gives them, pay a restart cost on every
re-placement and complete. The summary reports average, median and 99th
percentile job completion time (JCT), makespan, queueing delay, GPU
utilisation, restarts and migrations, how many jobs span more nodes than
they need (spread, averaged over cycles) and the time placement took.

Without --workload, a synthetic workload of parametric jobs is generated, so
the simulator runs with no external data. A directory given to --workload runs
every *.csv in it and reports the mean over workloads.

Workload formats (--format, detected from the header by default):
  pollux    name,time,application,num_replicas,batch_size (Pollux OSDI'21
            artifact); needs --profiles with the artifact's traces.
  voda      name,submit,app[,min_workers,max_workers,requested_workers,
            priority,epochs,duration,batch_size]
  duration  job_id,submission_time,duration,num_gpu; every job gets the
            scaling model named by --scaling.

Performance models: the built-in parametric ones (linear, amdahl, resnet50,
bert, transformer, ncf) and, with --profiles DIR, one per application
directory of measured Pollux profiles.

Placement: --placer names the policy that puts each job's workers on nodes
(see 'voda placers'): topology, the default, keeps workers where they are and
packs each job onto as few nodes as it can; greedy fills the node with the
most free GPUs first, as the Pollux artifact's baselines do. A comma-separated
list, or 'all', runs every algorithm with every placer. --placer-param
name=value tunes them; with several placers each gets the parameters it
declares.

Modes: --interval 60s advances the clock in fixed steps with one scheduling
cycle per step (the Pollux artifact's mode); the default (0) is event-driven,
with cycles on events under --rate-limit and every --tick, as in production.`,
		Example: `  # Synthetic workload, default algorithm (ElasticFIFO)
  voda simulate

  # The Pollux artifact's Tiresias on one workload
  voda simulate --workload ../shared/traces/pollux/workloads/workload-6.csv \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --algorithm Tiresias --param threshold=57600 --param starvation=0

  # Compare algorithms on all eight workloads and plot the JCT CDFs
  voda simulate --workload ../shared/traces/pollux/workloads \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --compare FIFO,ElasticFIFO,Tiresias,AFS-L --plot jct.svg

  # Compare placers, with a smaller migration budget for topology
  voda simulate --compare ElasticFIFO,AFS-L --placer greedy,topology \
    --placer-param migration_budget=4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload CSV file, or a directory of them (default: a generated workload)")
	fl.StringVar(&f.format, "format", "auto", "workload format: auto, pollux, voda or duration")
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured job profiles (Pollux artifact traces/, one subdirectory per application)")
	fl.StringVar(&f.algorithm, "algorithm", algorithm.DefaultName, "scheduling algorithm (see 'voda algorithms'; case-insensitive)")
	fl.StringVar(&f.compare, "compare", "", "comma-separated algorithms to run on the same workload and compare ('all' for every one)")
	fl.StringArrayVar(&f.params, "param", nil, "algorithm parameter name=value (repeatable; see 'voda algorithms')")
	fl.StringVar(&f.placer, "placer", placement.DefaultName, "placement policy, or comma-separated policies to compare ('all' for every one; see 'voda placers'; case-insensitive)")
	fl.StringArrayVar(&f.placerArgs, "placer-param", nil, "placer parameter name=value (repeatable; see 'voda placers')")
	fl.IntVar(&f.nodes, "nodes", 16, "number of nodes")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 4, "GPUs per node")
	fl.DurationVar(&f.interval, "interval", 0, "fixed scheduling interval (60s reproduces the Pollux artifact); 0 is event-driven")
	fl.DurationVar(&f.rateLimit, "rate-limit", 30*time.Second, "event-driven mode: least time between two scheduling cycles")
	fl.DurationVar(&f.tick, "tick", 60*time.Second, "event-driven mode: period of cycles without events")
	fl.DurationVar(&f.restartCost, "restart-cost", sim.DefaultRestartCost, "time a job makes no progress after each (re)placement")
	fl.BoolVar(&f.oracle, "oracle", false, "give algorithms the true speedup and remaining time instead of online estimates")
	fl.StringVar(&f.scaling, "scaling", "amdahl", "performance model assigned to jobs of duration-only traces")
	fl.IntVar(&f.genJobs, "jobs", 200, "number of jobs of the generated workload")
	fl.Uint64Var(&f.genSeed, "seed", 1, "seed of the generated workload")
	fl.StringVar(&f.jsonOut, "json", "", "write the summary as JSON to this file ('-' for stdout)")
	fl.StringVar(&f.jobsCSV, "jobs-csv", "", "write one row per job to this CSV file")
	fl.StringVar(&f.plot, "plot", "", "write plots (JCT CDF per algorithm, GPUs per job over time) to this .svg, .png or .pdf file (one per workload, suffixed with its name, when --workload is a directory)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

type workloadInput struct {
	name string
	jobs []workload.Job
}

func loadWorkloads(f *simulateFlags) ([]workloadInput, error) {
	if f.workload == "" {
		jobs := workload.Generate(workload.GenOptions{Jobs: f.genJobs, Seed: f.genSeed})
		return []workloadInput{{name: fmt.Sprintf("generated-%d-seed%d", f.genJobs, f.genSeed), jobs: jobs}}, nil
	}
	st, err := os.Stat(f.workload)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	paths := []string{f.workload}
	if st.IsDir() {
		paths, err = filepath.Glob(filepath.Join(f.workload, "*.csv"))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("workload: no *.csv files in %s", f.workload)
		}
		sort.Strings(paths)
	}
	var out []workloadInput
	for _, p := range paths {
		format := f.format
		if strings.EqualFold(format, "auto") {
			if format, err = workload.DetectFormat(p); err != nil {
				return nil, err
			}
		}
		jobs, err := workload.Read(p, format, workload.Options{Duration: workload.DurationOptions{App: f.scaling}})
		if err != nil {
			return nil, err
		}
		out = append(out, workloadInput{name: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), jobs: jobs})
	}
	return out, nil
}

func loadModels(dir string) (*perfmodel.Set, error) {
	set, err := perfmodel.NewSet()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	if dir != "" {
		apps, err := perfmodel.LoadPolluxDir(dir)
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			names[strings.ToLower(a.Name())] = true
			if err := set.Add(a); err != nil {
				return nil, err
			}
		}
	}
	// Parametric models fill in names the profiles do not cover.
	for _, p := range perfmodel.BuiltinParametric() {
		if !names[strings.ToLower(p.Name())] {
			if err := set.Add(p); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}

func algorithmNames(f *simulateFlags, reg *algorithm.Registry) ([]string, error) {
	if f.compare == "" {
		if _, ok := reg.Lookup(f.algorithm); !ok {
			return nil, fmt.Errorf("--algorithm: unknown algorithm %q (known: %s)", f.algorithm, strings.Join(reg.Names(), ", "))
		}
		return []string{f.algorithm}, nil
	}
	return pickNames("--compare", "algorithm", "", f.compare, reg.Names(), func(n string) (string, bool) {
		e, ok := reg.Lookup(n)
		return e.Name, ok
	})
}

// placerNames returns the placers --placer names: one, a comma-separated
// list or all of them, canonically spelt and without duplicates.
func placerNames(spec string, reg *placement.Registry) ([]string, error) {
	return pickNames("--placer", "placer", "; see 'voda placers'", spec, reg.Names(), func(n string) (string, bool) {
		e, ok := reg.Lookup(n)
		return e.Name, ok
	})
}

// pickNames reads a flag naming one, several (comma-separated) or all of
// known: canonical spelling (from lookup), no duplicates, at least one.
func pickNames(flag, kind, hint, spec string, known []string, lookup func(string) (string, bool)) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(spec), "all") {
		return known, nil
	}
	var names []string
	for _, n := range strings.Split(spec, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		name, ok := lookup(n)
		if !ok {
			return nil, fmt.Errorf("%s: unknown %s %q (known: %s%s)", flag, kind, n, strings.Join(known, ", "), hint)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no %s named", flag, kind)
	}
	return names, nil
}

// combo is one algorithm with one placer; every workload runs every combo.
type combo struct {
	algorithm, placer string
}

// label names a combo in file names, with the placer only
// when several are compared.
func (c combo) label(withPlacer bool) string {
	if withPlacer {
		return c.algorithm + "-" + c.placer
	}
	return c.algorithm
}

func runSimulate(ctx context.Context, stdout, stderr io.Writer, f *simulateFlags) error {
	reg := algorithm.Builtin()
	algos, err := algorithmNames(f, reg)
	if err != nil {
		return err
	}
	if _, err := registry.ParseParams(f.params); err != nil {
		return fmt.Errorf("--param: %w", err)
	}
	params, err := paramsPerAlgorithm(reg, algos, f.params)
	if err != nil {
		return err
	}
	// Build every allocator once up front so bad parameters fail fast.
	for _, a := range algos {
		p, _ := registry.ParseParams(params[a])
		if _, err := reg.New(a, p); err != nil {
			return err
		}
	}
	if !strings.EqualFold(f.format, workload.FormatAuto) && !slices.Contains(workload.Formats(), strings.ToLower(f.format)) {
		return fmt.Errorf("--format: unknown format %q (known: auto, %s)", f.format, strings.Join(workload.Formats(), ", "))
	}
	preg := placement.Builtin()
	placers, err := placerNames(f.placer, preg)
	if err != nil {
		return err
	}
	if _, err := registry.ParseParams(f.placerArgs); err != nil {
		return fmt.Errorf("--placer-param: %w", err)
	}
	placerParams, err := paramsPerPlacer(preg, placers, f.placerArgs)
	if err != nil {
		return err
	}
	inheritRestartCost(preg, placerParams, placers, f.restartCost)
	// Build every placer once up front too, so bad values fail fast; each
	// run still builds its own, as a placer need not be safe for
	// concurrent use.
	for _, name := range placers {
		p, _ := registry.ParseParams(placerParams[name])
		if _, err := preg.New(name, p); err != nil {
			return fmt.Errorf("--placer-param: %w", err)
		}
	}
	if f.nodes < 1 || f.gpusPerNode < 1 {
		return fmt.Errorf("--nodes and --gpus-per-node must be at least 1 (got %d and %d)", f.nodes, f.gpusPerNode)
	}
	if f.interval < 0 {
		return fmt.Errorf("--interval: %s must not be negative", f.interval)
	}
	models, err := loadModels(f.profiles)
	if err != nil {
		return fmt.Errorf("--profiles: %w", err)
	}
	inputs, err := loadWorkloads(f)
	if err != nil {
		return err
	}

	var combos []combo
	for _, a := range algos {
		for _, p := range placers {
			combos = append(combos, combo{algorithm: a, placer: p})
		}
	}
	type task struct {
		wl, combo int
	}
	var tasks []task
	for wi := range inputs {
		for ci := range combos {
			tasks = append(tasks, task{wi, ci})
		}
	}
	runs := make([][]*report.Run, len(inputs))
	for i := range runs {
		runs[i] = make([]*report.Run, len(combos))
	}
	var progress *report.Progress
	var mu sync.Mutex
	done := make([]float64, len(tasks))
	if !f.quiet {
		progress = report.NewProgress(stderr, "simulating", float64(len(tasks)))
	}
	report1 := func(i int, frac float64) {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done[i] = frac
		total := 0.0
		for _, d := range done {
			total += d
		}
		progress.Set(total)
	}

	workers := min(len(tasks), max(1, numCPU()))
	ch := make(chan int)
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				t := tasks[i]
				c := combos[t.combo]
				p, _ := registry.ParseParams(params[c.algorithm])
				alloc, err := reg.New(c.algorithm, p)
				if err != nil {
					errs[i] = err
					continue
				}
				pp, _ := registry.ParseParams(placerParams[c.placer])
				pl, err := preg.New(c.placer, pp)
				if err != nil {
					errs[i] = fmt.Errorf("--placer-param: %w", err)
					continue
				}
				run, err := sim.Run(ctx, inputs[t.wl].jobs, sim.Options{
					Nodes: f.nodes, GPUsPerNode: f.gpusPerNode,
					Interval: f.interval, RateLimit: f.rateLimit, Tick: f.tick,
					RestartCost: restartOrNone(f.restartCost),
					Oracle:      f.oracle,
					Allocator:   alloc, Placer: pl, Models: models,
					Workload: inputs[t.wl].name,
					Progress: func(frac float64) { report1(i, frac) },
				})
				if err != nil {
					errs[i] = fmt.Errorf("%s with placer %s on %s: %w", c.algorithm, c.placer, inputs[t.wl].name, err)
					continue
				}
				runs[t.wl][t.combo] = run
				report1(i, 1)
			}
		}()
	}
	for i := range tasks {
		ch <- i
	}
	close(ch)
	wg.Wait()
	if progress != nil {
		progress.Finish()
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return writeResults(stdout, f, inputs, combos, len(placers) > 1, runs)
}

// paramsPerAlgorithm hands each algorithm the --param settings it
// declares, so one command line can compare algorithms with different
// parameters. With a single algorithm every setting goes to it, and an
// unknown one is its error to report; with several, a setting no compared
// algorithm declares is an error.
func paramsPerAlgorithm(reg *algorithm.Registry, algos []string, pairs []string) (map[string][]string, error) {
	return routeParams("--param", "voda algorithms", algos, pairs, func(name string) []registry.ParamDoc {
		e, _ := reg.Lookup(name)
		return e.Params
	})
}

// paramsPerPlacer does for --placer-param and the placers what
// paramsPerAlgorithm does for --param and the algorithms.
func paramsPerPlacer(reg *placement.Registry, placers []string, pairs []string) (map[string][]string, error) {
	return routeParams("--placer-param", "voda placers", placers, pairs, func(name string) []registry.ParamDoc {
		e, _ := reg.Lookup(name)
		return e.Params
	})
}

// inheritRestartCost hands the simulated restart cost to every placer
// that weighs restarts and was not given its own restart_cost, so that it
// decides with the cost the simulator charges.
func inheritRestartCost(reg *placement.Registry, params map[string][]string, placers []string, cost time.Duration) {
	for _, name := range placers {
		e, _ := reg.Lookup(name)
		declared := slices.ContainsFunc(e.Params, func(pd registry.ParamDoc) bool { return pd.Name == "restart_cost" })
		set := slices.ContainsFunc(params[name], func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return strings.EqualFold(strings.TrimSpace(k), "restart_cost")
		})
		if declared && !set {
			params[name] = append(params[name], fmt.Sprintf("restart_cost=%g", max(cost.Seconds(), 0)))
		}
	}
}

// routeParams hands each of names the name=value pairs it declares (see
// paramsPerAlgorithm). flag and listing name the flag and the command
// that lists the parameters, for errors.
func routeParams(flag, listing string, names []string, pairs []string, declared func(name string) []registry.ParamDoc) (map[string][]string, error) {
	out := map[string][]string{}
	if len(names) == 1 {
		out[names[0]] = pairs
		return out, nil
	}
	for _, kv := range pairs {
		param, _, _ := strings.Cut(kv, "=")
		param = strings.ToLower(strings.TrimSpace(param))
		used := false
		for _, n := range names {
			for _, pd := range declared(n) {
				if strings.EqualFold(pd.Name, param) {
					out[n] = append(out[n], kv)
					used = true
				}
			}
		}
		if !used {
			return nil, fmt.Errorf("%s %s: none of %s takes it (see '%s')", flag, param, strings.Join(names, ", "), listing)
		}
	}
	return out, nil
}

// restartOrNone maps a zero restart cost to "none" (the simulator reads
// zero as its default).
func restartOrNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// writeResults writes the summaries of runs[workload][combo]; withPlacer
// says that several placers ran, so that file names must tell them apart.
func writeResults(stdout io.Writer, f *simulateFlags, inputs []workloadInput, combos []combo, withPlacer bool, runs [][]*report.Run) error {
	// With --json - stdout carries the JSON alone.
	text := stdout
	if f.jsonOut == "-" {
		text = io.Discard
	}
	var summaries []report.Summary
	type named struct {
		run   *report.Run
		combo combo
	}
	var flat []named
	for wi := range inputs {
		var row []report.Summary
		for ci := range combos {
			s := report.Summarize(runs[wi][ci])
			row = append(row, s)
			summaries = append(summaries, s)
			flat = append(flat, named{runs[wi][ci], combos[ci]})
		}
		if len(inputs) > 1 {
			fmt.Fprintf(text, "== %s\n", inputs[wi].name)
		}
		if len(row) == 1 {
			report.WriteText(text, row[0])
		} else {
			report.WriteComparison(text, row)
		}
		if len(inputs) > 1 {
			fmt.Fprintln(text)
		}
	}
	if len(inputs) > 1 {
		fmt.Fprintf(text, "== mean over %d workloads\n", len(inputs))
		report.WriteComparison(text, meanSummaries(summaries, len(inputs), len(combos)))
	}
	if f.jsonOut != "" {
		var v any = summaries
		if len(summaries) == 1 {
			v = summaries[0]
		}
		if err := writeJSONFile(f.jsonOut, stdout, v); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if f.jobsCSV != "" {
		for _, r := range flat {
			path := f.jobsCSV
			if len(flat) > 1 {
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%s-%s%s", strings.TrimSuffix(path, ext), fileSafe(r.run.Workload), fileSafe(r.combo.label(withPlacer)), ext)
			}
			if err := writeFile(path, func(w io.Writer) error { return report.WriteJobsCSV(w, r.run) }); err != nil {
				return fmt.Errorf("--jobs-csv: %w", err)
			}
		}
	}
	if f.plot != "" {
		// One figure per workload: JCT CDFs of every algorithm (and
		// placer), and GPUs held per job over time.
		for wi := range inputs {
			path := f.plot
			if len(inputs) > 1 {
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%s%s", strings.TrimSuffix(path, ext), fileSafe(inputs[wi].name), ext)
			}
			if err := report.Plot(path, runs[wi]); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
		}
	}
	return nil
}

// meanSummaries averages the summaries of each (algorithm, placer) combo
// over workloads, the way the Pollux artifact reports its means. all
// holds the workloads in order, each with its combos in order. Counts
// (jobs, restarts, cycles...) add up; maxima take the maximum; averages,
// per-job and per-cycle figures are means over workloads.
func meanSummaries(all []report.Summary, workloads, combos int) []report.Summary {
	out := make([]report.Summary, combos)
	n := float64(workloads)
	for ci := range out {
		var m report.Summary
		for wi := 0; wi < workloads; wi++ {
			s := all[wi*combos+ci]
			m.Algorithm = s.Algorithm
			m.Placer = s.Placer
			m.GPUs = s.GPUs
			m.MaxJCT = max(m.MaxJCT, s.MaxJCT)
			m.AvgRestartsPerJob += s.AvgRestartsPerJob / n
			m.MigrationsPerJob += s.MigrationsPerJob / n
			m.AvgSpreadJobs += s.AvgSpreadJobs / n
			m.Jobs += s.Jobs
			m.Completed += s.Completed
			m.AvgJCT += s.AvgJCT / n
			m.P50JCT += s.P50JCT / n
			m.P99JCT += s.P99JCT / n
			m.Makespan += s.Makespan / n
			m.AvgQueue += s.AvgQueue / n
			m.GPUUtilization += s.GPUUtilization / n
			m.Restarts += s.Restarts
			m.Migrations += s.Migrations
			m.Cycles += s.Cycles
			m.PlaceMsAvg += s.PlaceMsAvg / n
			m.PlaceMsMax = max(m.PlaceMsMax, s.PlaceMsMax)
			m.WallSeconds += s.WallSeconds
		}
		m.Workload = fmt.Sprintf("mean of %d", workloads)
		out[ci] = m
	}
	return out
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

func writeJSONFile(path string, stdout io.Writer, v any) error {
	enc := func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(v)
	}
	if path == "-" {
		return enc(stdout)
	}
	return writeFile(path, enc)
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
