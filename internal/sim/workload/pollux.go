package workload

import "io"

// ReadPollux reads a workload of the Pollux OSDI'21 artifact
// (workloads*/workload-N.csv): a CSV with the header
// name,time,application,num_replicas,batch_size, and Voda's optional
// gpus_per_worker (G, default 1) and team (the job's team, a namespace
// name; empty: the one default team). Columns are found by header name; other
// extra columns are ignored.
//
// num_replicas and batch_size are the tuned fixed configuration the
// artifact gives its non-adaptive baselines, so they become Requested and
// BatchSize. num_replicas counts GPUs, as Pollux's replicas are one
// process each: with G it must be a multiple of G, and Requested is
// num_replicas / G workers. MinWorkers is 1 and MaxWorkers is Requested
// here; the simulator widens MaxWorkers later from the application's
// performance model, which knows how far the job scales.
func ReadPollux(r io.Reader) ([]Job, error) {
	t, err := newTable(r, tableSpec{
		required: []string{"name", "time", "application", "num_replicas", "batch_size"},
		optional: []string{"gpus_per_worker", "team"},
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
	g, err := gpusPerWorker(t)
	if err != nil {
		return Job{}, err
	}
	if replicas%g != 0 {
		return Job{}, t.err("num_replicas", "%d is not whole workers of gpus_per_worker %d", replicas, g)
	}
	j := Job{
		Name:       name,
		Submit:     submit,
		App:        app,
		MinWorkers: 1,
		MaxWorkers: replicas / g,
		Requested:  replicas / g,
		BatchSize:  batch,
		WidenMax:   true,
	}
	if g > 1 {
		j.GPUsPerWorker = g
	}
	if j.Team, err = team(t); err != nil {
		return Job{}, err
	}
	return j, nil
}
