package workload

// Job is one workload entry, whatever format it came from.
type Job struct {
	// Name is unique within the workload.
	Name string
	// Submit is the submission time in seconds from the trace start.
	Submit float64
	// App names the performance model (an application of the profiles
	// directory, or a parametric model name).
	App string
	// MinWorkers, MaxWorkers and Requested are the worker range and the
	// count non-elastic algorithms give the job.
	MinWorkers, MaxWorkers, Requested int
	// Priority is 0 (highest) or more.
	Priority int
	// Epochs to train; 0 means the application's default.
	Epochs int
	// Duration is the job's run time in seconds at Requested GPUs, for
	// traces that give durations instead of epochs; 0 otherwise.
	Duration float64
	// BatchSize is the global batch size; 0 means the application's
	// default.
	BatchSize int
	// WidenMax lets the simulator raise MaxWorkers to what the
	// performance model supports for the batch size, for formats that give
	// no worker range (the Pollux artifact's).
	WidenMax bool
}
