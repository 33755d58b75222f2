package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// simulateFlags are the flags of 'voda simulate'; those sim takes as
// they are go straight into sim.
type simulateFlags struct {
	sim         sim.Comparison
	workload    string
	format      string
	profiles    string
	estimator   string
	oracle      bool
	byApp       bool
	algorithm   string
	compare     string
	placer      string
	restartCost time.Duration
	scaling     string
	genJobs     int
	genSeed     uint64
	jsonOut     string
	jobsCSV     string
	plot        string
	html        string
	quiet       bool
	// quotas is --quotas and teams --teams, read into split.
	quotas string
	teams  string
	split  *workload.TeamSplit
	// cluster is --cluster; nodesSet says --nodes or --gpus-per-node was
	// given on the command line, which --cluster excludes.
	cluster    string
	clusterSet bool
	nodesSet   bool
	// command is the command line as the flags read it, for reports.
	command string
}

const simulateLong = `Replay a workload on a simulated GPU cluster with Voda's scheduling core.

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

Cluster: --nodes and --gpus-per-node give nodes of one size (16 x 4 by
default); --cluster NODESxGPUS[,NODESxGPUS...] mixes sizes instead:
--cluster 4x8,8x4 is four nodes of 8 GPUs and eight of 4, named node-000
onwards in that order. Each worker of a job runs on one node with its G GPUs
free; a job whose workers no node can hold waits. Limits: %d nodes, %d GPUs
a node, %d GPUs in all.

Modes: --interval 60s advances the clock in fixed steps with one scheduling
cycle per step (the Pollux artifact's mode); the default (0) is event-driven,
with cycles on events under --rate-limit and every --tick, as in production.

Teams: a workload's jobs may name their teams (the optional team column);
--teams equal:N deals the jobs of a workload without teams round-robin to
team-1..team-N, --teams skewed:N gives team-1 half of them and the other
teams the rest. --quotas TEAM=GUARANTEE[:LIMIT[:WEIGHT]],... gives the
teams' quotas (LIMIT 0: none; WEIGHT 1 by default); with --teams and no
--quotas every team is guaranteed an equal part of the GPUs. With teams the
algorithm runs once per team within the GPUs the quotas entitle it to, as
the server composes it, and the report adds each team's GPUs held against
its entitlement, the time it was short of min(demand, guarantee), its
jobs' finish-time fairness (JCT over JCT alone on 1/N of the cluster) and
the reclaims (how long a team short of its guarantee, with a job waiting,
took to get it while another team borrowed). --ignore-quotas runs the
algorithm on the whole cluster as without teams, reporting the same, as a
baseline.

Estimates: algorithms see online estimates by default, Amdahl's law fitted
to each job's observed speed by worker count. --estimator goodput fits a
throughput model over placement and batch size instead (measured profiles
only), and --adaptive-batch also lets each job choose its batch size on
every placement and after every epoch for the most estimated goodput, as
Pollux's jobs do; the Goodput algorithm is made for it. --oracle gives the
true fixed-batch curves.`

const simulateExample = `  # Synthetic workload, default algorithm (ElasticFIFO)
  voda simulate

  # The Pollux artifact's Tiresias on one workload
  voda simulate --workload ../shared/traces/pollux/workloads/workload-6.csv \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --algorithm Tiresias --param threshold=57600 --param starvation=0

  # Goodput with adaptive batch sizes, broken down by application
  voda simulate --workload ../shared/traces/pollux/workloads \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --algorithm Goodput --adaptive-batch --by-app

  # Compare algorithms on all eight workloads and plot the JCT CDFs
  voda simulate --workload ../shared/traces/pollux/workloads \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --compare FIFO,ElasticFIFO,Tiresias,AFS-L --plot jct.svg

  # The same comparison as one HTML page to share
  voda simulate --workload ../shared/traces/pollux/workloads \
    --profiles ../shared/traces/pollux/traces --interval 60s \
    --compare SRJF,AFS-L,Goodput --html report.html

  # Compare placers, with a smaller migration budget for topology
  voda simulate --compare ElasticFIFO,AFS-L --placer greedy,topology \
    --placer-param migration_budget=4

  # Nodes of two sizes: four of 8 GPUs and eight of 4
  voda simulate --cluster 4x8,8x4 --placer greedy,topology`

func newSimulateCommand() *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:     "simulate",
		Short:   "Replay a workload on a simulated cluster and report job completion times",
		Long:    fmt.Sprintf(simulateLong, sim.MaxNodes, sim.MaxGPUsPerNode, sim.MaxGPUs),
		Example: simulateExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.command = commandLine(cmd)
			fl := cmd.Flags()
			f.clusterSet = fl.Changed("cluster")
			f.nodesSet = fl.Changed("nodes") || fl.Changed("gpus-per-node")
			return runSimulate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	f.register(cmd)
	return cmd
}

func (f *simulateFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload CSV file, or a directory of them (default: a generated workload)")
	fl.StringVar(&f.format, "format", "auto", "workload format: auto, pollux, voda or duration")
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured job profiles (Pollux artifact traces/, one subdirectory per application)")
	fl.StringVar(&f.algorithm, "algorithm", algorithm.DefaultName, "scheduling algorithm (see 'voda algorithms'; case-insensitive)")
	fl.StringVar(&f.compare, "compare", "", "comma-separated algorithms to run on the same workload and compare ('all' for every one)")
	fl.StringArrayVar(&f.sim.AlgorithmParams, "param", nil, "algorithm parameter name=value (repeatable; see 'voda algorithms')")
	fl.StringVar(&f.placer, "placer", placement.DefaultName, "placement policy, or comma-separated policies to compare ('all' for every one; see 'voda placers'; case-insensitive)")
	fl.StringArrayVar(&f.sim.PlacerParams, "placer-param", nil, "placer parameter name=value (repeatable; see 'voda placers')")
	fl.IntVar(&f.sim.Options.Nodes, "nodes", 16, "number of nodes")
	fl.IntVar(&f.sim.Options.GPUsPerNode, "gpus-per-node", 4, "GPUs per node")
	fl.StringVar(&f.cluster, "cluster", "", "nodes of several sizes instead of --nodes and --gpus-per-node: NODESxGPUS groups, comma-separated (4x8,8x4: four 8-GPU nodes and eight 4-GPU nodes)")
	fl.DurationVar(&f.sim.Options.Interval, "interval", 0, "fixed scheduling interval (60s reproduces the Pollux artifact); 0 is event-driven")
	fl.DurationVar(&f.sim.Options.RateLimit, "rate-limit", 30*time.Second, "event-driven mode: least time between two cycles that change running jobs; a job that fits in free GPUs starts at once")
	fl.DurationVar(&f.sim.Options.Tick, "tick", 60*time.Second, "event-driven mode: period of cycles without events")
	fl.DurationVar(&f.restartCost, "restart-cost", sim.DefaultRestartCost, "time a job makes no progress after each (re)placement")
	fl.BoolVar(&f.oracle, "oracle", false, "give algorithms the true speedup and remaining time instead of online estimates (the same as --estimator oracle)")
	fl.StringVar(&f.estimator, "estimator", "workers", "what gives algorithms their estimates: 'workers' (online, Amdahl's law over worker count), 'goodput' (online, a throughput model over placement and batch size, the server's policy; needs --profiles) or 'oracle' (the true speedup and remaining time)")
	fl.BoolVar(&f.sim.Options.AdaptiveBatch, "adaptive-batch", false, "jobs choose their batch size per placement and per epoch by estimated goodput, as Pollux's do (implies --estimator goodput; needs --profiles)")
	fl.StringVar(&f.scaling, "scaling", "amdahl", "performance model assigned to jobs of duration-only traces")
	fl.IntVar(&f.genJobs, "jobs", 200, "number of jobs of the generated workload")
	fl.Uint64Var(&f.genSeed, "seed", 1, "seed of the generated workload")
	fl.StringVar(&f.jsonOut, "json", "", "write the summary as JSON to this file ('-' for stdout)")
	fl.StringVar(&f.jobsCSV, "jobs-csv", "", "write one row per job to this CSV file")
	fl.StringVar(&f.plot, "plot", "", "write plots (JCT CDF per algorithm, GPUs per job over time) to this "+orList(report.PlotFormats())+
		" file, the format following the extension (one per workload, suffixed with its name, when --workload is a directory)")
	fl.StringVar(&f.html, "html", "", "write one self-contained HTML page (summary tables, JCT CDFs, GPUs per job over time; colour-blind-safe, no network or scripts needed) to this file; with a directory of workloads it covers every workload and their mean")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	fl.StringVar(&f.teams, "teams", "", "deal the jobs to teams team-1..team-N, replacing the workload's: equal:N (round-robin) or skewed:N (team-1 half the jobs, the rest round-robin to the others)")
	fl.StringVar(&f.quotas, "quotas", "", "teams' quotas, TEAM=GUARANTEE[:LIMIT[:WEIGHT]] comma-separated (team-a=8,team-b=8:16:2; LIMIT 0 is none, WEIGHT 1 by default); a team not named gets none guaranteed, no limit, weight 1; with --teams and no --quotas, equal guarantees")
	fl.BoolVar(&f.sim.Options.IgnoreQuotas, "ignore-quotas", false, "with teams, run the algorithm on the whole cluster as if it had one owner, still reporting by team (the baseline of the quotas' cost)")
	fl.BoolVar(&f.byApp, "by-app", false, "also break the average JCT down by application and, with goodput estimates, show the step-time prediction errors by application")
}

// polluxDataHint says where the data of the examples comes from, for
// errors about missing files.
const polluxDataHint = "the Pollux artifact's workloads and profiles are not in the repository: " +
	"docs/simulator.md#getting-the-pollux-data says where to get them"

func runSimulate(ctx context.Context, stdout, stderr io.Writer, f *simulateFlags) error {
	// Everything that can fail without simulating is checked first: a
	// comparison of every algorithm on the Pollux workloads is 72 runs.
	c, err := f.comparison()
	if err != nil {
		return err
	}
	if c.Options.Models, err = perfmodel.Load(f.profiles); err != nil {
		return fmt.Errorf("--profiles: %w", withDataHint(err))
	}
	if c.Workloads, err = f.workloads(); err != nil {
		return withDataHint(err)
	}
	if err := f.applyTeams(c); err != nil {
		return err
	}
	if err := f.checkModels(c); err != nil {
		return err
	}
	if err := checkOutputs(f.outputs(c)); err != nil {
		return err
	}
	var progress *report.Progress
	if !f.quiet {
		progress = report.NewProgress(stderr, "simulating", 1)
		c.Progress = progress.Set
	}
	runs, err := c.Run(ctx)
	if progress != nil {
		progress.Finish()
	}
	if err != nil {
		return err
	}
	return f.writeResults(stdout, c, runs)
}

// comparison checks the flags that need no file and returns the
// simulation they ask for, without its workloads and models.
func (f *simulateFlags) comparison() (*sim.Comparison, error) {
	c := &f.sim
	var err error
	switch kind := sim.EstimatorKind(f.estimator); {
	case f.estimator == "":
		c.Options.Estimator = sim.EstimatorWorkers
	case slices.Contains(sim.EstimatorKinds(), kind):
		c.Options.Estimator = kind
	default:
		return nil, fmt.Errorf("--estimator %q: want workers, goodput or oracle", f.estimator)
	}
	if f.oracle {
		if c.Options.Estimator == sim.EstimatorGoodput {
			return nil, errors.New("--oracle replaces online estimates: it cannot be combined with --estimator goodput")
		}
		c.Options.Estimator = sim.EstimatorOracle
	}
	if c.Options.Estimator == sim.EstimatorOracle && c.Options.AdaptiveBatch {
		return nil, errors.New("--oracle replaces online estimates: it cannot be combined with --adaptive-batch")
	}
	if c.Algorithms, err = algorithmNames(f); err != nil {
		return nil, err
	}
	if c.Placers, err = pickNames("--placer", "placer", "; see 'voda placers'", f.placer, placement.Builtin()); err != nil {
		return nil, err
	}
	c.Options.RestartCost = restartOrNone(f.restartCost)
	if err := c.Validate(); err != nil {
		return nil, paramFlagError(err)
	}
	if !strings.EqualFold(f.format, workload.FormatAuto) && !slices.Contains(workload.Formats(), strings.ToLower(f.format)) {
		return nil, fmt.Errorf("--format: unknown format %q (known: auto, %s)", f.format, strings.Join(workload.Formats(), ", "))
	}
	if err := f.nodes(&c.Options); err != nil {
		return nil, err
	}
	if c.Options.Interval < 0 {
		return nil, fmt.Errorf("--interval: %s must not be negative", c.Options.Interval)
	}
	if f.plot != "" {
		if err := report.CheckPlotFormat(f.plot); err != nil {
			return nil, fmt.Errorf("--plot %w", err)
		}
	}
	if f.teams != "" {
		sp, err := workload.ParseTeamSplit(f.teams)
		if err != nil {
			return nil, fmt.Errorf("--teams: %w", err)
		}
		f.split = &sp
	}
	if f.quotas != "" {
		if c.Options.Quotas, err = sim.ParseQuotas(f.quotas); err != nil {
			return nil, fmt.Errorf("--quotas: %w", err)
		}
	}
	return c, nil
}

// applyTeams deals the jobs of c's workloads to teams as --teams says,
// and without --quotas guarantees each team an equal part of the GPUs.
func (f *simulateFlags) applyTeams(c *sim.Comparison) error {
	if f.split == nil {
		return nil
	}
	for _, w := range c.Workloads {
		f.split.Apply(w.Jobs)
	}
	if f.quotas != "" {
		return nil
	}
	total, err := sim.TotalGPUs(c.Options)
	if err != nil {
		return err
	}
	c.Options.Quotas = sim.EqualQuotas(f.split.Teams(), total)
	return nil
}

// nodes sets the cluster of opts from --cluster, or checks --nodes and
// --gpus-per-node.
func (f *simulateFlags) nodes(opts *sim.Options) error {
	if !f.clusterSet {
		if opts.Nodes < 1 || opts.GPUsPerNode < 1 {
			return fmt.Errorf("--nodes and --gpus-per-node must be at least 1 (got %d and %d)", opts.Nodes, opts.GPUsPerNode)
		}
		if err := sim.CheckNodeGroups([]sim.NodeGroup{{Nodes: opts.Nodes, GPUs: opts.GPUsPerNode}}); err != nil {
			return fmt.Errorf("--nodes %d --gpus-per-node %d: %w", opts.Nodes, opts.GPUsPerNode, err)
		}
		return nil
	}
	if f.nodesSet {
		return errors.New("--cluster gives every node's size: it cannot be combined with --nodes or --gpus-per-node")
	}
	groups, err := sim.ParseNodeGroups(f.cluster)
	if err != nil {
		return fmt.Errorf("--cluster %q: %w", f.cluster, err)
	}
	opts.NodeGroups, opts.Nodes, opts.GPUsPerNode = groups, 0, 0
	return nil
}

// withDataHint adds polluxDataHint to an error about a missing file.
func withDataHint(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%s)", err, polluxDataHint)
	}
	return err
}

// checkModels fails unless every job of c's workloads has a performance
// model, naming the applications that have none, so that a Pollux
// workload run without its profiles fails now rather than at its first
// run's first job.
func (f *simulateFlags) checkModels(c *sim.Comparison) error {
	var missing []string
	var in string // the first workload with a job of a missing application
	var first error
	for _, w := range c.Workloads {
		for _, j := range w.Jobs {
			if slices.Contains(missing, j.App) {
				continue
			}
			if _, err := c.Options.Models.Get(j.App); err != nil {
				missing = append(missing, j.App)
				if first == nil {
					in, first = w.Name, err
				}
			}
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case f.profiles != "":
		return fmt.Errorf("workload %s: %w: --profiles %s has no profile of it and no built-in model has its name", in, first, f.profiles)
	}
	var builtin []string
	for _, m := range perfmodel.BuiltinParametric() {
		builtin = append(builtin, m.Name())
	}
	return fmt.Errorf("workload %s: no performance model for %s (built in: %s): measured applications, such as the Pollux artifact's, "+
		"need --profiles DIR (e.g. --profiles ../shared/traces/pollux/traces; see docs/simulator.md#getting-the-pollux-data)",
		in, strings.Join(missing, ", "), strings.Join(builtin, ", "))
}

// output is a file a flag asks for.
type output struct{ flag, path string }

// outputs lists every file the flags ask c's runs to write, with the
// names writeResults gives them.
func (f *simulateFlags) outputs(c *sim.Comparison) []output {
	var out []output
	if f.jsonOut != "" && f.jsonOut != "-" {
		out = append(out, output{"--json", f.jsonOut})
	}
	pairs := len(c.Algorithms) * len(c.Placers)
	for wi := range c.Workloads {
		if f.jobsCSV != "" {
			for i := range pairs {
				out = append(out, output{"--jobs-csv", jobsCSVPath(f.jobsCSV, c, wi, i)})
			}
		}
		if f.plot != "" {
			out = append(out, output{"--plot", plotPath(f.plot, c, wi)})
		}
	}
	if f.html != "" {
		out = append(out, output{"--html", f.html})
	}
	return out
}

// checkOutputs fails, naming the flag and the file, unless every output
// can be written and no two flags write the same file.
func checkOutputs(outs []output) error {
	by := map[string]string{}
	for _, o := range outs {
		key := filepath.Clean(o.path)
		if other, ok := by[key]; ok && other != o.flag {
			return fmt.Errorf("%s and %s both write %s", other, o.flag, o.path)
		}
		by[key] = o.flag
		if err := checkWritable(o.path); err != nil {
			return fmt.Errorf("%s: %w", o.flag, err)
		}
	}
	return nil
}

// checkWritable fails unless the file path can be written, leaving
// nothing behind: an existing regular file is opened for writing without
// truncating it, and a new one is created and removed. Other existing
// files (a terminal, /dev/null, a pipe) are taken as they are: opening a
// pipe would block, or end what reads it.
func checkWritable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s is a directory, want a file", path)
	case err == nil && !st.Mode().IsRegular():
		return nil
	case err == nil:
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
		return fh.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("cannot write %s: directory %s does not exist", path, dir)
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return os.Remove(path)
}

// paramFlagError names the flag behind a parameter error. An algorithm
// that rejects its parameters says so itself, naming both.
func paramFlagError(err error) error {
	var pe *sim.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	flag, listing := "--param", "voda algorithms"
	if pe.Kind == "placer" {
		flag, listing = "--placer-param", "voda placers"
	}
	switch {
	case pe.Param != "":
		return fmt.Errorf("%s %s: none of %s takes it (see '%s')", flag, pe.Param, strings.Join(pe.Names, ", "), listing)
	case pe.Entry != "" && pe.Kind == "algorithm":
		return pe.Err
	}
	return fmt.Errorf("%s: %w", flag, pe.Err)
}

func (f *simulateFlags) workloads() ([]sim.Workload, error) {
	if f.workload == "" {
		return []sim.Workload{sim.Generated(workload.GenOptions{Jobs: f.genJobs, Seed: f.genSeed})}, nil
	}
	return sim.LoadWorkloads(f.workload, f.format, workload.Options{Duration: workload.DurationOptions{App: f.scaling}})
}

// algorithmNames returns the algorithm --algorithm names or, with
// --compare, those it names.
func algorithmNames(f *simulateFlags) ([]string, error) {
	reg := algorithm.Builtin()
	if f.compare != "" {
		return pickNames("--compare", "algorithm", "", f.compare, reg)
	}
	if _, ok := reg.Lookup(f.algorithm); !ok {
		return nil, fmt.Errorf("--algorithm: unknown algorithm %q (known: %s)", f.algorithm, strings.Join(reg.Names(), ", "))
	}
	return []string{f.algorithm}, nil
}

// pickNames reads a flag naming one, several (comma-separated) or all
// the entries of reg: canonically spelt, without duplicates, at least one.
func pickNames[T any](flag, kind, hint, spec string, reg *registry.Registry[T]) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(spec), "all") {
		return reg.Names(), nil
	}
	var names []string
	for n := range strings.SplitSeq(spec, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		e, ok := reg.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("%s: unknown %s %q (known: %s%s)", flag, kind, n, strings.Join(reg.Names(), ", "), hint)
		}
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no %s named", flag, kind)
	}
	return names, nil
}

// restartOrNone maps a zero restart cost to "none" (the simulator reads
// zero as its default).
func restartOrNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// writeResults writes the summaries of the runs of c and the files the
// flags ask for.
func (f *simulateFlags) writeResults(stdout io.Writer, c *sim.Comparison, runs [][]*report.Run) error {
	rows := make([][]report.Summary, len(runs))
	var summaries []report.Summary
	for wi, row := range runs {
		for _, r := range row {
			rows[wi] = append(rows[wi], report.Summarize(r))
		}
		summaries = append(summaries, rows[wi]...)
	}
	// With --json - stdout carries the JSON alone.
	if f.jsonOut != "-" {
		if err := writeText(stdout, rows, f.byApp); err != nil {
			return err
		}
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
		if err := writeJobsCSVs(f.jobsCSV, c, runs); err != nil {
			return fmt.Errorf("--jobs-csv: %w", err)
		}
	}
	if f.plot != "" {
		if err := writePlots(f.plot, c, runs); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if f.html != "" {
		if err := f.writeHTML(c, runs); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

// writeHTML writes the page of --html.
func (f *simulateFlags) writeHTML(c *sim.Comparison, runs [][]*report.Run) error {
	title := "Voda simulation: " + strings.Join(c.Algorithms, ", ")
	if len(c.Placers) > 1 {
		title += " with placers " + strings.Join(c.Placers, ", ")
	}
	if len(runs) > 1 {
		title += fmt.Sprintf(" on %d workloads", len(runs))
	} else if len(runs) == 1 && len(runs[0]) > 0 && runs[0][0].Workload != "" {
		title += " on " + runs[0][0].Workload
	}
	v, rev := versionInfo()
	opts := report.HTMLOptions{Command: f.command, Version: fmt.Sprintf("%s (revision %s)", v, rev)}
	return writeFile(f.html, func(w io.Writer) error { return report.WriteHTML(w, title, runs, opts) })
}

// commandLine rebuilds the command line of cmd from the flags that were
// set, in name order, quoted for a POSIX shell where needed.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if fl.Value.Type() == "bool" && v == "true" {
				parts = append(parts, "--"+fl.Name)
				continue
			}
			parts = append(parts, "--"+fl.Name, shellQuote(v))
		}
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell unless it needs no quoting.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeText writes the summaries for people: one summary, or a table per
// workload and, with several workloads, the table of their means.
func writeText(w io.Writer, rows [][]report.Summary, byApp bool) error {
	bw := bufio.NewWriter(w) // keeps the first write error for Flush
	for _, row := range rows {
		if len(rows) > 1 {
			fmt.Fprintf(bw, "== %s\n", row[0].Workload)
		}
		var err error
		if len(row) == 1 {
			err = report.WriteText(bw, row[0])
		} else {
			err = report.WriteComparison(bw, row)
		}
		if err != nil {
			return err
		}
		if len(rows) > 1 {
			fmt.Fprintln(bw)
		}
	}
	if len(rows) > 1 {
		fmt.Fprintf(bw, "== mean over %d workloads\n", len(rows))
		if err := report.WriteComparison(bw, report.MeanOverWorkloads(rows)); err != nil {
			return err
		}
	}
	teams := rows[0]
	if len(rows) > 1 {
		teams = report.MeanOverWorkloads(rows)
	}
	if slices.ContainsFunc(teams, func(s report.Summary) bool { return len(s.Teams) > 0 }) {
		fmt.Fprintf(bw, "\n== teams: GPUs held against entitlement, finish-time fairness (JCT / JCT alone on 1/N of the cluster)\n")
		if err := report.WriteTeams(bw, teams); err != nil {
			return err
		}
	}
	if byApp {
		sums := rows[0]
		if len(rows) > 1 {
			sums = report.MeanOverWorkloads(rows)
		}
		fmt.Fprintf(bw, "\n== average JCT by application (s)\n")
		if err := report.WriteApps(bw, sums); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// writeJobsCSVs writes the jobs of each run of c to its file (jobsCSVPath).
func writeJobsCSVs(path string, c *sim.Comparison, runs [][]*report.Run) error {
	for wi, row := range runs {
		for i, r := range row {
			if err := writeFile(jobsCSVPath(path, c, wi, i), func(w io.Writer) error { return report.WriteJobsCSV(w, r) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// jobsCSVPath is where --jobs-csv path puts the jobs of the i-th run of
// c's wi-th workload: path or, with several runs, path suffixed with the
// workload, the algorithm and (when several placers run) the placer.
func jobsCSVPath(path string, c *sim.Comparison, wi, i int) string {
	algo, placer := c.Pair(i)
	switch {
	case len(c.Placers) > 1:
		return suffixed(path, c.Workloads[wi].Name, algo, placer)
	case len(c.Workloads) > 1 || len(c.Algorithms) > 1:
		return suffixed(path, c.Workloads[wi].Name, algo)
	}
	return path
}

// writePlots writes one figure per workload (see report.Plot) to its file
// (plotPath).
func writePlots(path string, c *sim.Comparison, runs [][]*report.Run) error {
	for wi, row := range runs {
		if err := report.Plot(plotPath(path, c, wi), row); err != nil {
			return err
		}
	}
	return nil
}

// plotPath is where --plot path puts the figure of c's wi-th workload:
// path or, with several workloads, path suffixed with the workload's name.
func plotPath(path string, c *sim.Comparison, wi int) string {
	if len(c.Workloads) > 1 {
		return suffixed(path, c.Workloads[wi].Name)
	}
	return path
}

// suffixed inserts "-part" for each of parts before the extension of
// path, each part made safe for a file name.
func suffixed(path string, parts ...string) string {
	safe := func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + strings.Map(safe, strings.Join(parts, "-")) + ext
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
