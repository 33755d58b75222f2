package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const ns = "voda"

// Metrics holds every collector. Create one per process with New.
type Metrics struct {
	JobsCreated   *prometheus.CounterVec
	JobsDeleted   *prometheus.CounterVec
	JobsCompleted *prometheus.CounterVec
	JobsFailed    *prometheus.CounterVec
	JobsSetAside  *prometheus.CounterVec
	// ProgressReports counts the progress reports jobs sent, by what
	// became of them: used, or why not (first, warm-up, allocation).
	ProgressReports *prometheus.CounterVec
	// ProgressConflicts counts the revision conflicts progress reports met
	// writing their job's state: another writer saved it between their
	// read and their write. Each is retried.
	ProgressConflicts prometheus.Counter

	Reschedules        *prometheus.CounterVec
	RescheduleDuration *prometheus.HistogramVec
	AllocatorDuration  *prometheus.HistogramVec
	PlacementDuration  *prometheus.HistogramVec
	WorkersMigrated    *prometheus.CounterVec
	LaunchersRestarted *prometheus.CounterVec

	JobsReady     *prometheus.GaugeVec
	JobsWaiting   *prometheus.GaugeVec
	JobsRunning   *prometheus.GaugeVec
	JobsCrossNode *prometheus.GaugeVec
	// GPUsStranded is the GPUs the last cycle left free on nodes where no
	// waiting job can run a worker of its G GPUs.
	GPUsStranded *prometheus.GaugeVec
	GPUs         *prometheus.GaugeVec
	GPUsInUse    *prometheus.GaugeVec

	// Per live job that reported its progress, labelled gpu_type,
	// namespace and job_name; a job's series go when it leaves
	// the scheduler. Set and delete them through SetJob and DeleteJob,
	// which do nothing when per-job series are off (Options.NoJobSeries).
	JobProgress         *prometheus.GaugeVec
	JobRemainingSeconds *prometheus.GaugeVec
	JobThroughput       *prometheus.GaugeVec
	// JobWaitingSeconds is, per live job holding no GPU, the scheduler
	// time since it last lost (or never had) its GPUs.
	JobWaitingSeconds *prometheus.GaugeVec

	// Per team (namespace) with live jobs, labelled gpu_type and team, at
	// the last cycle: the GPUs its jobs hold, what the quotas entitled it
	// to, its waiting jobs. Set through SetTeams; off with the per-job
	// series, since they name namespaces.
	TeamGPUsInUse   *prometheus.GaugeVec
	TeamEntitled    *prometheus.GaugeVec
	TeamJobsWaiting *prometheus.GaugeVec

	// LastReschedule is the wall time of the GPU type's last scheduling
	// cycle in this process (its scheduler's start until the first).
	LastReschedule *prometheus.GaugeVec
	// StoreWriteErrors counts the scheduler's failed store writes.
	StoreWriteErrors *prometheus.CounterVec
	// SchedulerLeader is 1 while this process runs the GPU type's
	// scheduler (leads it), 0 while it stands by; LeaderTerms counts the
	// terms it began.
	SchedulerLeader *prometheus.GaugeVec
	LeaderTerms     *prometheus.CounterVec

	HTTPRequests *prometheus.CounterVec
	HTTPDuration *prometheus.HistogramVec

	// EventStreams are the open event streams (GET /api/v1/events);
	// EventStreamsDropped counts those closed for falling behind;
	// EventPollDuration times the shared read of the store that feeds
	// them; EventsSent and EventBytesSent count what the streams wrote,
	// by event name (heartbeats are "heartbeat").
	EventStreams        prometheus.Gauge
	EventStreamsDropped prometheus.Counter
	EventPollDuration   prometheus.Histogram
	EventsSent          *prometheus.CounterVec
	EventBytesSent      *prometheus.CounterVec

	// JobsRemoved counts the finished jobs' records removed from the
	// store by this process, by reason (RemovedDeleted, RemovedAge,
	// RemovedCount).
	JobsRemoved *prometheus.CounterVec
	// The retention loop's, exported only by processes that run it
	// (vectors without labels, whose one series appears at its first
	// pass): FinishedJobs and LiveJobs are the store's jobs as its last
	// pass counted them (after its removals); RetentionLastRun is the
	// wall time a pass last ended without error; RetentionDuration times
	// each pass; RetentionErrors counts the passes that failed.
	FinishedJobs      *prometheus.GaugeVec
	LiveJobs          *prometheus.GaugeVec
	RetentionLastRun  *prometheus.GaugeVec
	RetentionDuration *prometheus.HistogramVec
	RetentionErrors   *prometheus.CounterVec

	// jobSeries says whether the per-job gauges are exported.
	jobSeries bool
}

// Options are the choices of NewWithOptions; the zero value is New's.
type Options struct {
	// NoJobSeries leaves out every series that names a job (JobProgress,
	// JobRemainingSeconds, JobThroughput, JobWaitingSeconds) or a team
	// (TeamGPUsInUse, TeamEntitled, TeamJobsWaiting): they are neither
	// registered nor set, so whoever may scrape /metrics learns counts per
	// GPU type but no job's name or namespace.
	NoJobSeries bool
}

// jobLabels are the labels of the per-job gauges: a label "job" would
// clash with the job label Prometheus gives every scraped series.
var jobLabels = []string{"gpu_type", "namespace", "job_name"}

var teamLabels = []string{"gpu_type", "team"}

// Team is one team's share of a GPU type, for SetTeams.
type Team struct {
	Name                    string
	GPUs, Entitled, Waiting int
}

// SetTeams replaces gpuType's per-team series with teams'; nothing when
// per-job series are off.
func (m *Metrics) SetTeams(gpuType string, teams []Team) {
	if !m.jobSeries {
		return
	}
	gt := prometheus.Labels{"gpu_type": gpuType}
	for _, g := range []*prometheus.GaugeVec{m.TeamGPUsInUse, m.TeamEntitled, m.TeamJobsWaiting} {
		g.DeletePartialMatch(gt)
	}
	for _, t := range teams {
		m.TeamGPUsInUse.WithLabelValues(gpuType, t.Name).Set(float64(t.GPUs))
		m.TeamEntitled.WithLabelValues(gpuType, t.Name).Set(float64(t.Entitled))
		m.TeamJobsWaiting.WithLabelValues(gpuType, t.Name).Set(float64(t.Waiting))
	}
}

// Job names one job's per-job series.
type Job struct {
	GPUType, Namespace, Name string
}

func (j Job) values() []string { return []string{j.GPUType, j.Namespace, j.Name} }

// JobSeries reports whether the per-job gauges are exported.
func (m *Metrics) JobSeries() bool { return m.jobSeries }

// SetJob sets job j's series of the per-job gauge g to v; nothing when
// per-job series are off.
func (m *Metrics) SetJob(g *prometheus.GaugeVec, j Job, v float64) {
	if m.jobSeries {
		g.WithLabelValues(j.values()...).Set(v)
	}
}

// DeleteJob deletes job j's series of the per-job gauges gs.
func (m *Metrics) DeleteJob(j Job, gs ...*prometheus.GaugeVec) {
	for _, g := range gs {
		g.DeleteLabelValues(j.values()...)
	}
}

// ForgetJob deletes every per-job series of job j: it left the scheduler.
func (m *Metrics) ForgetJob(j Job) {
	m.DeleteJob(j, m.JobProgress, m.JobRemainingSeconds, m.JobThroughput, m.JobWaitingSeconds)
}

// Reasons of JobsRemoved.
const (
	// RemovedDeleted: a user deleted the finished job.
	RemovedDeleted = "deleted"
	// RemovedAge: retention removed it, finished longer ago than kept.
	RemovedAge = "age"
	// RemovedCount: retention removed it, the oldest beyond the number
	// of finished jobs kept.
	RemovedCount = "count"
)

// decisionBuckets cover 10 µs to about 10 s: allocation and placement
// decisions take microseconds to milliseconds, the original's took seconds.
var decisionBuckets = prometheus.ExponentialBuckets(1e-5, 4, 12)

// New creates the metrics and registers them, plus the Go and process
// collectors, on reg.
func New(reg prometheus.Registerer) *Metrics { return NewWithOptions(reg, Options{}) }

// NewWithOptions is New with choices: opts.NoJobSeries leaves the per-job
// gauges unregistered.
func NewWithOptions(reg prometheus.Registerer, opts Options) *Metrics {
	gt := []string{"gpu_type"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, gt)
	}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: decisionBuckets}, labels)
	}
	m := &Metrics{
		JobsCreated:   counter("jobs_created_total", "Jobs accepted by the API.", gt...),
		JobsDeleted:   counter("jobs_deleted_total", "Jobs deleted by users.", gt...),
		JobsCompleted: counter("jobs_completed_total", "Jobs that completed.", gt...),
		JobsFailed:    counter("jobs_failed_total", "Jobs that failed.", gt...),
		JobsSetAside:  counter("jobs_set_aside_total", "Stored job records a scheduler could not restore (undecodable, invalid, or impossible on its cluster) and set aside as Failed.", gt...),
		ProgressReports: counter("progress_reports_total", "Progress reports accepted from jobs, by outcome: used (a measured interval), or kept but not measured (first, warm-up, allocation).",
			"gpu_type", "outcome"),
		ProgressConflicts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "progress_conflicts_total",
			Help: "Revision conflicts progress reports met writing their job's state (another replica or ingestion wrote it between their read and write); each is retried, and a report that meets 5 in a row is answered 429."}),

		Reschedules:        counter("reschedules_total", "Scheduling cycles run.", gt...),
		RescheduleDuration: hist("reschedule_duration_seconds", "Time of one scheduling cycle, from snapshot to the last action applied.", gt...),
		AllocatorDuration:  hist("allocator_duration_seconds", "Time the algorithm took to decide an allocation.", "gpu_type", "algorithm"),
		PlacementDuration:  hist("placement_duration_seconds", "Time the placer took.", gt...),
		WorkersMigrated:    counter("workers_migrated_total", "Workers moved to another node.", gt...),
		LaunchersRestarted: counter("launchers_restarted_total", "Job restarts: every start, resize, migration or halt of a job restarts its launcher.", gt...),

		JobsReady:     gauge("jobs_ready", "Live jobs the scheduler holds (waiting or running)."),
		JobsWaiting:   gauge("jobs_waiting", "Live jobs holding no GPU."),
		JobsRunning:   gauge("jobs_running", "Jobs holding GPUs."),
		JobsCrossNode: gauge("jobs_cross_node", "Running jobs whose workers span more than one node."),
		GPUs:          gauge("gpus", "GPUs of the GPU type's nodes."),
		GPUsInUse:     gauge("gpus_in_use", "GPUs held by jobs."),
		GPUsStranded: gauge("gpus_stranded", "GPUs the last cycle left free on nodes where no waiting job can run a worker: "+
			"free but too few in one place for the GPUs per worker of the jobs that wait (0 when every worker is one GPU)."),

		JobProgress: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "job_progress",
			Help: "Fraction of a job's epochs done, as its progress reports say."}, jobLabels),
		JobRemainingSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "job_remaining_seconds",
			Help: "Estimated time until a running job finishes on its current workers."}, jobLabels),
		JobThroughput: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "job_throughput_epochs_per_hour",
			Help: "A running job's measured speed on its current number of workers."}, jobLabels),
		JobWaitingSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "job_waiting_seconds",
			Help: "Per live job holding no GPU: time since it last lost (or never had) its GPUs, on the scheduler's clock."}, jobLabels),

		TeamGPUsInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "team_gpus_in_use",
			Help: "GPUs a team's (namespace's) jobs hold."}, teamLabels),
		TeamEntitled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "team_entitled_gpus",
			Help: "GPUs the last cycle entitled a team to: its quota's guarantee (up to its demand) and its share of the rest."}, teamLabels),
		TeamJobsWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "team_jobs_waiting",
			Help: "A team's live jobs holding no GPU."}, teamLabels),

		LastReschedule:   gauge("last_reschedule_timestamp_seconds", "Wall time (Unix seconds) of the last scheduling cycle this process ran; its scheduler's start until the first."),
		StoreWriteErrors: counter("store_write_errors_total", "Scheduler writes to the store (job and scheduler statuses) that failed.", gt...),
		SchedulerLeader:  gauge("scheduler_leader", "1 while this process runs the GPU type's scheduler (it holds the lease, or leader election is off), 0 while it stands by."),
		LeaderTerms:      counter("scheduler_leader_terms_total", "Terms this process began as the GPU type's scheduler (leadership acquired).", gt...),

		HTTPRequests: counter("http_requests_total", "API requests by route pattern and status code.", "route", "code"),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "http_request_duration_seconds", Help: "API request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 2.5, 14),
		}, []string{"route"}),

		EventStreams: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "event_streams",
			Help: "Open event streams (GET /api/v1/events)."}),
		EventStreamsDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "event_streams_dropped_total",
			Help: "Event streams closed because their client fell behind."}),
		EventPollDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "event_poll_duration_seconds",
			Help: "Time of one read of the store for the event streams, from the read to every change handed to the streams.", Buckets: decisionBuckets}),
		EventsSent:     counter("events_sent_total", "Events written to the event streams, by event (snapshot, job, nodes, scheduler, heartbeat); one per stream it went to.", "event"),
		EventBytesSent: counter("event_bytes_sent_total", "Bytes written to the event streams, by event.", "event"),

		JobsRemoved: counter("jobs_removed_total", "Finished jobs' records removed from the store, by reason: deleted (by a user), age (older than --finished-retention), count (beyond --max-finished-jobs).", "reason"),
		FinishedJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "finished_jobs",
			Help: "Finished jobs (Completed, Failed, Canceled) kept in the store, as the last retention pass counted them."}, nil),
		LiveJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "live_jobs",
			Help: "Live jobs in the store, of every GPU type, as the last retention pass counted them."}, nil),
		RetentionLastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "retention_last_run_timestamp_seconds",
			Help: "Wall time (Unix seconds) the last retention pass of this process ended without error."}, nil),
		RetentionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "retention_duration_seconds",
			Help: "Time of one retention pass, pauses between its batches included.", Buckets: prometheus.ExponentialBuckets(1e-3, 4, 10)}, nil),
		RetentionErrors: counter("retention_errors_total", "Retention passes that failed (a store error); the next pass retries."),
		jobSeries:       !opts.NoJobSeries,
	}
	for _, reason := range []string{RemovedDeleted, RemovedAge, RemovedCount} {
		m.JobsRemoved.WithLabelValues(reason) // at 0, so that increase() sees the first
	}
	reg.MustRegister(
		m.JobsCreated, m.JobsDeleted, m.JobsCompleted, m.JobsFailed, m.JobsSetAside, m.ProgressReports, m.ProgressConflicts,
		m.Reschedules, m.RescheduleDuration, m.AllocatorDuration, m.PlacementDuration,
		m.WorkersMigrated, m.LaunchersRestarted,
		m.JobsReady, m.JobsWaiting, m.JobsRunning, m.JobsCrossNode, m.GPUs, m.GPUsInUse, m.GPUsStranded,
		m.LastReschedule, m.StoreWriteErrors, m.SchedulerLeader, m.LeaderTerms,
		m.HTTPRequests, m.HTTPDuration, m.EventStreams, m.EventStreamsDropped, m.EventPollDuration,
		m.EventsSent, m.EventBytesSent,
		m.JobsRemoved, m.FinishedJobs, m.LiveJobs, m.RetentionLastRun, m.RetentionDuration, m.RetentionErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if m.jobSeries {
		reg.MustRegister(m.JobProgress, m.JobRemainingSeconds, m.JobThroughput, m.JobWaitingSeconds,
			m.TeamGPUsInUse, m.TeamEntitled, m.TeamJobsWaiting)
	}
	return m
}

// Lead records that this process began (leading true) or ended a term as
// gpuType's scheduler. When a term ends, the GPU type's gauges of state
// (jobs, GPUs, per-job gauges, the last cycle) are deleted: the replica
// that leads next exports them, and a standby replica exporting the last
// values it saw would contradict it. Counters stay.
func (m *Metrics) Lead(gpuType string, leading bool) {
	if leading {
		m.LeaderTerms.WithLabelValues(gpuType).Inc()
		m.SchedulerLeader.WithLabelValues(gpuType).Set(1)
		return
	}
	m.SchedulerLeader.WithLabelValues(gpuType).Set(0)
	gt := prometheus.Labels{"gpu_type": gpuType}
	for _, g := range []*prometheus.GaugeVec{m.JobsReady, m.JobsWaiting, m.JobsRunning, m.JobsCrossNode, m.GPUs, m.GPUsInUse, m.GPUsStranded,
		m.JobProgress, m.JobRemainingSeconds, m.JobThroughput, m.JobWaitingSeconds, m.LastReschedule,
		m.TeamGPUsInUse, m.TeamEntitled, m.TeamJobsWaiting} {
		g.DeletePartialMatch(gt)
	}
}

// StandBy makes gpuType's leader gauge (0) and counters exist before this
// process first leads it, so that a replica standing by shows it.
func (m *Metrics) StandBy(gpuType string) {
	m.SchedulerLeader.WithLabelValues(gpuType).Set(0)
	m.Zero(gpuType)
}

// Zero makes gpuType's counters exist, at 0 until they count: a counter
// born at 1 hides its first increase from increase() and rate(), and an
// alert on the first failure or set-aside job would never fire.
func (m *Metrics) Zero(gpuType string) {
	for _, c := range []*prometheus.CounterVec{m.JobsCreated, m.JobsDeleted, m.JobsCompleted, m.JobsFailed, m.JobsSetAside,
		m.Reschedules, m.WorkersMigrated, m.LaunchersRestarted, m.StoreWriteErrors, m.LeaderTerms} {
		c.WithLabelValues(gpuType)
	}
}
