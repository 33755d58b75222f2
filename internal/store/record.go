package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/model"
)

// The records below are how both stores encode jobs and scheduler records:
// bbolt as JSON, MongoDB as BSON. One set of types keeps the two stores'
// round-trip behaviour identical, and the tags keep model free of encoding
// concerns. Field names are short camelCase so a Mongo document stays
// readable in a shell.
//
// Round-trip rules (documented on Store):
//   - times are unix nanoseconds, so they keep every nanosecond (Mongo dates
//     only keep milliseconds); the zero time is stored as null and comes back
//     as the zero time; times come back in UTC; times outside the int64
//     nanosecond range (before 1677-09-21, after 2262-04-11) are rejected;
//   - empty slices, maps and byte strings come back nil;
//   - NaN and ±Inf survive (see storedFloat).

// jobRecord is a Job as stored.
type jobRecord struct {
	Name            string       `json:"name" bson:"_id"`
	Kind            string       `json:"kind" bson:"kind"`
	Namespace       string       `json:"namespace,omitempty" bson:"namespace,omitempty"`
	Manifest        []byte       `json:"manifest" bson:"manifest"`
	Spec            specRecord   `json:"spec" bson:"spec"`
	Model           string       `json:"model" bson:"model"`
	Application     string       `json:"application,omitempty" bson:"application,omitempty"`
	ProgressLog     string       `json:"progressLog,omitempty" bson:"progressLog,omitempty"`
	DeleteRequested bool         `json:"deleteRequested" bson:"deleteRequested"`
	Status          statusRecord `json:"status" bson:"status"`
	StatusRevision  int64        `json:"statusRev" bson:"statusRev"`
	// Progress and ProgressRevision are absent from records stored before
	// they existed, which therefore read as nil and revision 0. Empty
	// Progress is stored as null (omitted in bolt). bolt now keeps them in
	// its progress bucket instead, and writes them here only from a set
	// aside record's revision; a bolt record holding them is from before,
	// read as they are until SaveProgress moves them.
	Progress         []byte `json:"progress,omitempty" bson:"progress"`
	ProgressRevision int64  `json:"progressRev,omitempty" bson:"progressRev"`
	// Live mirrors !Status.State.Status.Done() so Mongo can filter and
	// index on it; bolt derives it on read instead.
	Live bool `json:"-" bson:"live"`
	// Original holds, in bolt, the bytes of an unreadable record SetAside
	// replaced, for an operator to inspect; it is never decoded into a
	// Job. Being a field of the record keeps it through later rewrites
	// (SetPriority). Mongo keeps the original document in a field of the
	// same name, written by SetAside only (see asideDocument).
	Original []byte `json:"original,omitempty" bson:"-"`
}

type specRecord struct {
	Name             string `json:"name" bson:"name"`
	GPUType          string `json:"gpuType" bson:"gpuType"`
	MinWorkers       int    `json:"minWorkers" bson:"minWorkers"`
	MaxWorkers       int    `json:"maxWorkers" bson:"maxWorkers"`
	RequestedWorkers int    `json:"requestedWorkers" bson:"requestedWorkers"`
	GPUsPerWorker    int    `json:"gpusPerWorker,omitempty" bson:"gpusPerWorker,omitempty"`
	Priority         int    `json:"priority" bson:"priority"`
	Epochs           int    `json:"epochs" bson:"epochs"`
	SubmitTime       *int64 `json:"submitTime" bson:"submitTime"`
}

type statusRecord struct {
	State stateRecord     `json:"state" bson:"state"`
	Est   estimatesRecord `json:"est" bson:"est"`
	// Fit is absent for jobs without one, and in records written before
	// it was kept.
	Fit            *fitRecord  `json:"fit,omitempty" bson:"fit,omitempty"`
	Progress       storedFloat `json:"progress" bson:"progress"`
	QueuePosition  int         `json:"queuePosition" bson:"queuePosition"`
	EstimatedStart *int64      `json:"estimatedStart" bson:"estimatedStart"`
	FinishTime     *int64      `json:"finishTime" bson:"finishTime"`
	Updated        *int64      `json:"updated" bson:"updated"`
	Reason         string      `json:"reason,omitempty" bson:"reason,omitempty"`
	Message        string      `json:"message,omitempty" bson:"message,omitempty"`
	// Allocations is absent in records written before it was kept.
	Allocations []allocationRecord `json:"allocations,omitempty" bson:"allocations,omitempty"`
}

type allocationRecord struct {
	At        *int64              `json:"at" bson:"at"`
	Placement []nodeWorkersRecord `json:"placement,omitempty" bson:"placement,omitempty"`
}

type stateRecord struct {
	Status          string              `json:"status" bson:"status"`
	GPUs            int                 `json:"gpus" bson:"gpus"`
	Placement       []nodeWorkersRecord `json:"placement" bson:"placement"`
	AttainedService storedFloat         `json:"attainedService" bson:"attainedService"`
	FirstStart      *int64              `json:"firstStart" bson:"firstStart"`
	LastChange      *int64              `json:"lastChange" bson:"lastChange"`
	PrevGPUs        int                 `json:"prevGPUs,omitempty" bson:"prevGPUs,omitempty"`
	Queue           int                 `json:"queue" bson:"queue"`
	RunSeconds      storedFloat         `json:"runSeconds" bson:"runSeconds"`
	QueueSince      *int64              `json:"queueSince" bson:"queueSince"`
	QueueService    storedFloat         `json:"queueService" bson:"queueService"`
	QueueRunSeconds storedFloat         `json:"queueRunSeconds" bson:"queueRunSeconds"`
	WaitingSince    *int64              `json:"waitingSince" bson:"waitingSince"`
	Restarts        int                 `json:"restarts" bson:"restarts"`
}

type nodeWorkersRecord struct {
	Node    string `json:"node" bson:"node"`
	Workers int    `json:"workers" bson:"workers"`
}

type estimatesRecord struct {
	RemainingSeconds storedFloat   `json:"remainingSeconds" bson:"remainingSeconds"`
	Speedup          []storedFloat `json:"speedup" bson:"speedup"`
	RestartSeconds   storedFloat   `json:"restartSeconds,omitempty" bson:"restartSeconds,omitempty"`
	Batch            []int         `json:"batch,omitempty" bson:"batch,omitempty"`
}

// fitRecord is a goodput.Params as stored.
type fitRecord struct {
	AlphaC storedFloat `json:"alphaC" bson:"alphaC"`
	BetaC  storedFloat `json:"betaC" bson:"betaC"`
	AlphaR storedFloat `json:"alphaR" bson:"alphaR"`
	BetaR  storedFloat `json:"betaR" bson:"betaR"`
	AlphaN storedFloat `json:"alphaN" bson:"alphaN"`
	BetaN  storedFloat `json:"betaN" bson:"betaN"`
	Gamma  storedFloat `json:"gamma" bson:"gamma"`
}

func encodeFit(p *goodput.Params) *fitRecord {
	if p == nil {
		return nil
	}
	return &fitRecord{AlphaC: storedFloat(p.AlphaC), BetaC: storedFloat(p.BetaC), AlphaR: storedFloat(p.AlphaR),
		BetaR: storedFloat(p.BetaR), AlphaN: storedFloat(p.AlphaN), BetaN: storedFloat(p.BetaN), Gamma: storedFloat(p.Gamma)}
}

// decodeFit reads a stored fit; one that is not a valid model (a damaged
// record) reads as none, so that no reply is computed from it.
func decodeFit(r *fitRecord) *goodput.Params {
	if r == nil {
		return nil
	}
	p := goodput.Params{AlphaC: float64(r.AlphaC), BetaC: float64(r.BetaC), AlphaR: float64(r.AlphaR),
		BetaR: float64(r.BetaR), AlphaN: float64(r.AlphaN), BetaN: float64(r.BetaN), Gamma: float64(r.Gamma)}
	if !p.Valid() {
		return nil
	}
	return &p
}

// schedulerRecord is a Scheduler as stored. Settings and Status are
// written separately (PutSettings, PutStatus), each half in full.
type schedulerRecord struct {
	GPUType  string                `json:"gpuType" bson:"_id"`
	Settings settingsRecord        `json:"settings" bson:"settings"`
	Status   schedulerStatusRecord `json:"status" bson:"status"`
}

type settingsRecord struct {
	Algorithm string `json:"algorithm" bson:"algorithm"`
	// Params is a sorted list rather than a map: parameter names may hold
	// dots or dollars, which MongoDB field names must not.
	Params      []paramRecord `json:"params" bson:"params"`
	RateLimitNs int64         `json:"rateLimitNs" bson:"rateLimitNs"`
	Quotas      []quotaRecord `json:"quotas,omitempty" bson:"quotas,omitempty"`
}

type quotaRecord struct {
	Team      string  `json:"team" bson:"team"`
	Guarantee int     `json:"guarantee" bson:"guarantee"`
	Limit     int     `json:"limit" bson:"limit"`
	Weight    float64 `json:"weight" bson:"weight"`
}

type paramRecord struct {
	Key   string `json:"key" bson:"key"`
	Value string `json:"value" bson:"value"`
}

type schedulerStatusRecord struct {
	Now       *int64 `json:"now" bson:"now"`
	LastCycle *int64 `json:"lastCycle" bson:"lastCycle"`
	Cycles    int64  `json:"cycles" bson:"cycles"`
	Nodes     int    `json:"nodes" bson:"nodes"`
	GPUs      int    `json:"gpus" bson:"gpus"`
	GPUsInUse int    `json:"gpusInUse" bson:"gpusInUse"`
	Waiting   int    `json:"waiting" bson:"waiting"`
	Running   int    `json:"running" bson:"running"`
	// NodeStates is absent in records written before nodes were kept.
	NodeStates []nodeStateRecord `json:"nodeStates,omitempty" bson:"nodeStates,omitempty"`
	Teams      []teamStateRecord `json:"teams,omitempty" bson:"teams,omitempty"`
}

type teamStateRecord struct {
	Team     string `json:"team" bson:"team"`
	GPUs     int    `json:"gpus" bson:"gpus"`
	Entitled int    `json:"entitled" bson:"entitled"`
	Demand   int    `json:"demand" bson:"demand"`
	Running  int    `json:"running" bson:"running"`
	Waiting  int    `json:"waiting" bson:"waiting"`
}

type nodeStateRecord struct {
	Name     string `json:"name" bson:"name"`
	GPUs     int    `json:"gpus" bson:"gpus"`
	Cordoned bool   `json:"cordoned,omitempty" bson:"cordoned,omitempty"`
	NotReady bool   `json:"notReady,omitempty" bson:"notReady,omitempty"`
}

// storedFloat is a float64 that survives both encodings even when it is
// NaN or ±Inf, so a stray NaN in an estimate cannot make a store refuse a
// whole scheduling cycle: JSON has no such numbers, and FerretDB rejects
// NaN on the wire (closing the connection). Finite values are plain
// numbers (BSON doubles); the others are the strings "NaN", "+Inf" and
// "-Inf".
type storedFloat float64

// nonFinite returns f's string form if it is NaN or ±Inf.
func (f storedFloat) nonFinite() (string, bool) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

// MarshalJSON writes finite values as numbers, others as strings.
func (f storedFloat) MarshalJSON() ([]byte, error) {
	if s, ok := f.nonFinite(); ok {
		return strconv.AppendQuote(nil, s), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *storedFloat) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return fmt.Errorf("float %s: %w", b, err)
		}
	}
	return f.parse(s)
}

// MarshalBSONValue writes finite values as doubles, others as strings.
func (f storedFloat) MarshalBSONValue() (byte, []byte, error) {
	var v any = float64(f)
	if s, ok := f.nonFinite(); ok {
		v = s
	}
	t, b, err := bson.MarshalValue(v)
	return byte(t), b, err
}

// UnmarshalBSONValue reads what MarshalBSONValue writes, and any other
// number.
func (f *storedFloat) UnmarshalBSONValue(typ byte, data []byte) error {
	switch bson.Type(typ) {
	case bson.TypeNull:
		return nil
	case bson.TypeString:
		var s string
		if err := bson.UnmarshalValue(bson.Type(typ), data, &s); err != nil {
			return err
		}
		return f.parse(s)
	}
	var v float64
	if err := bson.UnmarshalValue(bson.Type(typ), data, &v); err != nil {
		return err
	}
	*f = storedFloat(v)
	return nil
}

func (f *storedFloat) parse(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("float %q: %w", s, err)
	}
	*f = storedFloat(v)
	return nil
}

// Bounds of the times a record can hold: int64 unix nanoseconds.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// encoder converts values into records, keeping the first error so the
// conversions below read as plain field assignments.
type encoder struct{ err error }

// time returns t as unix nanoseconds, or nil for the zero time.
func (e *encoder) time(field string, t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		if e.err == nil {
			e.err = fmt.Errorf("%s: time %s outside the storable range [%s, %s]",
				field, t.Format(time.RFC3339Nano), minTime.UTC().Format(time.RFC3339), maxTime.UTC().Format(time.RFC3339))
		}
		return nil
	}
	n := t.UnixNano()
	return &n
}

// decodeTime is the inverse of encoder.time.
func decodeTime(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

func encodeJob(j Job) (jobRecord, error) {
	var e encoder
	r := jobRecord{
		Name:             j.Name,
		Kind:             string(j.Kind),
		Namespace:        j.Namespace,
		Manifest:         nilIfEmpty(j.Manifest),
		Spec:             e.spec(j.Spec),
		Model:            j.Model,
		Application:      j.Application,
		ProgressLog:      j.ProgressLog,
		DeleteRequested:  j.DeleteRequested,
		Status:           e.status(j.Status),
		StatusRevision:   j.StatusRevision,
		Progress:         nilIfEmpty(j.Progress),
		ProgressRevision: j.ProgressRevision,
	}
	r.Live = r.Status.live()
	if e.err == nil {
		e.err = checkProgressSize("progress", j.Progress)
	}
	return r, e.err
}

func decodeJob(r jobRecord) Job {
	ns := r.Namespace
	if ns == "" {
		ns = manifestNamespace(r.Manifest)
	}
	return Job{
		Name:             r.Name,
		Kind:             jobspec.Kind(r.Kind),
		Namespace:        ns,
		Manifest:         nilIfEmpty(r.Manifest),
		Spec:             decodeSpec(r.Spec),
		Model:            r.Model,
		Application:      r.Application,
		ProgressLog:      r.ProgressLog,
		DeleteRequested:  r.DeleteRequested,
		Status:           decodeStatus(r.Status),
		StatusRevision:   r.StatusRevision,
		Progress:         nilIfEmpty(r.Progress),
		ProgressRevision: r.ProgressRevision,
	}
}

// checkProgressSize refuses data longer than MaxProgressBytes.
func checkProgressSize(what string, data []byte) error {
	if len(data) > MaxProgressBytes {
		return fmt.Errorf("%s of %d bytes is over the limit of %d bytes (MaxProgressBytes)", what, len(data), MaxProgressBytes)
	}
	return nil
}

// checkHistory refuses what SaveHistory cannot store.
func checkHistory(gpuType string, data []byte) error {
	if gpuType == "" {
		return errors.New("empty GPU type")
	}
	return checkProgressSize("history", data)
}

// historyKey is the key of application app's history on gpuType:
// typePrefix(gpuType), then the application. Distinct pairs have distinct
// keys.
func historyKey(gpuType, app string) string { return typePrefix(gpuType) + app }

// typePrefix starts the keys that belong to gpuType (its histories; in
// bolt, its live jobs): the GPU type path-escaped, so it holds no "/",
// then "/". No GPU type's prefix is a prefix of another's, and only the
// empty GPU type's starts with "/".
func typePrefix(gpuType string) string { return url.PathEscape(gpuType) + "/" }

// manifestNamespace is a JSON manifest's metadata.namespace, or empty.
func manifestNamespace(manifest []byte) string {
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(manifest, &m) != nil {
		return ""
	}
	return m.Metadata.Namespace
}

func (e *encoder) spec(s model.JobSpec) specRecord {
	return specRecord{
		Name:             s.Name,
		GPUType:          s.GPUType,
		MinWorkers:       s.MinWorkers,
		MaxWorkers:       s.MaxWorkers,
		RequestedWorkers: s.RequestedWorkers,
		GPUsPerWorker:    s.GPUsPerWorker,
		Priority:         s.Priority,
		Epochs:           s.Epochs,
		SubmitTime:       e.time("spec.submitTime", s.SubmitTime),
	}
}

func decodeSpec(r specRecord) model.JobSpec {
	return model.JobSpec{
		Name:             r.Name,
		GPUType:          r.GPUType,
		MinWorkers:       r.MinWorkers,
		MaxWorkers:       r.MaxWorkers,
		RequestedWorkers: r.RequestedWorkers,
		GPUsPerWorker:    r.GPUsPerWorker,
		Priority:         r.Priority,
		Epochs:           r.Epochs,
		SubmitTime:       decodeTime(r.SubmitTime),
	}
}

// encodeStatus converts a status on its own, for SaveStatus.
func encodeStatus(s JobStatus) (statusRecord, error) {
	var e encoder
	r := e.status(s)
	return r, e.err
}

// encodeStatuses converts every status, failing on the first bad one in
// name order so the error does not depend on map order. It also returns
// the names in order.
func encodeStatuses(writes map[string]StatusWrite) ([]string, map[string]statusRecord, error) {
	names := slices.Sorted(maps.Keys(writes))
	recs := make(map[string]statusRecord, len(writes))
	for _, name := range names {
		rec, err := encodeStatus(writes[name].Status)
		if err != nil {
			return nil, nil, fmt.Errorf("job %s: %w", name, err)
		}
		recs[name] = rec
	}
	return names, recs, nil
}

// writable reports whether a status write over rec with the given base
// revision is allowed: the status is not terminal (a terminal status is
// final) and the revision is the one the writer read.
func (r jobRecord) writable(revision int64) bool {
	return r.Status.live() && r.StatusRevision == revision
}

// setAside turns rec into a Failed job set aside for reason at now (see
// Store.SetAside); the caller has checked its status is not terminal.
func (r *jobRecord) setAside(reason string, now *int64) {
	st := &r.Status
	if st.State.GPUs > 0 || len(st.State.Placement) > 0 {
		// The core's LastChange is when the GPU count last changed, and
		// it changes now.
		st.State.LastChange = now
		st.State.PrevGPUs = st.State.GPUs
		if len(st.Allocations) >= MaxAllocations {
			st.Allocations = st.Allocations[len(st.Allocations)-MaxAllocations+1:]
		}
		st.Allocations = append(st.Allocations, allocationRecord{At: now})
	}
	st.State.Status = string(model.StatusFailed)
	st.State.GPUs = 0
	st.State.Placement = nil
	// Both are documented as zero for a job that is not waiting.
	st.QueuePosition = 0
	st.EstimatedStart = nil
	st.FinishTime = now
	st.Updated = now
	st.Reason = ReasonUnrestorable
	st.Message = reason
	r.StatusRevision++
	r.Live = false
}

// partialJob is what can still be read of a record that does not decode:
// each of the other fields is empty where it could not be read.
type partialJob struct {
	Name           string
	Why            string
	GPUType        string
	Status         model.Status
	StatusRevision int64
	// ProgressRevision is kept by SetAside so that it never goes back.
	ProgressRevision int64
	// SubmitTime places the record in ListJobs' order; FinishTime, if
	// its status is terminal, in ListFinished's.
	SubmitTime *int64
	FinishTime *int64
}

// job is the Job GetJob and ListJobs return for the record.
func (p partialJob) job() Job {
	return Job{
		Name:       p.Name,
		Spec:       model.JobSpec{Name: p.Name, GPUType: p.GPUType, SubmitTime: decodeTime(p.SubmitTime)},
		Status:     JobStatus{State: model.JobState{Status: p.Status}},
		Unreadable: p.Why,
	}
}

// asideRecord is the record SetAside stores in place of the unreadable
// one: its name, what could be read that a scheduler or a user needs
// (the GPU type, so the job lists under its type, and the submit time,
// so it keeps its place in the list), and a status saying why it was set
// aside. The revision continues from the stored one when it could be
// read.
func (p partialJob) asideRecord(reason string, now *int64) jobRecord {
	r := jobRecord{
		Name:           p.Name,
		Spec:           specRecord{Name: p.Name, GPUType: p.GPUType, SubmitTime: p.SubmitTime},
		StatusRevision: p.StatusRevision,
		// The progress is dropped (it is in the original), but a writer
		// holding an older revision must still conflict.
		ProgressRevision: p.ProgressRevision,
	}
	r.setAside(reason, now)
	return r
}

// live reports whether the status is not terminal.
func (r statusRecord) live() bool { return !model.Status(r.State.Status).Done() }

func (e *encoder) status(s JobStatus) statusRecord {
	return statusRecord{
		State:          e.state(s.State),
		Est:            encodeEstimates(s.Est),
		Fit:            encodeFit(s.Fit),
		Progress:       storedFloat(s.Progress),
		QueuePosition:  s.QueuePosition,
		EstimatedStart: e.time("status.estimatedStart", s.EstimatedStart),
		FinishTime:     e.time("status.finishTime", s.FinishTime),
		Updated:        e.time("status.updated", s.Updated),
		Reason:         s.Reason,
		Message:        s.Message,
		Allocations:    e.allocations(s.Allocations),
	}
}

func (e *encoder) allocations(h []Allocation) []allocationRecord {
	if len(h) == 0 {
		return nil
	}
	if len(h) > MaxAllocations {
		if e.err == nil {
			e.err = fmt.Errorf("status.allocations: %d entries, at most %d", len(h), MaxAllocations)
		}
		return nil
	}
	r := make([]allocationRecord, len(h))
	for i, a := range h {
		r[i] = allocationRecord{At: e.time("status.allocations.at", a.At), Placement: encodePlacement(a.Placement)}
	}
	return r
}

func decodeAllocations(r []allocationRecord) []Allocation {
	if len(r) == 0 {
		return nil
	}
	h := make([]Allocation, len(r))
	for i, a := range r {
		h[i] = Allocation{At: decodeTime(a.At), Placement: decodePlacement(a.Placement)}
	}
	return h
}

func decodeStatus(r statusRecord) JobStatus {
	return JobStatus{
		State:          decodeState(r.State),
		Est:            decodeEstimates(r.Est),
		Fit:            decodeFit(r.Fit),
		Progress:       float64(r.Progress),
		QueuePosition:  r.QueuePosition,
		EstimatedStart: decodeTime(r.EstimatedStart),
		FinishTime:     decodeTime(r.FinishTime),
		Updated:        decodeTime(r.Updated),
		Reason:         r.Reason,
		Message:        r.Message,
		Allocations:    decodeAllocations(r.Allocations),
	}
}

func (e *encoder) state(s model.JobState) stateRecord {
	return stateRecord{
		Status:          string(s.Status),
		GPUs:            s.GPUs,
		Placement:       encodePlacement(s.Placement),
		AttainedService: storedFloat(s.AttainedService),
		FirstStart:      e.time("status.state.firstStart", s.FirstStart),
		LastChange:      e.time("status.state.lastChange", s.LastChange),
		PrevGPUs:        s.PrevGPUs,
		Queue:           s.Queue,
		RunSeconds:      storedFloat(s.RunSeconds),
		QueueSince:      e.time("status.state.queueSince", s.QueueSince),
		QueueService:    storedFloat(s.QueueService),
		QueueRunSeconds: storedFloat(s.QueueRunSeconds),
		WaitingSince:    e.time("status.state.waitingSince", s.WaitingSince),
		Restarts:        s.Restarts,
	}
}

func decodeState(r stateRecord) model.JobState {
	return model.JobState{
		Status:          model.Status(r.Status),
		GPUs:            r.GPUs,
		Placement:       decodePlacement(r.Placement),
		AttainedService: float64(r.AttainedService),
		FirstStart:      decodeTime(r.FirstStart),
		LastChange:      decodeTime(r.LastChange),
		PrevGPUs:        max(r.PrevGPUs, 0),
		Queue:           r.Queue,
		RunSeconds:      float64(r.RunSeconds),
		QueueSince:      decodeTime(r.QueueSince),
		QueueService:    float64(r.QueueService),
		QueueRunSeconds: float64(r.QueueRunSeconds),
		WaitingSince:    decodeTime(r.WaitingSince),
		Restarts:        r.Restarts,
	}
}

func encodePlacement(p model.JobPlacement) []nodeWorkersRecord {
	if len(p) == 0 {
		return nil
	}
	r := make([]nodeWorkersRecord, len(p))
	for i, nw := range p {
		r[i] = nodeWorkersRecord{Node: nw.Node, Workers: nw.Workers}
	}
	return r
}

func decodePlacement(r []nodeWorkersRecord) model.JobPlacement {
	if len(r) == 0 {
		return nil
	}
	p := make(model.JobPlacement, len(r))
	for i, nw := range r {
		p[i] = model.NodeWorkers{Node: nw.Node, Workers: nw.Workers}
	}
	return p
}

func encodeEstimates(est model.Estimates) estimatesRecord {
	r := estimatesRecord{RemainingSeconds: storedFloat(est.RemainingSeconds), RestartSeconds: storedFloat(est.RestartSeconds)}
	if len(est.Batch) > 0 {
		r.Batch = slices.Clone(est.Batch)
	}
	if len(est.Speedup) > 0 {
		r.Speedup = make([]storedFloat, len(est.Speedup))
		for i, v := range est.Speedup {
			r.Speedup[i] = storedFloat(v)
		}
	}
	return r
}

func decodeEstimates(r estimatesRecord) model.Estimates {
	est := model.Estimates{RemainingSeconds: float64(r.RemainingSeconds), RestartSeconds: float64(r.RestartSeconds)}
	if len(r.Batch) > 0 {
		est.Batch = slices.Clone(r.Batch)
	}
	if len(r.Speedup) > 0 {
		est.Speedup = make([]float64, len(r.Speedup))
		for i, v := range r.Speedup {
			est.Speedup[i] = float64(v)
		}
	}
	return est
}

func encodeSettings(s Settings) settingsRecord {
	r := settingsRecord{Algorithm: s.Algorithm, RateLimitNs: int64(s.RateLimit)}
	for k, v := range s.Params {
		r.Params = append(r.Params, paramRecord{Key: k, Value: v})
	}
	slices.SortFunc(r.Params, func(a, b paramRecord) int { return strings.Compare(a.Key, b.Key) })
	for _, q := range s.Quotas {
		r.Quotas = append(r.Quotas, quotaRecord{Team: q.Team, Guarantee: q.Guarantee, Limit: q.Limit, Weight: q.Weight})
	}
	slices.SortFunc(r.Quotas, func(a, b quotaRecord) int { return strings.Compare(a.Team, b.Team) })
	return r
}

func decodeSettings(r settingsRecord) Settings {
	s := Settings{Algorithm: r.Algorithm, RateLimit: time.Duration(r.RateLimitNs)}
	if len(r.Params) > 0 {
		s.Params = make(map[string]string, len(r.Params))
		for _, p := range r.Params {
			s.Params[p.Key] = p.Value
		}
	}
	for _, q := range r.Quotas {
		s.Quotas = append(s.Quotas, model.Quota{Team: q.Team, Guarantee: q.Guarantee, Limit: q.Limit, Weight: q.Weight})
	}
	return s
}

func encodeSchedulerStatus(s SchedulerStatus) (schedulerStatusRecord, error) {
	var e encoder
	r := schedulerStatusRecord{
		Now:       e.time("status.now", s.Now),
		LastCycle: e.time("status.lastCycle", s.LastCycle),
		Cycles:    s.Cycles,
		Nodes:     s.Nodes,
		GPUs:      s.GPUs,
		GPUsInUse: s.GPUsInUse,
		Waiting:   s.Waiting,
		Running:   s.Running,
	}
	for _, t := range s.Teams {
		r.Teams = append(r.Teams, teamStateRecord(t))
	}
	for _, n := range s.NodeStates {
		r.NodeStates = append(r.NodeStates, nodeStateRecord(n))
	}
	return r, e.err
}

func decodeSchedulerStatus(r schedulerStatusRecord) SchedulerStatus {
	var nodes []NodeState
	for _, n := range r.NodeStates {
		nodes = append(nodes, NodeState(n))
	}
	var teams []TeamState
	for _, t := range r.Teams {
		teams = append(teams, TeamState(t))
	}
	return SchedulerStatus{
		Teams:      teams,
		NodeStates: nodes,
		Now:        decodeTime(r.Now),
		LastCycle:  decodeTime(r.LastCycle),
		Cycles:     r.Cycles,
		Nodes:      r.Nodes,
		GPUs:       r.GPUs,
		GPUsInUse:  r.GPUsInUse,
		Waiting:    r.Waiting,
		Running:    r.Running,
	}
}

func decodeScheduler(r schedulerRecord) Scheduler {
	return Scheduler{
		GPUType:  r.GPUType,
		Settings: decodeSettings(r.Settings),
		Status:   decodeSchedulerStatus(r.Status),
	}
}

// matches reports whether ListJobs keeps j. An unreadable job's GPU type
// or status is empty when it could not be read; see ListOptions.
func (o ListOptions) matches(j Job) bool {
	if o.GPUType != "" && j.Spec.GPUType != o.GPUType && (j.Unreadable == "" || j.Spec.GPUType != "") {
		return false
	}
	return !o.Live || !j.Status.State.Status.Done()
}

// check refuses options ListJobs cannot serve.
func (o ListOptions) check() error {
	if o.Limit < 0 {
		return fmt.Errorf("negative limit %d", o.Limit)
	}
	return nil
}

// checkFinishedLimit refuses a ListFinished limit that is not positive.
func checkFinishedLimit(limit int) error {
	if limit <= 0 {
		return fmt.Errorf("limit %d, want a positive one", limit)
	}
	return nil
}

// checkDeleteFinished refuses more names than one DeleteFinished call
// takes.
func checkDeleteFinished(names []string) error {
	if len(names) > MaxDeleteFinished {
		return fmt.Errorf("%d names, more than the %d of one call (MaxDeleteFinished)", len(names), MaxDeleteFinished)
	}
	return nil
}

// paged reports whether o asks for a page rather than every match.
func (o ListOptions) paged() bool { return o.Limit > 0 || o.After != (Position{}) }

// stored returns p as the stored values ListJobs compares with: the
// submit time (nil for the zero time) and the name after which jobs are
// listed. A time before the zero time becomes the zero time with no
// name, which every job follows; one before the storable range becomes
// its start with no name, which every stored time but the zero time
// follows; none reports a time past the range, which no job follows.
func (p Position) stored() (submit *int64, name string, none bool) {
	switch {
	case p.SubmitTime.IsZero():
		return nil, p.Name, false
	case p.SubmitTime.Before(time.Time{}):
		return nil, "", false
	case p.SubmitTime.Before(minTime):
		n := int64(math.MinInt64)
		return &n, "", false
	case p.SubmitTime.After(maxTime):
		return nil, "", true
	}
	n := p.SubmitTime.UnixNano()
	return &n, p.Name, false
}

// jobBefore orders jobs as ListJobs returns them: by submit time, then name.
func jobBefore(a, b Job) int {
	if c := a.Spec.SubmitTime.Compare(b.Spec.SubmitTime); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
