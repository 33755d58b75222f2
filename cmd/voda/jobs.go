package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/vodascheduler/voda/internal/api"
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
