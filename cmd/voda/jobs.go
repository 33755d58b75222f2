package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// jobStatuses are the statuses a job goes through, as the API spells them.
var jobStatuses = func() []string {
	out := make([]string, len(api.Statuses))
	for i, st := range api.Statuses {
		out[i] = string(st)
	}
	return out
}()

// finished reports whether a job's status is final.
func finished(status api.Status) bool { return status.Done() }

// ---- create ----

type createFlags struct {
	files     []string
	recursive bool
	output    string
	namespace string
}

func newCreateCommand(o *clientOptions) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR [-f FILE|DIR...] [-R]",
		Short: "Submit training jobs from manifests",
		Long: `Submit elastic training jobs to a Voda server.

A manifest is a Kubeflow MPIJob or PyTorchJob in YAML or JSON, as for the
original Voda: the launcher's environment sets MIN_NUM_PROC (or MIN_NP),
MAX_NUM_PROC (or MAX_NP), NUM_PROC (or NP), EPOCHS and JOB_PRIORITY, and the
worker template's nodeSelector vodascheduler/accelerator names the GPU type.
The annotations vodascheduler/min-workers, max-workers, workers, epochs,
priority and gpu-type may say the same for any kind (see docs/job-spec.md).
A file may hold several YAML documents separated by '---'; each is a job.
-f DIR takes every .json, .yaml and .yml file in the directory, in name
order; with -R, those of its subdirectories too.

The server makes every name unique by appending the submission time, so the
name printed is the one to use with 'voda get', 'voda describe' and
'voda delete'.

All or nothing: every file is read and every document validated by the
server (a dry run, so the server's GPU types and limits apply) before any
job is created. When one is invalid, each invalid document is reported with
its file, document number, field and reason, nothing is created and the
command exits non-zero; fix them and run it again. Only a failure while
creating (the server failing or going away midway) can leave some created:
they are printed, and the command exits non-zero. A directory is no
exception: kubectl apply -f DIR goes on past a failing file because applying
again is harmless, whereas creating again would duplicate the jobs.

A field the job's kind does not know, such as a misspelt one, is accepted
and ignored, as Kubernetes ignores it; the server warns of it and the
command prints the warning on standard error, as kubectl does:
Warning: unknown field "spec.slotsPerWorkr".`,
		Example: `  # Submit a job
  voda create -f mnist-elastic.yaml
  Training job created: mnist-elastic-20250601-100000

  # Submit two files, then a manifest from standard input
  voda create -f bert.yaml -f resnet.yaml
  cat job.json | voda create -f -

  # Every manifest in a directory, and in its subdirectories
  voda create -f jobs/ -R

  # Keep the new name for a script
  name=$(voda create -f mnist-elastic.yaml -o name)`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%s takes its manifests with -f: %s -f %s", cmd.CommandPath(), cmd.CommandPath(), strings.Join(args, " -f "))
			}
			if len(f.files) == 0 {
				return fmt.Errorf("missing the manifests: %s -f FILE (an MPIJob or PyTorchJob in YAML or JSON; -f DIR takes a directory's, -f - standard input)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runCreate(cmd, o, f) },
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, or directory of .json, .yaml and .yml files, to submit; '-' for standard input (repeatable)")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "with -f DIR, the manifests of its subdirectories too")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace of the manifests that name none (default: the server's --namespace; as kubectl voda, the kubeconfig context's namespace)")
	addOutputFlag(cmd, &f.output, outJSON, outYAML, outName)
	return cmd
}

func runCreate(cmd *cobra.Command, o *clientOptions, f *createFlags) error {
	if err := checkOutput(&f.output, outJSON, outYAML, outName); err != nil {
		return err
	}
	manifests, err := readManifests(cmd.InOrStdin(), f.files, f.recursive)
	if err != nil {
		return err
	}
	ns := f.namespace
	if ns == "" {
		if ns, err = o.namespace(); err != nil {
			return err
		}
	}
	for i := range manifests {
		manifests[i].body = withNamespace(manifests[i].body, ns)
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	if err := validateManifests(cmd.Context(), c, manifests, o.warn); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	var created []api.Job
	var errs []error
	for _, m := range manifests {
		job, err := c.CreateJob(cmd.Context(), m.body)
		var ce *client.ConnectionError
		if errors.As(err, &ce) {
			return err // the other submissions would fail the same way
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.source, err))
			continue
		}
		created = append(created, job)
		switch f.output {
		case outTable:
			fmt.Fprintf(out, "Training job created: %s\n", job.Name)
		case outName:
			fmt.Fprintln(out, job.Name)
		}
	}
	if (f.output == outJSON || f.output == outYAML) && len(created) > 0 {
		if err := printJobs(out, f.output, created, len(manifests) == 1); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// validateManifests has the server validate every manifest (a dry run)
// and reports every invalid one, so that a run creates all jobs or none.
// The dry runs' warnings go to warn, each after its manifest's source,
// only when no job is to be created: otherwise creating the jobs repeats
// them.
func validateManifests(ctx context.Context, c *client.Client, manifests []manifest, warn func(string)) (err error) {
	var warnings []string
	defer func() {
		if err != nil {
			for _, w := range warnings {
				warn(w)
			}
		}
	}()
	var errs []error
	for _, m := range manifests {
		vc := c.WithWarningHandler(func(text string) { warnings = append(warnings, m.source+": "+text) })
		_, err := vc.ValidateJob(ctx, m.body)
		var ce *client.ConnectionError
		if errors.As(err, &ce) || errors.Is(err, client.ErrNoDryRun) {
			return err // nothing more can be checked
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.source, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s invalid; no job was created:\n%w",
		len(errs), len(manifests), plural(len(manifests), "manifest is", "manifests are"), errors.Join(errs...))
}

// printJobs writes jobs as JSON or YAML: the job itself when one was
// asked for by name, else an api.JobList.
func printJobs(w io.Writer, format string, jobs []api.Job, single bool) error {
	if single && len(jobs) == 1 {
		return printObject(w, format, jobs[0])
	}
	if jobs == nil {
		jobs = []api.Job{}
	}
	return printObject(w, format, api.JobList{Items: jobs})
}

// ---- get ----

func newGetCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List jobs, schedulers or algorithms of a Voda server",
		Long: `List the jobs, the per-GPU-type schedulers or the scheduling algorithms of a
Voda server, as a table or, with -o, as JSON, YAML or bare names.`,
		Example: `  voda get jobs
  voda get jobs --live -o wide
  voda get schedulers
  voda get algorithms`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	cmd.AddCommand(newGetJobsCommand(o), newGetSchedulersCommand(o), newGetAlgorithmsCommand(o))
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
number of workers (one GPU each), the scheduling algorithm of its GPU type
and how long it has waited without GPUs, run with GPUs and existed in all.
-o wide adds the GPU type, priority, worker range, the position of a waiting
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
		if ns, err = o.namespace(); err != nil {
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
		header += "\tGPU-TYPE\tPRIORITY\tMIN\tMAX\tQUEUE\tEST-START\tPROGRESS\tREASON\tNAMESPACE"
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
			row = append(row, dash(j.GPUType), strconv.Itoa(j.Priority), strconv.Itoa(j.MinWorkers),
				strconv.Itoa(j.MaxWorkers), queue, start, percent(j.Progress), dash(j.Reason), dash(j.Namespace))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
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

// describeNow is the time a job's description measures ages from: the
// server's time, from the job itself when it is live, else from its GPU
// type's scheduler; the local clock when neither says.
func describeNow(ctx context.Context, c *client.Client, j api.Job, local time.Time) time.Time {
	if j.FinishTime == nil {
		return serverNow(j, local)
	}
	if s, err := c.GetScheduler(ctx, j.GPUType); err == nil && s.Now != nil {
		return *s.Now
	}
	return local
}

// jobStatus is a job's status as tables show it: a job being deleted is
// marked until it is halted, the way kubectl marks a cordoned node.
func jobStatus(j api.Job) string {
	if j.DeleteRequested && !finished(j.Status) {
		return string(j.Status) + ",Deleting"
	}
	return string(j.Status)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// percent formats a fraction as a whole percentage, never rounding an
// unfinished job up to 100%.
func percent(f float64) string {
	p := f * 100
	if p > 99 && p < 100 {
		return "99%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// ---- describe ----

func newDescribeCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "describe",
		Short:   "Show the details of a training job",
		Example: `  voda describe job mnist-elastic-20250601-100000`,
		Args:    cobra.ArbitraryArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	cmd.AddCommand(newDescribeJobCommand(o))
	return cmd
}

func newDescribeJobCommand(o *clientOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "job NAME...",
		Aliases: []string{"jobs"},
		Short:   "Show the details of training jobs",
		Long: `Show everything the server knows about a training job: the reason for its
status where there is one (Reason and Message lines, e.g. Unschedulable when
it needs more GPUs than its GPU type has in all), its worker range and
priority, its times (submitted, first started, finished; waiting, running,
total), the GPU-seconds it attained, its restarts, progress and estimated
remaining time, and where its workers run. For a waiting job, its position
in the queue and when the scheduler expects to start it.`,
		Example: `  voda describe job mnist-elastic-20250601-100000
  voda describe job mnist-elastic-20250601-100000 -o json`,
		Args: jobNamesOperand.check,
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkOutput(&output, outJSON, outYAML); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			now, loc := clockFrom(ctx)
			out := cmd.OutOrStdout()
			var jobs []api.Job
			var errs []error
			for _, name := range names {
				job, err := c.GetJob(ctx, name)
				var ce *client.ConnectionError
				if errors.As(err, &ce) {
					return err
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("job %s: %w", name, err))
					continue
				}
				if output == outTable {
					if len(jobs) > 0 {
						fmt.Fprintln(out)
					}
					describeJob(out, job, describeNow(ctx, c, job, now), loc)
				}
				jobs = append(jobs, job)
			}
			if output != outTable && len(jobs) > 0 {
				if err := printJobs(out, output, jobs, len(names) == 1); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	addOutputFlag(cmd, &output, outJSON, outYAML)
	return cmd
}

// describeJob writes a job for a person, one "Label: value" a line.
func describeJob(w io.Writer, j api.Job, now time.Time, loc *time.Location) {
	var d describer
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return fmt.Sprintf("%s (%s)", t.In(loc).Format(time.RFC3339), relative(*t, now))
	}
	d.add("Name", j.Name)
	d.add("Namespace", dash(j.Namespace))
	d.add("Kind", dash(j.Kind))
	d.add("GPU type", dash(j.GPUType))
	d.add("Status", string(j.Status))
	if j.Reason != "" {
		d.add("Reason", j.Reason)
	}
	if j.Message != "" {
		d.add("Message", j.Message)
	}
	if j.DeleteRequested && !finished(j.Status) {
		d.add("Deletion requested", "yes; the scheduler is halting the job")
	}
	d.add("Workers", fmt.Sprintf("%d (min %d, max %d, requested %d)", j.Workers, j.MinWorkers, j.MaxWorkers, j.RequestedWorkers))
	d.add("Priority", strconv.Itoa(j.Priority))
	d.add("Priority queue", strconv.Itoa(j.PriorityQueue))
	d.add("Epochs", epochs(j.Epochs))
	if j.Application != "" {
		d.add("Application", j.Application)
	}
	if j.ProgressLog != "" {
		d.add("Progress from log", j.ProgressLog)
	}
	d.add("Scheduler", dash(j.Scheduler))
	submit := j.SubmitTime
	d.add("Submitted", at(&submit))
	d.add("First started", at(j.FirstStart))
	d.add("Finished", at(j.FinishTime))
	d.add("Waiting", humanSeconds(j.WaitingSeconds))
	d.add("Running", humanSeconds(j.RunningSeconds))
	d.add("Total", humanSeconds(j.TotalSeconds))
	d.add("Attained service", fmt.Sprintf("%.0f GPU-seconds", j.AttainedService))
	d.add("Restarts", strconv.Itoa(j.Restarts))
	d.add("Progress", fmt.Sprintf("%.1f%%", j.Progress*100))
	describeMeasured(&d, j, now)
	describeOutlook(&d, j, at)
	describePlacement(&d, j.Placement)
	describeAllocations(&d, j.Allocations, loc)
	d.write(w)
}

// describedAllocations is how many of a job's newest allocation changes
// describe shows; the JSON output has them all.
const describedAllocations = 10

// describeAllocations adds the job's newest allocation changes, oldest
// first.
func describeAllocations(d *describer, h []api.Allocation, loc *time.Location) {
	if len(h) == 0 {
		return
	}
	note := ""
	if len(h) > describedAllocations {
		note = fmt.Sprintf("the newest %d of %d (-o json has all)", describedAllocations, len(h))
		h = h[len(h)-describedAllocations:]
	}
	d.add("Allocations", note)
	for _, a := range h {
		what := "no GPUs"
		if a.Workers > 0 {
			nodes := make([]string, 0, len(a.Placement))
			for _, n := range slices.Sorted(maps.Keys(a.Placement)) {
				nodes = append(nodes, fmt.Sprintf("%s×%d", n, a.Placement[n]))
			}
			what = fmt.Sprintf("%d %s on %s", a.Workers, plural(a.Workers, "worker", "workers"), strings.Join(nodes, ", "))
		}
		d.sub(a.Time.In(loc).Format(time.RFC3339), what)
	}
}

// describeMeasured adds what the job's progress reports measured: its
// last report, its speed on each placement, the scheduler's speedup curve
// and the restart cost.
func describeMeasured(d *describer, j api.Job, now time.Time) {
	m := j.Measured
	if m == nil {
		return
	}
	of := ""
	if m.TotalEpochs > 0 {
		of = " of " + strconv.FormatFloat(m.TotalEpochs, 'f', -1, 64)
	}
	d.add("Last report", fmt.Sprintf("%s ago: epoch %.2f%s, %d steps, generation %s", humanSeconds(max(now.Sub(m.LastReport).Seconds(), 0)), m.Epoch, of, m.Steps, m.Generation))
	if len(m.Throughput) > 0 {
		d.add("Throughput", "")
	}
	for _, tp := range m.Throughput {
		where := fmt.Sprintf("%d %s", tp.Workers, plural(tp.Workers, "worker", "workers"))
		if tp.Nodes > 0 {
			where += fmt.Sprintf(", %d %s", tp.Nodes, plural(tp.Nodes, "node", "nodes"))
		}
		spread := ""
		if tp.RelativeError > 0 {
			spread = fmt.Sprintf(" ±%.0f%%", tp.RelativeError*100)
		}
		d.sub(where, fmt.Sprintf("%.2f epochs/h%s, measured over %s", tp.EpochsPerHour, spread, humanSeconds(tp.Seconds)))
	}
	if n := len(j.Speedup); n > 1 {
		parts := make([]string, 0, min(n-1, 8))
		for k := 1; k < n && k <= 8; k++ {
			parts = append(parts, fmt.Sprintf("%d:%.2f", k, j.Speedup[k]))
		}
		more := ""
		if n-1 > 8 {
			more = fmt.Sprintf(" ... %d:%.2f", n-1, j.Speedup[n-1])
		}
		d.add("Speedup", strings.Join(parts, " ")+more)
	}
	if m.RestartSeconds > 0 {
		d.add("Restart cost", humanSeconds(m.RestartSeconds)+" (measured)")
	}
}

// describeOutlook adds what is expected of a job: its remaining time
// and, while it waits, its queue position and estimated start.
func describeOutlook(d *describer, j api.Job, at func(*time.Time) string) {
	switch {
	case j.RemainingSeconds != nil:
		d.add("Remaining", fmt.Sprintf("about %s on one GPU", humanSeconds(*j.RemainingSeconds)))
		if j.EstimatedFinish != nil {
			give := ""
			if j.EstimatedFinishErrorSeconds > 0 {
				give = " ± " + humanSeconds(j.EstimatedFinishErrorSeconds)
			}
			d.add("Estimated finish", at(j.EstimatedFinish)+give)
		}
	case !finished(j.Status):
		d.add("Remaining", "unknown")
	}
	if j.Status == api.StatusWaiting || j.QueuePosition > 0 {
		pos := "unknown"
		if j.QueuePosition > 0 {
			pos = strconv.Itoa(j.QueuePosition)
		}
		d.add("Queue position", pos)
		start := "unknown"
		if j.EstimatedStart != nil {
			start = at(j.EstimatedStart)
		}
		d.add("Estimated start", start)
	}
}

// describePlacement adds the workers of a job on each node, by node name.
func describePlacement(d *describer, placement map[string]int) {
	if len(placement) == 0 {
		d.add("Placement", "none")
		return
	}
	d.add("Placement", "")
	for _, n := range slices.Sorted(maps.Keys(placement)) {
		d.sub(n, fmt.Sprintf("%d %s", placement[n], plural(placement[n], "worker", "workers")))
	}
}

// epochs shows a job's epochs; 0 means the manifest did not say.
func epochs(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return strconv.Itoa(n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// describer aligns "Label:  value" lines; sub lines are indented under
// the line before.
type describer struct {
	lines []describeLine
}

type describeLine struct {
	label, value string
	sub          bool
}

func (d *describer) add(label, value string) {
	d.lines = append(d.lines, describeLine{label: label, value: value})
}

func (d *describer) sub(label, value string) {
	d.lines = append(d.lines, describeLine{label: label, value: value, sub: true})
}

func (d *describer) write(w io.Writer) {
	// Main lines align together; sub lines within their run.
	width := 0
	subWidth := make([]int, len(d.lines))
	for i, l := range d.lines {
		if !l.sub {
			width = max(width, len(l.label)+1)
			continue
		}
		j := i
		for j < len(d.lines) && d.lines[j].sub {
			j++
		}
		if i == 0 || !d.lines[i-1].sub {
			run := 0
			for _, m := range d.lines[i:j] {
				run = max(run, len(m.label)+1)
			}
			for k := i; k < j; k++ {
				subWidth[k] = run
			}
		}
	}
	var b bytes.Buffer
	for i, l := range d.lines {
		var line string
		if l.sub {
			line = fmt.Sprintf("  %-*s  %s", subWidth[i], l.label+":", l.value)
		} else {
			line = fmt.Sprintf("%-*s  %s", width, l.label+":", l.value)
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, _ = w.Write(b.Bytes())
}

// ---- delete ----

func newDeleteCommand(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete [job] NAME...",
		Short: "Delete training jobs",
		Long: `Delete training jobs, as kubectl deletes objects. The scheduler halts a live
job (its workers stop and free their GPUs) and the job ends Canceled; it
stays listed by 'voda get jobs' until it is deleted again or the server's
retention removes it. Deleting a job again while it is being halted
succeeds the same way, so a command that is run twice, or a script that
retries, does not fail.

Deleting a finished job (Completed, Failed or Canceled) removes its record
from the server: the message says what it was, "(was Completed; record
removed)", and the job is then not found.

'voda delete job NAME' is accepted as well, like kubectl.`,
		Example: `  voda delete mnist-elastic-20250601-100000
  Training job deleted: mnist-elastic-20250601-100000

  # Every waiting job
  voda delete $(voda get jobs --status Waiting -o name)

  # The records of every completed job
  voda delete $(voda get jobs --status Completed -o name)`,
		Args: jobNamesOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if names[0] == "job" || names[0] == "jobs" {
				// The server's names end in a timestamp, so no job is
				// named "job".
				names = names[1:]
			}
			if err := jobNamesOperand.check(cmd, names); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range names {
				job, err := c.DeleteJob(cmd.Context(), name)
				var ce *client.ConnectionError
				if errors.As(err, &ce) {
					return err
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
					continue
				}
				removed := ""
				if client.Removed(job) {
					removed = " (was " + string(job.Status) + "; record removed)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Training job deleted: %s%s\n", job.Name, removed)
			}
			return errors.Join(errs...)
		},
	}
}

// ---- set ----

func newSetCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change a scheduler's algorithm or rate limit, or a job's priority",
		Long: `Change, while the server runs, the scheduling algorithm or the rate limit of a
GPU type's scheduler, or the priority of a job. The scheduler applies the
change at its next cycle.`,
		Example: `  voda set algorithm ElasticTiresias --gpu-type nvidia-tesla-v100
  voda set ratelimit 10 --gpu-type nvidia-tesla-v100
  voda set priority mnist-elastic-20250601-100000 1`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	cmd.AddCommand(newSetAlgorithmCommand(o), newSetRateLimitCommand(o), newSetPriorityCommand(o))
	return cmd
}

func newSetPriorityCommand(o *clientOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "priority JOB PRIORITY",
		Short: "Change a job's priority",
		Long: `Change a job's priority, an integer where 0 is the highest (the original's
JOB_PRIORITY). Algorithms that order jobs by priority use it from their next
cycle. A finished job's priority cannot be changed.

PRIORITY is taken as written, a negative number too (no '--' needed); the
server says which values it accepts. Flags may come before or after JOB
and PRIORITY.`,
		Example: `  voda set priority mnist-elastic-20250601-100000 0
  Priority of mnist-elastic-20250601-100000 set to 0`,
		Args: cobra.ArbitraryArgs, // checked by priorityArgs
		RunE: func(cmd *cobra.Command, args []string) error {
			name, prio, help, err := priorityArgs(cmd, args)
			if err != nil {
				return err
			}
			if help {
				return cmd.Help()
			}
			if err := checkOutput(&output, outJSON, outYAML); err != nil {
				return err
			}
			p, err := strconv.Atoi(prio)
			if err != nil {
				return fmt.Errorf("priority %q is not an integer", prio)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			job, err := c.SetPriority(cmd.Context(), name, p)
			if err != nil {
				return err
			}
			if output != outTable {
				return printObject(cmd.OutOrStdout(), output, job)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Priority of %s set to %d\n", job.Name, job.Priority)
			return nil
		},
	}
	addOutputFlag(cmd, &output, outJSON, outYAML)
	// Flag parsing stops at JOB, so that a PRIORITY of -1 is not taken
	// for a flag; priorityArgs parses the flags after PRIORITY.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// priorityArgs finds JOB and PRIORITY among `set priority`'s arguments,
// which cobra leaves unparsed from JOB on, and parses the flags between
// and after them: a negative number is an argument, not a flag; after
// "--" everything is. help reports --help among them.
func priorityArgs(cmd *cobra.Command, args []string) (name, priority string, help bool, err error) {
	flags := cmd.Flags()
	var pos []string
	for rest := args; len(rest) > 0; {
		switch {
		case rest[0] == "--":
			pos, rest = append(pos, rest[1:]...), nil
		case !strings.HasPrefix(rest[0], "-") || negativeNumber.MatchString(rest[0]):
			pos, rest = append(pos, rest[0]), rest[1:]
		default:
			if err := flags.Parse(rest); err != nil {
				return "", "", false, err
			}
			rest = flags.Args() // from the first argument on
			if flags.ArgsLenAtDash() == 0 {
				pos, rest = append(pos, rest...), nil
			}
		}
	}
	if help, _ = flags.GetBool("help"); help {
		return "", "", true, nil
	}
	if err := priorityOperand.check(cmd, pos); err != nil {
		return "", "", false, err
	}
	return pos[0], pos[1], false, nil
}

// negativeNumber is an argument that looks like a flag but is a number.
var negativeNumber = regexp.MustCompile(`^-[0-9.]`)
