package api

import (
	"time"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// Version is the REST API's version; every route below lives under
// /api/v1.
const Version = "v1"

// Routes of the v1 API (Go 1.22 ServeMux patterns).
const (
	RouteJobs         = "/api/v1/jobs"                              // GET list, POST create
	RouteJob          = "/api/v1/jobs/{name}"                       // GET, DELETE
	RouteJobPriority  = "/api/v1/jobs/{name}/priority"              // PUT
	RouteJobProgress  = "/api/v1/jobs/{name}/progress"              // POST, from the job's pods
	RouteSchedulers   = "/api/v1/schedulers"                        // GET list
	RouteScheduler    = "/api/v1/schedulers/{gpuType}"              // GET
	RouteAlgorithm    = "/api/v1/schedulers/{gpuType}/algorithm"    // PUT
	RouteRateLimit    = "/api/v1/schedulers/{gpuType}/ratelimit"    // PUT
	RouteTeams        = "/api/v1/schedulers/{gpuType}/teams"        // GET
	RouteTeam         = "/api/v1/schedulers/{gpuType}/teams/{team}" // PUT, DELETE
	RouteAlgorithms   = "/api/v1/algorithms"                        // GET
	RouteNodes        = "/api/v1/nodes"                             // GET
	RouteEvents       = "/api/v1/events"                            // GET, text/event-stream
	RouteOpenAPI      = "/api/v1/openapi.yaml"                      // GET
	RouteLegacyJobs   = "/training"                                 // original: POST, DELETE, GET
	RouteLegacyAlgo   = "/algorithm"                                // original: PUT
	RouteLegacyLimit  = "/ratelimit"                                // original: PUT
	RouteMetrics      = "/metrics"
	RouteHealthz      = "/healthz"
	RouteReadyz       = "/readyz"
	DefaultServerAddr = "127.0.0.1:55587"
)

// Job is a training job as the API shows it.
type Job struct {
	Name string `json:"name"`
	// Namespace is where the job runs, and who may see and change it: on
	// Kubernetes, those allowed the same on its kind there.
	Namespace string       `json:"namespace"`
	Kind      jobspec.Kind `json:"kind"`
	GPUType   string       `json:"gpuType"`
	// Status is Submitted, Waiting, Running, Completed, Failed or Canceled.
	Status Status `json:"status"`
	// Reason is a one-word cause of the status where one helps, e.g.
	// Unschedulable (waiting for more GPUs than the GPU type has in all)
	// or Unreadable (a stored record that could not be decoded, shown
	// Failed); Message says the same for people.
	Reason          string `json:"reason,omitempty"`
	Message         string `json:"message,omitempty"`
	DeleteRequested bool   `json:"deleteRequested,omitempty"`
	// Workers are the worker pods the job holds now, each of GPUsPerWorker
	// GPUs: it holds Workers x GPUsPerWorker GPUs, which GPUs says.
	// MinWorkers, MaxWorkers and RequestedWorkers count workers too.
	Workers          int `json:"workers"`
	MinWorkers       int `json:"minWorkers"`
	MaxWorkers       int `json:"maxWorkers"`
	RequestedWorkers int `json:"requestedWorkers"`
	// GPUsPerWorker is G, the GPUs each worker pod holds (its worker
	// container's nvidia.com/gpu): at least 1.
	GPUsPerWorker int `json:"gpusPerWorker"`
	// GPUs are the GPUs the job holds now: Workers x GPUsPerWorker.
	GPUs     int `json:"gpus"`
	Priority int `json:"priority"`
	Epochs   int `json:"epochs"`
	// Application is the job's vodascheduler/application annotation, and
	// ProgressLog its vodascheduler/progress-log pattern, if it has them.
	Application string `json:"application,omitempty"`
	ProgressLog string `json:"progressLog,omitempty"`
	// Scheduler is the GPU type's current algorithm.
	Scheduler string `json:"scheduler"`
	// Placement maps node name to workers there (each of GPUsPerWorker
	// GPUs).
	Placement map[string]int `json:"placement,omitempty"`
	// Allocations are the job's placements over time, oldest first: each
	// holds from its time until the next one's, the last until now. At
	// most the newest 64 are kept; absent if the job never held GPUs.
	Allocations []Allocation `json:"allocations,omitempty"`

	SubmitTime time.Time  `json:"submitTime"`
	FirstStart *time.Time `json:"firstStart,omitempty"`
	FinishTime *time.Time `json:"finishTime,omitempty"`
	// AsOf is the server's time WaitingSeconds, RunningSeconds and
	// TotalSeconds were computed at: a client that keeps a view (the event
	// stream's) advances them from it.
	AsOf time.Time `json:"asOf"`
	// WaitingSeconds, RunningSeconds and TotalSeconds split the job's life
	// so far (or until it finished): time without GPUs, time with GPUs.
	WaitingSeconds float64 `json:"waitingSeconds"`
	RunningSeconds float64 `json:"runningSeconds"`
	TotalSeconds   float64 `json:"totalSeconds"`
	// AttainedService is GPU-seconds held so far.
	AttainedService float64 `json:"attainedService"`
	Restarts        int     `json:"restarts"`
	PriorityQueue   int     `json:"priorityQueue"`
	// Progress is the fraction of the work done, in [0, 1].
	Progress float64 `json:"progress"`
	// RemainingSeconds is the estimated remaining time at one GPU; absent
	// when unknown.
	RemainingSeconds *float64 `json:"remainingSeconds,omitempty"`
	// QueuePosition is 1 for the next waiting job to start; absent unless
	// waiting.
	QueuePosition  int        `json:"queuePosition,omitempty"`
	EstimatedStart *time.Time `json:"estimatedStart,omitempty"`
	// Speedup is the scheduler's speedup curve of the job: Speedup[k] is
	// its speed on k GPUs over its speed on one (model.Estimates), which
	// for GPUsPerWorker 1 is k workers; absent while the scheduler has
	// none.
	Speedup []float64 `json:"speedup,omitempty"`
	// EstimatedFinish is when a running job should finish on its current
	// workers, give or take EstimatedFinishErrorSeconds (from the spread
	// of its measured throughput); absent when unknown.
	EstimatedFinish             *time.Time `json:"estimatedFinish,omitempty"`
	EstimatedFinishErrorSeconds float64    `json:"estimatedFinishErrorSeconds,omitempty"`
	// Measured is what the job's progress reports say; absent until it
	// sent one (docs/progress.md).
	Measured *Measured `json:"measured,omitempty"`
	// Warnings, only in the answer to a submission or a dry run, name the
	// manifest's fields Kubernetes does not know for its kind
	// (`unknown field "spec.slotsPerWorkr"`): accepted and ignored. The
	// answer's Warning headers say the same.
	Warnings []string `json:"warnings,omitempty"`
}

// Allocation is one change of a job's GPUs: from Time, it held Workers
// workers, GPUs GPUs in all (Workers x the job's GPUsPerWorker), on the
// nodes of Placement (workers by node; absent with none).
type Allocation struct {
	Time      time.Time      `json:"time"`
	Workers   int            `json:"workers"`
	GPUs      int            `json:"gpus"`
	Placement map[string]int `json:"placement,omitempty"`
}

// Measured is what a job's progress reports say.
type Measured struct {
	Generation  string             `json:"generation"`
	LastReport  time.Time          `json:"lastReport"`
	Epoch       float64            `json:"epoch"`
	TotalEpochs float64            `json:"totalEpochs,omitempty"`
	Steps       int64              `json:"steps"`
	Samples     int64              `json:"samples,omitempty"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
	// Throughput is the speed measured on each placement the job ran on.
	Throughput []Throughput `json:"throughput,omitempty"`
	// RestartSeconds is the mean time from an allocation change to the
	// first report of the job's new generation; absent if never measured.
	RestartSeconds float64 `json:"restartSeconds,omitempty"`
}

// Throughput is a job's speed measured on one placement.
type Throughput struct {
	Workers int `json:"workers"`
	// Nodes is absent when the reports did not say.
	Nodes int `json:"nodes,omitempty"`
	// Pods is how many worker pods held Workers processes when they hold
	// several GPUs each; absent for one pod per worker.
	Pods          int     `json:"pods,omitempty"`
	EpochsPerHour float64 `json:"epochsPerHour"`
	// RelativeError is the standard error of the speed over the speed;
	// absent with fewer than two measured intervals.
	RelativeError float64 `json:"relativeError,omitempty"`
	// Seconds is the time measured on the placement.
	Seconds float64 `json:"seconds"`
}

// JobList is the answer to GET /api/v1/jobs: one page of the jobs, oldest
// first.
type JobList struct {
	// Metadata is absent on the last page.
	Metadata ListMeta `json:"metadata,omitzero"`
	Items    []Job    `json:"items"`
}

// ListMeta says how a list goes on, as Kubernetes lists do.
type ListMeta struct {
	// Continue, when not empty, asks for the next page: send it back as
	// the continue query parameter with the same filters. Empty on the
	// last page.
	Continue string `json:"continue,omitempty"`
}

// PriorityRequest is the body of PUT .../priority.
type PriorityRequest struct {
	Priority *int `json:"priority"`
}

// AlgorithmRequest is the body of PUT .../algorithm.
type AlgorithmRequest struct {
	Algorithm string            `json:"algorithm"`
	Params    map[string]string `json:"params,omitempty"`
}

// RateLimitRequest is the body of PUT .../ratelimit.
type RateLimitRequest struct {
	Seconds *float64 `json:"seconds"`
}

// QuotaRequest is the body of PUT .../teams/{team}: the team's quota on
// the GPU type. Guarantee omitted is 0, Limit omitted is 0 (no limit),
// Weight omitted is 1.
type QuotaRequest struct {
	Guarantee int      `json:"guarantee,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Weight    *float64 `json:"weight,omitempty"`
}

// TeamQuota is a quota's values, as TeamList shows the default.
type TeamQuota struct {
	Guarantee int     `json:"guarantee"`
	Limit     int     `json:"limit"`
	Weight    float64 `json:"weight"`
}

// TeamList is the answer to GET .../teams: a GPU type's teams (those with
// a quota or live jobs, sorted by name) and the quota of every other.
type TeamList struct {
	GPUType string `json:"gpuType"`
	// GPUs are the GPU type's GPUs at the scheduler's last cycle.
	GPUs    int       `json:"gpus"`
	Default TeamQuota `json:"default"`
	Items   []Team    `json:"items"`
}

// Scheduler is one GPU type's scheduler as the API shows it.
type Scheduler struct {
	GPUType          string            `json:"gpuType"`
	Algorithm        string            `json:"algorithm"`
	Params           map[string]string `json:"params,omitempty"`
	RateLimitSeconds float64           `json:"rateLimitSeconds"`
	// Now is the scheduler's time as the request is answered (its clock
	// runs faster than real time on a simulated cluster at --speed N);
	// absent until the scheduler's first turn.
	Now       *time.Time `json:"now,omitempty"`
	LastCycle *time.Time `json:"lastCycle,omitempty"`
	Cycles    int64      `json:"cycles"`
	Nodes     int        `json:"nodes"`
	GPUs      int        `json:"gpus"`
	GPUsInUse int        `json:"gpusInUse"`
	Waiting   int        `json:"waiting"`
	Running   int        `json:"running"`
	// Teams are the teams with a quota or live jobs on this GPU type,
	// sorted by name: each team's quota and its share at the last cycle.
	// They name namespaces, so they are shown only to a caller who may
	// list teams.
	Teams []Team `json:"teams,omitempty"`
}

// Team is one team's (namespace's) quota on a GPU type and its share at
// the scheduler's last cycle.
type Team struct {
	Team string `json:"team"`
	// Quota is true when an admin set the team's quota; false when it has
	// the default (no guarantee, no limit, weight 1).
	Quota     bool    `json:"quota"`
	Guarantee int     `json:"guarantee"`
	Limit     int     `json:"limit"` // 0: no limit
	Weight    float64 `json:"weight"`
	// GPUsInUse are the GPUs its jobs hold; Entitled what the last cycle
	// entitled it to; Demand what its jobs want (the sum of their
	// maximums, at most the cluster).
	GPUsInUse int `json:"gpusInUse"`
	Entitled  int `json:"entitled"`
	Demand    int `json:"demand"`
	Running   int `json:"running"`
	Waiting   int `json:"waiting"`
}

// SchedulerList is the answer to GET /api/v1/schedulers.
type SchedulerList struct {
	Items []Scheduler `json:"items"`
}

// JobEvent is the payload of a job event of GET /api/v1/events: the
// job's view when it was created or changed, or its name when it was
// deleted from the store.
type JobEvent struct {
	Job *Job `json:"job,omitempty"`
	// Name and Namespace are set, and Deleted true, when the job is gone.
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Deleted   bool   `json:"deleted,omitempty"`
}

// Snapshot is the payload of the first event of GET /api/v1/events.
type Snapshot struct {
	// Now is the server's time when the snapshot was taken, and ClockRate
	// how many seconds of it pass per real second (1 but on a simulated
	// cluster run faster): with a job's AsOf, what a client needs to
	// advance the job's times between events.
	Now        time.Time      `json:"now"`
	ClockRate  float64        `json:"clockRate"`
	Jobs       []Job          `json:"jobs"`
	Nodes      []GPUTypeNodes `json:"nodes"`
	Schedulers []Scheduler    `json:"schedulers"`
}

// NodeList is the answer to GET /api/v1/nodes: every GPU type's nodes,
// by GPU type.
type NodeList struct {
	Items []GPUTypeNodes `json:"items"`
}

// GPUTypeNodes are one GPU type's nodes as its scheduler last wrote them
// (after every cycle and every node change), sorted by name.
type GPUTypeNodes struct {
	GPUType string `json:"gpuType"`
	Nodes   []Node `json:"nodes"`
}

// Node is one node and who holds its GPUs.
type Node struct {
	Name string `json:"name"`
	GPUs int    `json:"gpus"`
	// Ready is false for a node the cluster knows but that cannot run
	// workers (Kubernetes NotReady, being deleted).
	Ready bool `json:"ready"`
	// Cordoned (unschedulable) nodes keep their workers but take no new
	// ones.
	Cordoned bool `json:"cordoned"`
	// Jobs hold the node's GPUs, each worker its job's GPUs per worker,
	// by job name; a job the caller may not see is not named: all such
	// workers on the node are one entry with Busy set. FreeGPUs are held
	// by none.
	Jobs     []NodeJob `json:"jobs"`
	FreeGPUs int       `json:"freeGPUs"`
}

// NodeJob is one job's workers on a node.
type NodeJob struct {
	// Name and Namespace are absent when Busy.
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Workers are the job's workers on this node, GPUs the GPUs they hold
	// (Workers x the job's GPUs per worker); JobWorkers are its workers on
	// all nodes (absent when Busy).
	Workers    int `json:"workers"`
	GPUs       int `json:"gpus"`
	JobWorkers int `json:"jobWorkers,omitempty"`
	// Busy marks workers and GPUs held by jobs the caller may not see.
	Busy bool `json:"busy,omitempty"`
}

// Algorithm describes one algorithm of the registry.
type Algorithm struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Params  []string `json:"params,omitempty"`
}

// AlgorithmList is the answer to GET /api/v1/algorithms.
type AlgorithmList struct {
	Items []Algorithm `json:"items"`
}

// Error is the body of every 4xx and 5xx answer.
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong; Field names the offending input when
// there is one (a JSON path into the manifest or request body).
type ErrorDetail struct {
	Code    int    `json:"code"`
	Reason  Reason `json:"reason"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Warnings, for a rejected manifest, name its fields Kubernetes does
	// not know for its kind, as Job.Warnings does: a misspelt field is
	// often why a required one is missing.
	Warnings []string `json:"warnings,omitempty"`
}
