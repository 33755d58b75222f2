// Command recorded prints the Pollux artifact's recorded results (its
// results-jobload/<policy>-<load>/summary.json, per-job JCTs) as the
// simulator summarises its own runs: mean over the eight workloads of the
// average JCT, p99 JCT (nearest rank) and makespan (last completion minus
// first submission), so that `make goodput-table` can set Voda's figures
// beside them.
//
//	go run ./hack/recorded -pollux ../shared/traces/pollux [-policies pollux,tiresias] [-loads 0.5,1.0,1.5,2.0]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func main() {
	dir := flag.String("pollux", "../shared/traces/pollux", "the Pollux artifact's simulator data (workloads*, results-jobload)")
	policies := flag.String("policies", "pollux,tiresias", "comma-separated recorded policies")
	loads := flag.String("loads", "0.5,1.0,1.5,2.0", "comma-separated relative loads")
	flag.Parse()
	fmt.Printf("%-10s %-5s %10s %10s %11s\n", "recorded", "load", "avg JCT s", "p99 JCT s", "makespan s")
	for _, load := range strings.Split(*loads, ",") {
		for _, policy := range strings.Split(*policies, ",") {
			s, err := summarize(*dir, policy, load)
			if err != nil {
				fmt.Fprintln(os.Stderr, "recorded:", err)
				os.Exit(1)
			}
			fmt.Printf("%-10s %-5s %10.1f %10.1f %11.1f\n", policy, load, s.AvgJCT, s.P99JCT, s.Makespan)
		}
	}
}

// summarize reads one recorded policy at one load and returns its mean
// over the workloads.
func summarize(dir, policy, load string) (report.Summary, error) {
	path := filepath.Join(dir, "results-jobload", policy+"-"+load, "summary.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return report.Summary{}, err
	}
	var rec struct {
		JCTs map[string]map[string]float64 `json:"jcts"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return report.Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	wdir := "workloads"
	if load != "1.0" {
		wdir += "-" + load
	}
	names := make([]string, 0, len(rec.JCTs))
	for w := range rec.JCTs {
		names = append(names, w)
	}
	slices.Sort(names)
	var rows [][]report.Summary
	for _, w := range names {
		jobs, err := workload.Read(filepath.Join(dir, wdir, w+".csv"), workload.FormatPollux, workload.Options{})
		if err != nil {
			return report.Summary{}, err
		}
		run := &report.Run{Algorithm: policy, Workload: w}
		for _, j := range jobs {
			jct, ok := rec.JCTs[w][j.Name]
			if !ok {
				return report.Summary{}, fmt.Errorf("%s: %s: no JCT for %s", path, w, j.Name)
			}
			run.Jobs = append(run.Jobs, report.JobResult{Name: j.Name, App: j.App, Submit: j.Submit, Start: j.Submit, End: j.Submit + jct, Done: true})
		}
		rows = append(rows, []report.Summary{report.Summarize(run)})
	}
	if len(rows) == 0 {
		return report.Summary{}, fmt.Errorf("%s: no workloads", path)
	}
	return report.MeanOverWorkloads(rows)[0], nil
}
