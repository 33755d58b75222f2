package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/replay"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// replayFlags are the flags of 'voda workload replay'.
type replayFlags struct {
	client      *clientOptions
	workload    string
	format      string
	profiles    string
	scaling     string
	gpuType     string
	inFlight    int
	timeout     time.Duration
	poll        time.Duration
	csv         bool
	compare     bool
	placer      string
	tick        time.Duration
	restartCost time.Duration
	quiet       bool
}

const replayLong = `Replay a workload against a running Voda server: a load and what-if tool.

Each job of the workload (the same files and formats as 'voda simulate
--workload', one file) is submitted through the REST API at its submission
time on the server's virtual clock, which the tool reads from the
scheduler's status (it measures, never assumes, how fast that clock runs),
with the settings the simulator would give it: its performance model
(vodascheduler/sim-model), worker range, requested workers, epochs and
priority. Submissions go one at a time by default (--max-in-flight), so
that jobs due together keep the workload's order; a server answering 429
or 503 is tried again a second later.

The tool then waits until every job has finished (at most --timeout of
wall time), reads them back and prints each job's completion time (JCT:
finish minus submission on the server's clock), the mean JCT and the
makespan; --csv prints the per-job table as CSV.

With --profiles DIR the jobs run as 'voda simulate --adaptive-batch' runs
them (the server needs 'voda server --profiles DIR' too): jobs of a
measured application follow the batch size the server advises.

--compare also runs the simulator in-process on the same workload with the
server's settings, as far as the simulator can share them (event-driven
cycles, the scheduler's algorithm and parameters, rate limit, nodes and
GPUs, and the start interval of a server running as fast as the measured
clock; --placer, --tick and --restart-cost must match the server's flags,
which the API does not show), and prints both and their relative
difference. docs/simulator.md, "Replaying against a server", lists what
still differs.`

const replayExample = `  # A server on a 16x4-GPU simulated cluster with the Pollux profiles, 100 times faster than real time
  voda server --sim-nodes sim=16x4 --profiles ../shared/traces/pollux/traces --algorithm Goodput --speed 100 &

  # Replay one Pollux workload against it and compare with the simulator
  voda workload replay --workload ../shared/traces/pollux/workloads/workload-1.csv \
    --profiles ../shared/traces/pollux/traces --compare`

func newWorkloadReplayCommand() *cobra.Command {
	f := &replayFlags{client: &clientOptions{}}
	cmd := &cobra.Command{
		Use:     "replay",
		Short:   "Submit a workload to a running server on its clock and report the jobs' completion times",
		Long:    replayLong,
		Example: replayExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.client.stderr = cmd.ErrOrStderr()
			return f.client.sent.ExplainUnauthorized(runReplay(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload CSV file (required; formats as voda simulate's)")
	fl.StringVar(&f.format, "format", "auto", "workload format: auto, pollux, voda or duration")
	fl.StringVar(&f.profiles, "profiles", "", "directory of measured job profiles, as given to the server's --profiles: jobs then run with adaptive batches")
	fl.StringVar(&f.scaling, "scaling", "amdahl", "performance model of the jobs of duration-only traces")
	fl.StringVar(&f.gpuType, "gpu-type", "", "GPU type whose scheduler runs the jobs (default: the server's only one)")
	fl.IntVar(&f.inFlight, "max-in-flight", replay.DefaultInFlight, "most submissions under way at once")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Hour, "most wall time to wait for every job to finish")
	fl.DurationVar(&f.poll, "poll", replay.DefaultPoll, "wall time between two reads of the server's jobs while waiting")
	fl.BoolVar(&f.csv, "csv", false, "print the per-job table as CSV (with --compare, the simulator's JCT beside the server's)")
	fl.BoolVar(&f.compare, "compare", false, "also run the simulator with the server's settings and print both and their difference")
	fl.StringVar(&f.placer, "placer", placement.DefaultName, "with --compare: the server's --placer")
	fl.DurationVar(&f.tick, "tick", 60*time.Second, "with --compare: the server's --tick")
	fl.DurationVar(&f.restartCost, "restart-cost", sim.DefaultRestartCost, "with --compare: the server's --restart-cost")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line")
	f.client.addFlags(fl, "voda config set-server")
	return cmd
}

func runReplay(ctx context.Context, stdout, stderr io.Writer, f *replayFlags) error {
	if f.workload == "" {
		return fmt.Errorf("--workload: required")
	}
	if f.inFlight < 1 {
		return fmt.Errorf("--max-in-flight: %d must be at least 1", f.inFlight)
	}
	models, err := perfmodel.Load(f.profiles)
	if err != nil {
		return fmt.Errorf("--profiles: %w", withDataHint(err))
	}
	wls, err := sim.LoadWorkloads(f.workload, f.format, workload.Options{Duration: workload.DurationOptions{App: f.scaling}})
	if err != nil {
		return withDataHint(err)
	}
	if len(wls) != 1 {
		return fmt.Errorf("--workload: %s holds %d workloads; replay one file at a time", f.workload, len(wls))
	}
	c, err := f.client.client()
	if err != nil {
		return err
	}
	sched, err := replay.Scheduler(ctx, c, f.gpuType)
	if err != nil {
		return err
	}
	opts := sim.Options{Models: models, AdaptiveBatch: f.profiles != "", Tick: f.tick, RestartCost: restartOrNone(f.restartCost)}
	if opts, err = replay.SimOptions(sched, 0, opts); err != nil {
		return err
	}
	settings, err := sim.Settings(wls[0].Jobs, opts)
	if err != nil {
		return err
	}
	var progress *report.Progress
	cfg := replay.Config{Client: c, GPUType: sched.GPUType, Jobs: settings, InFlight: f.inFlight, Poll: f.poll}
	if !f.quiet {
		progress = report.NewProgress(stderr, "replaying", float64(len(settings)))
		cfg.Progress = func(s replay.Status) { progress.Set(float64(s.Done)) }
	}
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	res, err := replay.Run(rctx, cfg)
	if progress != nil {
		progress.Finish()
	}
	if err != nil {
		if res != nil && rctx.Err() != nil && ctx.Err() == nil {
			done := report.Summarize(res.Run).Completed
			return fmt.Errorf("timed out after %s (--timeout) with %d of %d jobs completed", f.timeout, done, len(settings))
		}
		return err
	}
	var simRun *report.Run
	if f.compare {
		if opts, err = replay.SimOptions(res.Scheduler, res.ClockRate, opts); err != nil {
			return err
		}
		if simRun, err = replay.Simulate(ctx, wls[0], res.Scheduler, f.placer, opts); err != nil {
			return err
		}
	}
	return writeReplay(stdout, f.csv, wls[0].Name, res, simRun)
}

// writeReplay prints the per-job table (text or CSV) and the summary of
// the server's run and, if sim is not nil, the simulator's beside it.
func writeReplay(w io.Writer, asCSV bool, name string, res *replay.Result, simRun *report.Run) error {
	var simJobs map[string]report.JobResult
	if simRun != nil {
		simJobs = map[string]report.JobResult{}
		for _, j := range simRun.Jobs {
			simJobs[j.Name] = j
		}
	}
	jct := func(j report.JobResult) string {
		if !j.Done {
			return ""
		}
		return strconv.FormatFloat(j.End-j.Submit, 'f', 1, 64)
	}
	if asCSV {
		cw := csv.NewWriter(w)
		header := []string{"name", "app", "server_name", "submit_s", "start_s", "end_s", "jct_s"}
		if simRun != nil {
			header = append(header, "sim_jct_s")
		}
		if err := cw.Write(header); err != nil {
			return err
		}
		for _, j := range res.Run.Jobs {
			row := []string{j.Name, j.App, res.Names[j.Name], secs(j.Submit), secs(j.Start), secs(j.End), jct(j)}
			if simRun != nil {
				row = append(row, jct(simJobs[j.Name]))
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "%-24s %-12s %12s", "JOB", "APP", "SERVER JCT")
	if simRun != nil {
		fmt.Fprintf(w, " %12s", "SIM JCT")
	}
	fmt.Fprintln(w)
	for _, j := range res.Run.Jobs {
		fmt.Fprintf(w, "%-24s %-12s %12s", j.Name, j.App, jct(j))
		if simRun != nil {
			fmt.Fprintf(w, " %12s", jct(simJobs[j.Name]))
		}
		fmt.Fprintln(w)
	}
	srv := report.Summarize(res.Run)
	fmt.Fprintf(w, "\nworkload %s on %s (%s, %d GPUs on %d nodes, clock %.0fx real time)\n", name, res.Scheduler.GPUType, res.Scheduler.Algorithm, res.Scheduler.GPUs, res.Scheduler.Nodes, res.ClockRate)
	fmt.Fprintf(w, "%-10s %10s %14s %14s\n", "", "completed", "mean JCT (s)", "makespan (s)")
	fmt.Fprintf(w, "%-10s %10d %14.1f %14.1f\n", "server", srv.Completed, srv.AvgJCT, srv.Makespan)
	if simRun != nil {
		s := report.Summarize(simRun)
		fmt.Fprintf(w, "%-10s %10d %14.1f %14.1f\n", "simulator", s.Completed, s.AvgJCT, s.Makespan)
		fmt.Fprintf(w, "server vs simulator: mean JCT %+.1f%%, makespan %+.1f%%\n", relDiff(srv.AvgJCT, s.AvgJCT), relDiff(srv.Makespan, s.Makespan))
	}
	return nil
}

func secs(v float64) string {
	if v < 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// relDiff is a over b, less one, in percent (NaN when b is 0).
func relDiff(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return (a/b - 1) * 100
}
