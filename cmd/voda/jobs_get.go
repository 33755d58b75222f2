package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

func newGetCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List jobs, schedulers, algorithms or teams of a Voda server",
		Long: `List the jobs, the per-GPU-type schedulers, the scheduling algorithms or the
teams' quotas of a Voda server, as a table or, with -o, as JSON, YAML or
bare names.`,
		Example: `  voda get jobs
  voda get jobs --live -o wide
  voda get schedulers
  voda get algorithms
  voda get teams`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	cmd.AddCommand(newGetJobsCommand(o), newGetSchedulersCommand(o), newGetAlgorithmsCommand(o), newGetTeamsCommand(o))
	return cmd
}

type getJobsFlags struct {
	output        string
	gpuType       string
	status        string
	live          bool
	namespace     string
	allNamespaces bool
	chunkSize     int
}

func newGetJobsCommand(o *clientOptions) *cobra.Command {
	f := &getJobsFlags{}
	cmd := &cobra.Command{
		Use:     "jobs [NAME...]",
		Aliases: []string{"job"},
		Short:   "List training jobs",
		Long: `List training jobs in submission order, or the jobs named.

The table shows, as the original Voda did, each job's status, its current
number of workers (pods, each of the job's GPUs per worker: one GPU unless
its manifest asks for more), the scheduling algorithm of its GPU type and
how long it has waited without GPUs, run with GPUs and existed in all.
-o wide adds the GPU type, the GPUs the job holds (workers x GPUs per
worker), its GPUs per worker, priority, worker range, the position of a waiting
job in the queue, its estimated start, the progress of its training, the
reason for its status, if any (e.g. Unschedulable: it needs more GPUs than
its GPU type has in all), and its namespace. A server with authentication
lists only the jobs the caller may see.

A job being deleted shows its status followed by ",Deleting" until the
scheduler has halted it.`,
		Example: `  voda get jobs
  NAME                              STATUS    WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL
  mnist-elastic-20250601-100000     Running   1         ElasticFIFO   0s        28s       28s

  # Unfinished jobs of one GPU type, with queue positions and estimates
  voda get jobs --live --gpu-type nvidia-tesla-v100 -o wide

  # One job as YAML
  voda get job mnist-elastic-20250601-100000 -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error { return runGetJobs(cmd, o, f, args) },
	}
	fl := cmd.Flags()
	addOutputFlag(cmd, &f.output, outWide, outJSON, outYAML, outName)
	fl.StringVar(&f.gpuType, "gpu-type", "", "only the jobs of this GPU type")
	fl.StringVar(&f.status, "status", "", "only the jobs in this status: "+orList(jobStatuses))
	fl.BoolVar(&f.live, "live", false, "only the jobs that have not finished")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "only the jobs of this namespace (default: those of every namespace the caller may see; as kubectl voda, the kubeconfig context's namespace)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "the jobs of every namespace the caller may see (the default of voda; as kubectl voda, instead of the context's namespace)")
	fl.IntVar(&f.chunkSize, "chunk-size", 0, fmt.Sprintf("jobs per request of the list, which is read a page at a time, as kubectl's --chunk-size: 1 to %d (default: the server's, %d)", api.MaxListLimit, api.DefaultListLimit))
	return cmd
}

func runGetJobs(cmd *cobra.Command, o *clientOptions, f *getJobsFlags, names []string) error {
	if err := checkOutput(&f.output, outWide, outJSON, outYAML, outName); err != nil {
		return err
	}
	if len(names) > 0 && (f.gpuType != "" || f.status != "" || f.live) {
		return errors.New("--gpu-type, --status and --live filter the list of all jobs; they cannot be combined with job names")
	}
	if f.chunkSize < 0 || f.chunkSize > api.MaxListLimit {
		return fmt.Errorf("--chunk-size: %d is not from 1 to %d (0: the server's default)", f.chunkSize, api.MaxListLimit)
	}
	status, err := canonicalStatus(f.status)
	if err != nil {
		return err
	}
	ns := f.namespace
	switch {
	case ns != "" && f.allNamespaces:
		return errors.New("--namespace and --all-namespaces cannot be combined")
	case ns == "" && !f.allNamespaces && len(names) == 0:
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var jobs []api.Job
	var errs []error
	if len(names) == 0 {
		jobs, err = c.ListJobs(ctx, client.ListOptions{GPUType: f.gpuType, Status: status, Live: f.live, Namespace: ns, PageSize: f.chunkSize})
	} else {
		jobs, errs, err = getEach(ctx, "job", names, c.GetJob)
	}
	if err != nil {
		return err
	}
	if err := printGetJobs(cmd, f.output, names, jobs); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// printGetJobs writes the jobs 'get jobs' found, for the names asked
// for (none for all jobs), in the output format.
func printGetJobs(cmd *cobra.Command, output string, names []string, jobs []api.Job) error {
	out := cmd.OutOrStdout()
	switch output {
	case outJSON, outYAML:
		if len(jobs) == 0 && len(names) > 0 {
			return nil // every job named failed; an empty list would hide it
		}
		return printJobs(out, output, jobs, len(names) == 1)
	case outName:
		for _, j := range jobs {
			fmt.Fprintln(out, j.Name)
		}
	default:
		if len(jobs) == 0 && len(names) == 0 {
			fmt.Fprintln(cmd.ErrOrStderr(), "No jobs found.")
		}
		if len(jobs) > 0 {
			now, _ := clockFrom(cmd.Context())
			return printJobTable(out, jobs, output == outWide, now)
		}
	}
	return nil
}

// getEach gets each named object. A connection error stops it; other
// errors, one per name, are returned with the objects that were found,
// so that those are still shown.
func getEach[T any](ctx context.Context, kind string, names []string, get func(context.Context, string) (T, error)) ([]T, []error, error) {
	var found []T
	var errs []error
	for _, name := range names {
		v, err := get(ctx, name)
		var ce *client.ConnectionError
		if errors.As(err, &ce) {
			return nil, nil, err
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
			continue
		}
		found = append(found, v)
	}
	return found, errs, nil
}

// canonicalStatus spells a --status value as the API does, whatever its
// case.
func canonicalStatus(s string) (api.Status, error) {
	if s == "" {
		return "", nil
	}
	for _, st := range api.Statuses {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown job status %q (--status): use %s", s, orList(jobStatuses))
}

// printJobTable writes the original's job table, with more columns when
// wide.
func printJobTable(w io.Writer, jobs []api.Job, wide bool, now time.Time) error {
	tw := newTable(w)
	header := "NAME\tSTATUS\tWORKERS\tSCHEDULER\tWAITING\tRUNNING\tTOTAL"
	if wide {
		header += "\tGPU-TYPE\tGPUS\tGPUS/WORKER\tPRIORITY\tMIN\tMAX\tQUEUE\tEST-START\tPROGRESS\tREASON\tNAMESPACE"
	}
	fmt.Fprintln(tw, header)
	for _, j := range jobs {
		row := []string{
			j.Name, jobStatus(j), strconv.Itoa(j.Workers), dash(j.Scheduler),
			humanSeconds(j.WaitingSeconds), humanSeconds(j.RunningSeconds), humanSeconds(j.TotalSeconds),
		}
		if wide {
			queue, start := "-", "-"
			if j.QueuePosition > 0 {
				queue = strconv.Itoa(j.QueuePosition)
			}
			if j.EstimatedStart != nil {
				start = relative(*j.EstimatedStart, serverNow(j, now))
			} else if j.Status == api.StatusWaiting {
				start = "unknown"
			}
			row = append(row, dash(j.GPUType), strconv.Itoa(gpusHeld(j)), strconv.Itoa(perWorker(j)), strconv.Itoa(j.Priority), strconv.Itoa(j.MinWorkers),
				strconv.Itoa(j.MaxWorkers), queue, start, percent(j.Progress), dash(j.Reason), dash(j.Namespace))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// perWorker is a job's GPUs per worker (G): 1 from a server that does not
// say, one older than workers of several GPUs.
func perWorker(j api.Job) int { return max(j.GPUsPerWorker, 1) }

// gpusHeld is the GPUs a job holds now. A server that does not say G
// (older than workers of several GPUs) does not say them either: its
// workers held one GPU each.
func gpusHeld(j api.Job) int {
	if j.GPUsPerWorker == 0 {
		return j.Workers
	}
	return j.GPUs
}

// serverNow is the server's time when it answered with a live job: the
// job's submission plus its total time so far. The server's clock can run
// ahead of the wall clock (a simulated cluster with --speed), so ages and
// estimates are measured on it. A finished job's total stops at its end;
// then fallback it is.
func serverNow(j api.Job, fallback time.Time) time.Time {
	if j.FinishTime != nil || j.SubmitTime.IsZero() {
		return fallback
	}
	return j.SubmitTime.Add(time.Duration(j.TotalSeconds * float64(time.Second)))
}
