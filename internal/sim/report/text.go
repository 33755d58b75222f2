package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteText writes the summary for people, one value per line, JCTs in
// seconds and hours:
//
//	algorithm    tiresias
//	placer       topology
//	avg JCT      4038.2 s (1.12 h)
//
// The placement times are wall clock; the rest is simulated.
func WriteText(w io.Writer, s Summary) error {
	bw := bufio.NewWriter(w)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(bw, "%-12s %s\n", label, fmt.Sprintf(format, args...))
	}
	line("algorithm", "%s", s.Algorithm)
	if s.Placer != "" {
		line("placer", "%s", s.Placer)
	}
	if s.Workload != "" {
		line("workload", "%s", s.Workload)
	}
	line("cluster", "%d GPUs", s.GPUs)
	if s.Cluster != "" {
		line("nodes", "%s (nodes x GPUs)", s.Cluster)
	}
	line("jobs", "%d (%d completed)", s.Jobs, s.Completed)
	line("avg JCT", "%s", secHours(s.AvgJCT))
	line("p50 JCT", "%s", secHours(s.P50JCT))
	line("p99 JCT", "%s", secHours(s.P99JCT))
	line("max JCT", "%s", secHours(s.MaxJCT))
	line("makespan", "%s", secHours(s.Makespan))
	line("avg queue", "%s", secHours(s.AvgQueue))
	line("GPU util", "%.1f %%", 100*s.GPUUtilization)
	line("restarts", "%d (%.2f per job)", s.Restarts, s.AvgRestartsPerJob)
	line("migrations", "%d (%.2f per job)", s.Migrations, s.MigrationsPerJob)
	line("cycles", "%d", s.Cycles)
	line("spread", "%.2f jobs per cycle on more nodes than needed", s.AvgSpreadJobs)
	if s.StrandedGPUHours > 0 {
		line("stranded", "%.1f GPU-hours free but too split for the workers of the jobs that waited", s.StrandedGPUHours)
	}
	line("placement", "%.3f ms per cycle (max %.3f ms)", s.PlaceMsAvg, s.PlaceMsMax)
	line("wall", "%.1f s", s.WallSeconds)
	for i, e := range s.Estimator {
		label := ""
		if i == 0 {
			label = "step error"
		}
		line(label, "%-12s new placements %4d: mean %5.1f %%, max %5.1f %%; new batches %4d: mean %5.1f %%, max %5.1f %%",
			e.App, e.NewPlacements, 100*e.NewPlacementMeanErr, 100*e.NewPlacementMaxErr,
			e.NewBatches, 100*e.NewBatchMeanErr, 100*e.NewBatchMaxErr)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

func secHours(sec float64) string {
	return fmt.Sprintf("%.1f s (%.2f h)", sec, sec/3600)
}

// WriteComparison writes one aligned table with a row per summary, in the
// given order: algorithm, placer, completed/jobs, avg/p50/p99 JCT,
// makespan and avg queue (seconds), GPU utilization (%), restarts and
// migrations per job, spread (jobs on more nodes than needed, averaged
// over cycles), stranded GPU-hours when any row has some, and wall time
// (seconds). The totals of restarts and
// migrations are in the text and JSON summaries. The algorithm and placer
// columns are left-aligned, the numbers right-aligned.
func WriteComparison(w io.Writer, sums []Summary) error {
	return writeTable(w, comparisonTable(sums))
}

// table is a table of text cells: a header row, then one row per entry;
// the first left columns hold names, the others numbers.
type table struct {
	header []string
	rows   [][]string
	left   int
}

// comparisonTable is the table of WriteComparison.
func comparisonTable(sums []Summary) table {
	t := table{header: []string{"algorithm", "placer", "done", "avg JCT s", "p50 JCT s", "p99 JCT s",
		"makespan s", "avg queue s", "util %", "restarts/job", "migrations/job", "spread", "wall s"}, left: 2}
	// Stranded GPU-hours only arise with workers of several GPUs; the
	// column shows when a row has some.
	stranded := slices.ContainsFunc(sums, func(s Summary) bool { return s.StrandedGPUHours > 0 })
	if stranded {
		t.header = slices.Insert(t.header, len(t.header)-1, "stranded GPU-h")
	}
	for _, s := range sums {
		row := []string{
			s.Algorithm,
			s.Placer,
			fmt.Sprintf("%d/%d", s.Completed, s.Jobs),
			fmt.Sprintf("%.1f", s.AvgJCT),
			fmt.Sprintf("%.1f", s.P50JCT),
			fmt.Sprintf("%.1f", s.P99JCT),
			fmt.Sprintf("%.1f", s.Makespan),
			fmt.Sprintf("%.1f", s.AvgQueue),
			fmt.Sprintf("%.1f", 100*s.GPUUtilization),
			fmt.Sprintf("%.2f", s.AvgRestartsPerJob),
			fmt.Sprintf("%.2f", s.MigrationsPerJob),
			fmt.Sprintf("%.2f", s.AvgSpreadJobs),
			fmt.Sprintf("%.1f", s.WallSeconds),
		}
		if stranded {
			row = slices.Insert(row, len(row)-1, fmt.Sprintf("%.1f", s.StrandedGPUHours))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// WriteApps writes, for each summary, its average JCT broken down by
// application (each application's JCTs summed over all completed jobs,
// so that a row adds up to the average JCT), and, for summaries with
// goodput estimates, the step-time prediction errors by application.
func WriteApps(w io.Writer, sums []Summary) error {
	if err := writeTable(w, appsTable(sums)); err != nil {
		return err
	}
	errs := estimatorTable(sums)
	if len(errs.rows) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, estimatorCaption+"\n"); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return writeTable(w, errs)
}

// estimatorCaption introduces the table of estimatorTable.
const estimatorCaption = "step-time prediction errors before a job first ran a configuration"

// appsTable is the table of average JCTs by application of WriteApps:
// a column per application, "-" where a run completed none of its jobs.
func appsTable(sums []Summary) table {
	var apps []string
	for _, s := range sums {
		for _, a := range s.Apps {
			if !slices.Contains(apps, a.App) {
				apps = append(apps, a.App)
			}
		}
	}
	slices.Sort(apps)
	t := table{header: append([]string{"algorithm", "placer", "avg JCT s"}, apps...), left: 2}
	for _, s := range sums {
		r := []string{s.Algorithm, s.Placer, fmt.Sprintf("%.1f", s.AvgJCT)}
		for _, app := range apps {
			c := "-"
			for _, a := range s.Apps {
				if a.App == app {
					c = fmt.Sprintf("%.1f", a.Contribution)
				}
			}
			r = append(r, c)
		}
		t.rows = append(t.rows, r)
	}
	return t
}

// estimatorTable is the table of step-time prediction errors of
// WriteApps, a row per run and application; it has no rows without
// goodput estimates.
func estimatorTable(sums []Summary) table {
	t := table{header: []string{"algorithm", "placer", "app", "new placements", "mean err %", "max err %", "new batches", "mean err %", "max err %"}, left: 3}
	for _, s := range sums {
		for _, e := range s.Estimator {
			t.rows = append(t.rows, []string{s.Algorithm, s.Placer, e.App,
				fmt.Sprint(e.NewPlacements), fmt.Sprintf("%.1f", 100*e.NewPlacementMeanErr), fmt.Sprintf("%.1f", 100*e.NewPlacementMaxErr),
				fmt.Sprint(e.NewBatches), fmt.Sprintf("%.1f", 100*e.NewBatchMeanErr), fmt.Sprintf("%.1f", 100*e.NewBatchMaxErr)})
		}
	}
	return t
}

// writeTable writes the table aligned, its name columns to the left and
// the rest to the right.
func writeTable(w io.Writer, t table) error {
	rows := append([][]string{t.header}, t.rows...)
	leftAligned := t.left
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case i < leftAligned:
				b.WriteString("  " + c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		bw.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// jobsCSVHeader is the header WriteJobsCSV writes.
var jobsCSVHeader = []string{
	"name", "app", "submit_s", "start_s", "end_s", "jct_s", "queue_s",
	"min_workers", "max_workers", "requested", "restarts", "migrations",
	"gpu_seconds", "done",
}

// WriteJobsCSV writes one row per job, in the run's order, with the header
// name,app,submit_s,start_s,end_s,jct_s,queue_s,min_workers,max_workers,
// requested,restarts,migrations,gpu_seconds,done. Cells that are unknown
// (start of a job that never ran, end and JCT of an unfinished job) are
// empty, which CSV tools read as missing rather than as -1.
func WriteJobsCSV(w io.Writer, run *Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(jobsCSVHeader); err != nil {
		return fmt.Errorf("write jobs csv: %w", err)
	}
	if run != nil {
		for _, j := range run.Jobs {
			start, queue, end, jct := "", "", "", ""
			if j.Start >= 0 {
				start, queue = num(j.Start), num(j.Start-j.Submit)
			}
			if j.Done {
				end, jct = num(j.End), num(j.End-j.Submit)
			}
			rec := []string{
				j.Name, j.App, num(j.Submit), start, end, jct, queue,
				strconv.Itoa(j.MinWorkers), strconv.Itoa(j.MaxWorkers), strconv.Itoa(j.Requested),
				strconv.Itoa(j.Restarts), strconv.Itoa(j.Migrations),
				num(j.GPUSeconds), strconv.FormatBool(j.Done),
			}
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("write jobs csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write jobs csv: %w", err)
	}
	return nil
}

// num formats a number with at most 3 decimals and no trailing zeros.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'f', 3, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
