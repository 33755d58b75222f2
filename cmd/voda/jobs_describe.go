package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

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
it needs more GPUs than its GPU type has in all), its workers (pods) and
worker range, its GPUs per worker and the GPUs it holds, its priority, its times (submitted, first started, finished; waiting, running,
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
	d.add("Kind", dash(string(j.Kind)))
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
	g := perWorker(j)
	d.add("GPUs per worker", strconv.Itoa(g))
	d.add("GPUs", fmt.Sprintf("%d (%d %s × %d)", gpusHeld(j), j.Workers, plural(j.Workers, "worker", "workers"), g))
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
	describePlacement(&d, j.Placement, g)
	describeAllocations(&d, j.Allocations, g, loc)
	d.write(w)
}

// describedAllocations is how many of a job's newest allocation changes
// describe shows; the JSON output has them all.
const describedAllocations = 10

// describeAllocations adds the job's newest allocation changes, oldest
// first; g is the job's GPUs per worker.
func describeAllocations(d *describer, h []api.Allocation, g int, loc *time.Location) {
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
			what = fmt.Sprintf("%s on %s", workersOf(a.Workers, g), strings.Join(nodes, ", "))
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
		if tp.Pods > 0 {
			// Workers of several GPUs: a report counts processes, one a GPU.
			where = fmt.Sprintf("%d GPUs in %d %s", tp.Workers, tp.Pods, plural(tp.Pods, "pod", "pods"))
		}
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

// describePlacement adds the workers of a job on each node, by node name;
// g is the job's GPUs per worker.
func describePlacement(d *describer, placement map[string]int, g int) {
	if len(placement) == 0 {
		d.add("Placement", "none")
		return
	}
	d.add("Placement", "")
	for _, n := range slices.Sorted(maps.Keys(placement)) {
		d.sub(n, workersOf(placement[n], g))
	}
}

// workersOf says n workers of g GPUs each: "2 workers", and the GPUs they
// hold when a worker holds several ("2 workers (8 GPUs)").
func workersOf(n, g int) string {
	s := fmt.Sprintf("%d %s", n, plural(n, "worker", "workers"))
	if g > 1 {
		s += fmt.Sprintf(" (%d GPUs)", n*g)
	}
	return s
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
