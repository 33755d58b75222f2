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
utilisation, restarts and migrations.

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
    --compare FIFO,ElasticFIFO,Tiresias,AFS-L --plot jct.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload CSV file, or a directory of them (default: a generated workload)")
	fl.StringVar(&f.format, "format", "auto", "workload format: auto, pollux, voda or duration")
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured job profiles (Pollux artifact traces/, one subdirectory per application)")
	fl.StringVar(&f.algorithm, "algorithm", "ElasticFIFO", "scheduling algorithm (see 'voda algorithms'; case-insensitive)")
	fl.StringVar(&f.compare, "compare", "", "comma-separated algorithms to run on the same workload and compare ('all' for every one)")
	fl.StringArrayVar(&f.params, "param", nil, "algorithm parameter name=value (repeatable; see 'voda algorithms')")
	fl.StringVar(&f.placer, "placer", placement.GreedyName, "placement policy")
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
	if strings.EqualFold(strings.TrimSpace(f.compare), "all") {
		return reg.Names(), nil
	}
	var names []string
	for _, n := range strings.Split(f.compare, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		e, ok := reg.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("--compare: unknown algorithm %q (known: %s)", n, strings.Join(reg.Names(), ", "))
		}
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return nil, errors.New("--compare: no algorithm named")
	}
	return names, nil
}

func runSimulate(ctx context.Context, stdout, stderr io.Writer, f *simulateFlags) error {
	reg := algorithm.Builtin()
	algos, err := algorithmNames(f, reg)
	if err != nil {
		return err
	}
	if _, err := algorithm.ParseParams(f.params); err != nil {
		return fmt.Errorf("--param: %w", err)
	}
	params, err := paramsPerAlgorithm(reg, algos, f.params)
	if err != nil {
		return err
	}
	// Build every allocator once up front so bad parameters fail fast.
	for _, a := range algos {
		p, _ := algorithm.ParseParams(params[a])
		if _, err := reg.New(a, p); err != nil {
			return err
		}
	}
	if !strings.EqualFold(f.format, workload.FormatAuto) && !slices.Contains(workload.Formats(), strings.ToLower(f.format)) {
		return fmt.Errorf("--format: unknown format %q (known: auto, %s)", f.format, strings.Join(workload.Formats(), ", "))
	}
	if _, err := placement.Builtin().New(f.placer, nil); err != nil {
		return fmt.Errorf("--placer: %w", err)
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

	type task struct {
		wl, algo int
	}
	var tasks []task
	for wi := range inputs {
		for ai := range algos {
			tasks = append(tasks, task{wi, ai})
		}
	}
	runs := make([][]*report.Run, len(inputs))
	for i := range runs {
		runs[i] = make([]*report.Run, len(algos))
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
				p, _ := algorithm.ParseParams(params[algos[t.algo]])
				alloc, err := reg.New(algos[t.algo], p)
				if err != nil {
					errs[i] = err
					continue
				}
				pl, _ := placement.Builtin().New(f.placer, nil)
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
					errs[i] = fmt.Errorf("%s on %s: %w", algos[t.algo], inputs[t.wl].name, err)
					continue
				}
				runs[t.wl][t.algo] = run
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
	return writeResults(stdout, f, inputs, algos, runs)
}

// paramsPerAlgorithm hands each algorithm the --param settings it
// declares, so one command line can compare algorithms with different
// parameters. With a single algorithm every setting goes to it, and an
// unknown one is its error to report; with several, a setting no compared
// algorithm declares is an error.
func paramsPerAlgorithm(reg *algorithm.Registry, algos []string, pairs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(algos) == 1 {
		out[algos[0]] = pairs
		return out, nil
	}
	for _, kv := range pairs {
		name, _, _ := strings.Cut(kv, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		used := false
		for _, a := range algos {
			e, _ := reg.Lookup(a)
			for _, pd := range e.Params {
				if strings.EqualFold(pd.Name, name) {
					out[a] = append(out[a], kv)
					used = true
				}
			}
		}
		if !used {
			return nil, fmt.Errorf("--param %s: none of %s takes it (see 'voda algorithms')", name, strings.Join(algos, ", "))
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

func writeResults(stdout io.Writer, f *simulateFlags, inputs []workloadInput, algos []string, runs [][]*report.Run) error {
	// With --json - stdout carries the JSON alone.
	text := stdout
	if f.jsonOut == "-" {
		text = io.Discard
	}
	var summaries []report.Summary
	var flat []*report.Run
	for wi := range inputs {
		var row []report.Summary
		for ai := range algos {
			s := report.Summarize(runs[wi][ai])
			row = append(row, s)
			summaries = append(summaries, s)
			flat = append(flat, runs[wi][ai])
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
		report.WriteComparison(text, meanSummaries(summaries, len(inputs), algos))
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
		for _, run := range flat {
			path := f.jobsCSV
			if len(flat) > 1 {
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%s-%s%s", strings.TrimSuffix(path, ext), fileSafe(run.Workload), fileSafe(run.Algorithm), ext)
			}
			if err := writeFile(path, func(w io.Writer) error { return report.WriteJobsCSV(w, run) }); err != nil {
				return fmt.Errorf("--jobs-csv: %w", err)
			}
		}
	}
	if f.plot != "" {
		// One figure per workload: JCT CDFs of every algorithm, and GPUs
		// held per job over time.
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

// meanSummaries averages per-algorithm summaries over workloads, the way
// the Pollux artifact reports its means.
func meanSummaries(all []report.Summary, workloads int, algos []string) []report.Summary {
	out := make([]report.Summary, len(algos))
	for ai := range algos {
		var m report.Summary
		for wi := 0; wi < workloads; wi++ {
			s := all[wi*len(algos)+ai]
			m.Algorithm = s.Algorithm
			m.GPUs = s.GPUs
			m.MaxJCT = max(m.MaxJCT, s.MaxJCT)
			m.AvgRestartsPerJob += s.AvgRestartsPerJob / float64(workloads)
			m.Jobs += s.Jobs
			m.Completed += s.Completed
			m.AvgJCT += s.AvgJCT / float64(workloads)
			m.P50JCT += s.P50JCT / float64(workloads)
			m.P99JCT += s.P99JCT / float64(workloads)
			m.Makespan += s.Makespan / float64(workloads)
			m.AvgQueue += s.AvgQueue / float64(workloads)
			m.GPUUtilization += s.GPUUtilization / float64(workloads)
			m.Restarts += s.Restarts
			m.Migrations += s.Migrations
			m.WallSeconds += s.WallSeconds
		}
		m.Workload = fmt.Sprintf("mean of %d", workloads)
		out[ai] = m
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
