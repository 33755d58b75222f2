package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func newWorkloadCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Make workloads for 'voda simulate', and replay them against a running server",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newWorkloadGenerateCommand(), newWorkloadReplayCommand())
	return cmd
}

// generateFlags are the flags of 'voda workload generate'.
type generateFlags struct {
	philly   string
	profiles string
	output   string
	seed     uint64
	count    int
	opts     workload.PolluxGenOptions
	loUtil   float64
	hiUtil   float64
}

const generateLong = `Sample new workloads from the Philly trace the way the Pollux OSDI'21
artifact made its own (simulator/workload.py), so that results can be checked
on workloads the artifact never published.

Trace rows that ran at least 60 s and used under 1000 GPU-hours are kept; their
clock is moved back --start hours and the rows whose hour of day is then below
--hours stay. --jobs x --load rows are drawn at random without replacement.
A job is submitted at its row's time of day. Its application follows the
row's GPU time: under 1 GPU-hour cifar10 or ncf, under 10 deepspeech2 or bert
(even odds), under 100 yolov3, else imagenet. Its replicas and batch size are
drawn from the application's "reasonable" fixed configurations, computed from
the profiles as the artifact does: replica counts whose best batch size
finishes in under 12 hours with a scaling efficiency between --lo-util and
--hi-util over one replica (or one replica if none).

--load keeps the submission window and multiplies the number of jobs, as the
artifact's workloads-2.0 (320 jobs over the same 8 hours) do; with the same
seed, a higher load keeps every job of a lower one.

The output is in the Pollux format (name,time,application,num_replicas,
batch_size); 'voda simulate --workload FILE-OR-DIR --profiles DIR' replays it.
With --count N, N workloads with seeds --seed, --seed+1, ... are written to
the directory -o as workload-<seed>.csv. The same seed always gives the same
workload (the generator is a seeded PCG, not the artifact's Python RNG, so it
does not reproduce the artifact's own files, only their distribution).`

const generateExample = `  # One workload like the artifact's workloads/workload-N.csv
  voda workload generate --profiles ../shared/traces/pollux/traces --seed 101 -o w101.csv

  # Eight unseen 1.0x workloads, then compare algorithms on them
  voda workload generate --profiles ../shared/traces/pollux/traces \
    --seed 101 --count 8 -o /tmp/unseen-1.0
  voda simulate --workload /tmp/unseen-1.0 --profiles ../shared/traces/pollux/traces \
    --interval 60s --compare FIFO,Tiresias,AFS-L`

func newWorkloadGenerateCommand() *cobra.Command {
	f := &generateFlags{opts: workload.DefaultPolluxGenOptions()}
	cmd := &cobra.Command{
		Use:     "generate",
		Short:   "Sample Pollux-style workloads from the Philly trace",
		Long:    generateLong,
		Example: generateExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGenerate(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured job profiles (the Pollux artifact's traces/); required")
	fl.StringVar(&f.philly, "philly", "", "Philly trace CSV (timestamp,duration,num_gpus,gpu_time) (default PROFILES/philly.csv)")
	fl.StringVarP(&f.output, "output", "o", "-", "output file ('-' for stdout), or directory with --count above 1")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the (first) workload")
	fl.IntVar(&f.count, "count", 1, "number of workloads, with seeds --seed, --seed+1, ...")
	fl.IntVar(&f.opts.Jobs, "jobs", workload.DefaultPolluxJobs, "jobs per workload at load 1")
	fl.Float64Var(&f.opts.Load, "load", 1, "multiplies --jobs in the same submission window (2 is like the artifact's workloads-2.0)")
	fl.IntVar(&f.opts.Start, "start", workload.DefaultPolluxStart, "hours to move the trace's clock back (0-23)")
	fl.IntVar(&f.opts.Hours, "hours", workload.DefaultPolluxHours, "hours of the shifted day that submissions come from (1-24)")
	fl.Float64Var(&f.loUtil, "lo-util", 0.5, "least scaling efficiency of a configuration with several replicas (exclusive)")
	fl.Float64Var(&f.hiUtil, "hi-util", 0.8, "greatest scaling efficiency of a configuration with several replicas (exclusive)")
	fl.Float64Var(&f.opts.MultiGPUShare, "multi-gpu-share", 0, "fraction of jobs (0-1) whose workers hold several GPUs: each draws G from --gpus-per-worker and rounds its replicas up to whole workers (written as a gpus_per_worker column)")
	fl.IntSliceVar(&f.opts.GPUsPerWorker, "gpus-per-worker", workload.DefaultGenGPUsPerWorker(), "GPUs per worker a multi-GPU job draws from, uniformly")
	return cmd
}

func runGenerate(stdout, stderr io.Writer, f *generateFlags) error {
	if f.profiles == "" {
		return errors.New("--profiles is required: the directory of the Pollux artifact's traces (one subdirectory per application)")
	}
	if f.count < 1 {
		return fmt.Errorf("--count %d: want at least 1", f.count)
	}
	if f.count > 1 && f.output == "-" {
		return errors.New("--count above 1 needs -o DIR, the directory to write workload-<seed>.csv files to")
	}
	if f.count == 1 && f.output != "-" {
		if err := checkWritable(f.output); err != nil {
			return fmt.Errorf("-o: %w", err)
		}
	}
	configs, err := polluxConfigs(f.profiles, f.loUtil, f.hiUtil)
	if err != nil {
		return withDataHint(err)
	}
	philly := f.philly
	if philly == "" {
		philly = filepath.Join(f.profiles, "philly.csv")
	}
	fh, err := os.Open(philly)
	if err != nil {
		return fmt.Errorf("read Philly trace: %w", withDataHint(err))
	}
	trace, err := workload.ReadPhilly(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", philly, err)
	}
	opts := f.opts
	opts.Configs = configs
	if f.count > 1 {
		if err := os.MkdirAll(f.output, 0o755); err != nil {
			return err
		}
	}
	for i := range f.count {
		opts.Seed = f.seed + uint64(i)
		jobs, err := workload.GeneratePollux(trace, opts)
		if err != nil {
			return err
		}
		write := func(w io.Writer) error { return workload.WritePollux(w, jobs) }
		switch {
		case f.count > 1:
			path := filepath.Join(f.output, "workload-"+strconv.FormatUint(opts.Seed, 10)+".csv")
			if err := writeFile(path, write); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "%s: %s\n", path, appMix(jobs))
		case f.output == "-":
			if err := write(stdout); err != nil {
				return err
			}
		default:
			if err := writeFile(f.output, write); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "%s: %s\n", f.output, appMix(jobs))
		}
	}
	return nil
}

// polluxConfigs computes the fixed configurations of every application the
// generator assigns.
func polluxConfigs(dir string, lo, hi float64) (map[string][]workload.PolluxConfig, error) {
	if !(lo < hi) {
		return nil, fmt.Errorf("--lo-util %v must be below --hi-util %v", lo, hi)
	}
	apps, err := perfmodel.LoadPolluxDir(dir)
	if err != nil {
		return nil, err
	}
	byName := map[string]*perfmodel.Profiled{}
	for _, a := range apps {
		byName[a.Name()] = a
	}
	out := map[string][]workload.PolluxConfig{}
	for _, name := range workload.PolluxGenApps() {
		a := byName[name]
		if a == nil {
			return nil, fmt.Errorf("%s: no profile of %s, which the generator assigns (want the Pollux artifact's traces/)", dir, name)
		}
		cs, err := a.Configurations(lo, hi)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out[name] = append(out[name], workload.PolluxConfig{Replicas: c.Replicas, Batch: c.Batch})
		}
	}
	return out, nil
}

// appMix summarises a workload as "N jobs (app n, ...)".
func appMix(jobs []workload.Job) string {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.App]++
	}
	names := make([]string, 0, len(n))
	for a := range n {
		names = append(names, a)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, a := range names {
		parts[i] = fmt.Sprintf("%s %d", a, n[a])
	}
	return fmt.Sprintf("%d jobs (%s)", len(jobs), strings.Join(parts, ", "))
}
