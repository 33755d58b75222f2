package workload

import "io"

// ReadPollux reads a workload of the Pollux OSDI'21 artifact
// (workloads*/workload-N.csv): a CSV with the header
// name,time,application,num_replicas,batch_size. Columns are found by
// header name; extra columns are ignored.
//
// num_replicas and batch_size are the tuned fixed configuration the
// artifact gives its non-adaptive baselines, so they become Requested and
// BatchSize. MinWorkers is 1 and MaxWorkers is num_replicas here; the
// simulator widens MaxWorkers later from the application's performance
// model, which knows how far the job scales.
func ReadPollux(r io.Reader) ([]Job, error) {
	t, err := newTable(r, tableSpec{
		required: []string{"name", "time", "application", "num_replicas", "batch_size"},
	})
	if err != nil {
		return nil, err
	}
	return t.readAll(polluxJob)
}

func polluxJob(t *table, seen names) (Job, error) {
	name, err := t.required("name")
	if err != nil {
		return Job{}, err
	}
	if err := seen.add(t, "name", name); err != nil {
		return Job{}, err
	}
	submit, err := t.seconds("time")
	if err != nil {
		return Job{}, err
	}
	app, err := t.required("application")
	if err != nil {
		return Job{}, err
	}
	replicas, err := t.integer("num_replicas", 1)
	if err != nil {
		return Job{}, err
	}
	batch, err := t.integer("batch_size", 0)
	if err != nil {
		return Job{}, err
	}
	return Job{
		Name:       name,
		Submit:     submit,
		App:        app,
		MinWorkers: 1,
		MaxWorkers: replicas,
		Requested:  replicas,
		BatchSize:  batch,
		WidenMax:   true,
	}, nil
}
