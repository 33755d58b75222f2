package workload

import (
	"io"
	"regexp"
)

// Columns of the Voda workload format; the first three are required.
var vodaColumns = []string{
	"name", "submit", "app",
	"min_workers", "max_workers", "requested_workers",
	"priority", "epochs", "duration", "batch_size", "gpus_per_worker", "team",
}

// MaxNameLength is the longest job name the Voda format accepts, the limit
// of a Kubernetes label value, so that a workload can be replayed on a real
// cluster with the same names.
const MaxNameLength = 63

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ValidName reports whether name is a valid job name in the Voda format:
// lower-case letters, digits, '-' and '.', starting and ending with a letter
// or digit, at most MaxNameLength characters.
func ValidName(name string) bool {
	return len(name) <= MaxNameLength && nameRE.MatchString(name)
}

// ReadVoda reads Voda's own workload CSV. The header is required and
// columns are found by name; an unknown column is an error (most likely a
// typo that would otherwise fall back to a default). Lines starting with
// '#' are comments.
//
//	name               required, unique, see ValidName
//	submit             required, seconds >= 0 from the trace start
//	app                required, the performance model
//	min_workers        >= 1, default 1
//	requested_workers  default min_workers
//	max_workers        default requested_workers
//	priority           >= 0, 0 is the highest, default 0
//	epochs             >= 0, 0 means the application's default
//	duration           seconds > 0 at requested_workers
//	batch_size         >= 0, 0 means the application's default
//	gpus_per_worker    GPUs each worker holds, 1 to 64, default 1: the job
//	                   holds workers x gpus_per_worker GPUs
//	team               the job's team, a namespace name (model.ValidTeam);
//	                   empty: the one default team
//
// At most one of epochs and duration may be set; with neither the job
// trains for the application's default number of epochs. An empty cell is
// the same as an absent column. min_workers <= requested_workers <=
// max_workers must hold.
func ReadVoda(r io.Reader) ([]Job, error) {
	t, err := newTable(r, tableSpec{
		required: vodaColumns[:3],
		optional: vodaColumns[3:],
		strict:   true,
		comments: true,
	})
	if err != nil {
		return nil, err
	}
	return t.readAll(vodaJob)
}

func vodaJob(t *table, seen names) (Job, error) {
	var j Job
	var err error
	if j.Name, err = t.required("name"); err != nil {
		return Job{}, err
	}
	if !ValidName(j.Name) {
		return Job{}, t.err("name", "%q is not a valid name (lower-case letters, digits, '-' and '.', "+
			"starting and ending with a letter or digit, at most %d characters)", j.Name, MaxNameLength)
	}
	if err := seen.add(t, "name", j.Name); err != nil {
		return Job{}, err
	}
	if j.Submit, err = t.seconds("submit"); err != nil {
		return Job{}, err
	}
	if j.App, err = t.required("app"); err != nil {
		return Job{}, err
	}

	minW, minSet, err := t.optInteger("min_workers", 1)
	if err != nil {
		return Job{}, err
	}
	maxW, maxSet, err := t.optInteger("max_workers", 1)
	if err != nil {
		return Job{}, err
	}
	req, reqSet, err := t.optInteger("requested_workers", 1)
	if err != nil {
		return Job{}, err
	}
	if !minSet {
		minW = 1
	}
	if !reqSet {
		req = minW
	}
	if !maxSet {
		maxW = req
	}
	if req < minW { // only when both are set: req defaults to min
		return Job{}, t.err("requested_workers", "%d is below min_workers %d", req, minW)
	}
	if maxW < req {
		return Job{}, t.err("max_workers", "%d is below requested_workers %d (and min_workers %d)", maxW, req, minW)
	}
	j.MinWorkers, j.MaxWorkers, j.Requested = minW, maxW, req

	if j.Priority, _, err = t.optInteger("priority", 0); err != nil {
		return Job{}, err
	}
	epochs, epochsSet, err := t.optInteger("epochs", 0)
	if err != nil {
		return Job{}, err
	}
	j.Epochs = epochs
	if t.str("duration") != "" {
		if epochsSet {
			return Job{}, t.err("duration", "set together with epochs; give one or the other")
		}
		if j.Duration, err = t.seconds("duration"); err != nil {
			return Job{}, err
		}
		if j.Duration == 0 {
			return Job{}, t.err("duration", "must be > 0 (leave it empty to use epochs)")
		}
	}
	if j.BatchSize, _, err = t.optInteger("batch_size", 0); err != nil {
		return Job{}, err
	}
	g, err := gpusPerWorker(t)
	if err != nil {
		return Job{}, err
	}
	if g > 1 {
		j.GPUsPerWorker = g // G = 1 stays 0
	}
	if j.Team, err = team(t); err != nil {
		return Job{}, err
	}
	return j, nil
}
