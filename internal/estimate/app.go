package estimate

import "strconv"

// AppKey is the name under which a job's measurements join its
// application's: its namespace, then the application, then, for workers
// of several GPUs, their GPUs ("team-a/bert/gpus-per-worker=4").
//
//   - Per namespace, so that one team's jobs cannot move another team's
//     estimates: an application is a free-form annotation, and a job
//     that reports a false speed under another team's application name
//     would otherwise become that team's prior. An empty namespace (the
//     simulator's jobs) adds nothing.
//   - Per GPUs per worker, so that a history measured on pods of 4 GPUs,
//     whose processes share a pod's NVLink, is not the prior of a job of
//     pods of 1, which do not.
//
// A namespace is a DNS label and an application a label value, neither
// holding a '/', so no two keys collide. The simulator and the server key
// the same way.
func AppKey(namespace, app string, gpusPerWorker int) string {
	key := app
	if namespace != "" {
		key = namespace + "/" + app
	}
	if gpusPerWorker > 1 {
		key += "/gpus-per-worker=" + strconv.Itoa(gpusPerWorker)
	}
	return key
}
