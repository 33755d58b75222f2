package estimate

import "strconv"

// AppKey is the name under which a job's measurements join its
// application's: the application itself for workers of one GPU, and the
// application with its GPUs per worker otherwise ("bert/gpus-per-worker=4"),
// so that a history measured on pods of 4 GPUs, whose processes share a
// pod's NVLink, is not the prior of a job of pods of 1, which do not. The
// simulator and the server key the same way.
func AppKey(app string, gpusPerWorker int) string {
	if gpusPerWorker <= 1 {
		return app
	}
	return app + "/gpus-per-worker=" + strconv.Itoa(gpusPerWorker)
}
