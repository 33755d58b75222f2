package eventhub

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/store"
)

// Defaults of Limits.
const (
	DefaultMaxStreams          = 100
	DefaultMaxStreamsPerCaller = 10
	DefaultStreamBuffer        = 1024
	DefaultStreamPoll          = time.Second
	DefaultHeartbeat           = 15 * time.Second
)

// minPollGap is the least time between two polls: a burst of writes
// through this replica (Kick) polls at most this often.
const minPollGap = 100 * time.Millisecond

// FullPollEvery is how many polls may go by without reading the jobs,
// when nothing says they changed (see mark).
const FullPollEvery = 5

// Events of the stream (docs/api.md).
const (
	EventSnapshot  = "snapshot"
	EventJob       = "job"
	EventNodes     = "nodes"
	EventScheduler = "scheduler"
)

// Limits bound the event streams; zero fields take the defaults.
type Limits struct {
	// MaxStreams is the most streams open at once (per API replica);
	// more are answered 503.
	MaxStreams int
	// MaxPerCaller is the most streams one caller may hold open at once
	// (per API replica): one user, or without authentication one client
	// address (an IPv6 /64); more are answered 429, so that one caller
	// cannot take every one of MaxStreams.
	MaxPerCaller int
	// Buffer is the most events queued for one stream; a client that
	// falls further behind is disconnected, and reconnects to a new
	// snapshot.
	Buffer int
	// Poll is the time between two reads of the store that find the
	// changes, shared by every stream of the replica.
	Poll time.Duration
	// Heartbeat is the time between two comment lines that keep an idle
	// stream's connection open; the caller's rights are asked again at
	// each. The hub does not use it; the API's stream handler does.
	Heartbeat time.Duration
}

// WithDefaults is l with the defaults in its zero fields.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxStreams, DefaultMaxStreams)
	def(&l.MaxPerCaller, DefaultMaxStreamsPerCaller)
	def(&l.Buffer, DefaultStreamBuffer)
	if l.Poll <= 0 {
		l.Poll = DefaultStreamPoll
	}
	if l.Heartbeat <= 0 {
		l.Heartbeat = DefaultHeartbeat
	}
	return l
}

// Errors of Subscribe.
var (
	ErrTooManyStreams = errors.New("too many event streams")
	ErrCallerStreams  = errors.New("too many event streams of this caller")
	ErrClosed         = errors.New("the server is shutting down")
)

// Scope is a namespace and a kind: what the API's Authorizer decides a
// list of jobs on, and so what decides which streams see a job.
type Scope struct{ Namespace, Kind string }

// Compare orders scopes by namespace, then kind.
func (s Scope) Compare(o Scope) int {
	return cmp.Or(cmp.Compare(s.Namespace, o.Namespace), cmp.Compare(s.Kind, o.Kind))
}

// Frame is one event, encoded once for every stream that may see it.
type Frame struct {
	Event string
	Data  []byte
	// Scope is a job frame's job's: who may see it.
	Scope Scope
	// Nodes is a nodes frame's state, which the API redacts for callers
	// who may not see every job named.
	Nodes *Nodes
}

// Job is a live job as the hub last sent it. It is never changed once
// made (a change makes a new one), so snapshots share it.
type Job struct {
	Name   string
	Scope  Scope
	Submit time.Time
	// Event is the job event's payload, {"job":VIEW}; View is the VIEW
	// within it: one encoding for the event and every snapshot.
	Event, View []byte
	// Extra is the Renderer's own, handed back to Renderer.Nodes.
	Extra any

	print jobPrint
}

// Nodes is one GPU type's nodes as the hub last sent them.
type Nodes struct {
	GPUType string
	Data    []byte
	// Scopes are those of the jobs named, sorted and without repeats.
	Scopes []Scope
	// Extra is the Renderer's own: what it needs to redact Data.
	Extra any
}

// Rendered is a job's view as the Renderer encodes it.
type Rendered struct {
	View  []byte
	Scope Scope
	Extra any
}

// Renderer encodes what the streams send: the API's wire views. A
// method that fails logs why; the hub leaves that item out.
type Renderer interface {
	// Algorithm is the algorithm a job's view names under rec, its GPU
	// type's scheduler record: a change of it changes the view.
	Algorithm(rec store.Scheduler) string
	// Job encodes j's view as of now.
	Job(j store.Job, algorithm string, now time.Time) (Rendered, error)
	// Deleted encodes the event of a job removed from the store.
	Deleted(name string, sc Scope) ([]byte, error)
	// Nodes encodes each GPU type's nodes with the live jobs' workers on
	// them (jobs in no order; it must not keep the slice).
	Nodes(recs map[string]store.Scheduler, jobs []*Job) []*Nodes
	// Scheduler encodes a GPU type's scheduler, and its key: the same
	// without what changes by itself (the clock), to compare.
	Scheduler(rec store.Scheduler) (data, key []byte, err error)
}

// Store is what the hub reads; store.Store has it.
type Store interface {
	ListSchedulers(ctx context.Context) ([]store.Scheduler, error)
	CountJobs(ctx context.Context) (live, finished int, err error)
	ListJobs(ctx context.Context, opts store.ListOptions) ([]store.Job, error)
	GetJob(ctx context.Context, name string) (store.Job, error)
}

// Config configures a Hub; all but Limits and Logger are required.
type Config struct {
	Store    Store
	Render   Renderer
	Clock    clock.PassiveClock
	GPUTypes []string
	Limits   Limits
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
}

// jobPrint is what a job's view depends on besides the time: a job whose
// print is unchanged is not sent again.
type jobPrint struct {
	status, progress int64
	priority         int
	deleteRequested  bool
	algorithm        string
	unreadable       string
}

// Subscriber is one open stream.
type Subscriber struct {
	// caller is who the stream counts against (Limits.MaxPerCaller).
	caller string
	ch     chan *Frame
	// gone is closed when the hub drops the stream (too slow, or the
	// server is shutting down).
	gone chan struct{}
}

// Frames are the stream's events, in order.
func (s *Subscriber) Frames() <-chan *Frame { return s.ch }

// Gone is closed when the hub has dropped the stream: it fell too far
// behind, or the hub closed.
func (s *Subscriber) Gone() <-chan struct{} { return s.gone }

// Hub finds the changes of the live jobs, the nodes and the schedulers
// with one poll of the store per replica, however many streams are open,
// encodes each change once and hands it to every stream. It keeps only
// the live jobs: each poll lists them (the store reads them from an
// index, whatever the number of finished jobs) and reads once more each
// job that left the list, to send its final state or its removal. It
// polls only while a stream is open, and forgets everything when the
// last one closes.
type Hub struct {
	cfg Config
	lim Limits
	log *slog.Logger

	mu      sync.Mutex
	subs    map[*Subscriber]struct{}
	callers map[string]int // open streams by caller
	closed  bool
	// gen counts loads of the state; a poll of an older generation is
	// discarded. stop ends the running poller (nil when none); loading
	// is closed when the load under way ends (nil when none).
	gen     int
	stop    context.CancelFunc
	loading chan struct{}
	// kicked asks the poller to poll now (one slot: kicks coalesce).
	kicked chan struct{}
	// The state as of the last poll applied: the live jobs, and order,
	// the same by submit time and name for snapshots (nil until a
	// snapshot needs it after a change).
	jobs       map[string]*Job
	order      []*Job
	nodes      map[string]*Nodes
	schedulers map[string][]byte // GPU type -> Scheduler view, JSON
	schedKeys  map[string]string // the same without the clock, to compare
}

// New makes a hub; it polls once the first stream opens.
func New(cfg Config) (*Hub, error) {
	if cfg.Store == nil || cfg.Render == nil || cfg.Clock == nil || cfg.Metrics == nil {
		return nil, errors.New("eventhub: store, renderer, clock and metrics are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{cfg: cfg, lim: cfg.Limits.WithDefaults(), log: log, subs: map[*Subscriber]struct{}{},
		callers: map[string]int{}, kicked: make(chan struct{}, 1)}
	h.reset()
	return h, nil
}

// Limits are the hub's limits, defaults filled in.
func (h *Hub) Limits() Limits { return h.lim }

// reset forgets the state. Under h.mu (or before h is shared).
func (h *Hub) reset() {
	h.jobs, h.order = map[string]*Job{}, nil
	h.nodes, h.schedulers, h.schedKeys = map[string]*Nodes{}, map[string][]byte{}, map[string]string{}
}

// poll is what one read of the store found.
type poll struct {
	gen int
	// mark is what the read found besides the jobs; skip is set when it
	// read no job, as nothing said they changed.
	mark mark
	skip bool
	jobs []store.Job // the live jobs
	// left are the jobs that were live and are not listed live any
	// more: as read again, nil when gone from the store.
	left map[string]*store.Job
}

// mark is what a poll reads before the jobs, cheaply: the scheduler
// records (settings, and the status each scheduler writes after every
// cycle, which is when it writes jobs' statuses) and how many jobs are
// live and finished (which a job's creation, end or removal changes).
// When they are as the last read of the jobs found them, the jobs can
// have changed only by a write the scheduler's next cycle follows (a
// priority, a deletion) or none does (a progress report): a write
// through this replica kicks the poller, and the jobs are read at least
// every FullPollEvery polls anyway.
type mark struct {
	recs           map[string]store.Scheduler
	live, finished int
}

func (m mark) equal(o mark) bool {
	// The records come from the same decoder: equal values are equal
	// field by field, times included.
	return m.live == o.live && m.finished == o.finished && reflect.DeepEqual(m.recs, o.recs)
}

// read reads the store: the mark, and unless it is last's and not
// force, the live jobs and again those the hub holds that are not among
// them.
func (h *Hub) read(ctx context.Context, gen int, last *mark, force bool) (*poll, error) {
	p := &poll{gen: gen, left: map[string]*store.Job{}}
	recs, err := h.cfg.Store.ListSchedulers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read schedulers: %w", err)
	}
	p.mark.recs = make(map[string]store.Scheduler, len(recs))
	for _, r := range recs {
		p.mark.recs[r.GPUType] = r
	}
	if p.mark.live, p.mark.finished, err = h.cfg.Store.CountJobs(ctx); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	if !force && last != nil && p.mark.equal(*last) {
		p.skip = true
		return p, nil
	}
	if p.jobs, err = h.cfg.Store.ListJobs(ctx, store.ListOptions{Live: true}); err != nil {
		return nil, fmt.Errorf("list live jobs: %w", err)
	}
	listed := make(map[string]bool, len(p.jobs))
	for _, j := range p.jobs {
		listed[j.Name] = true
	}
	h.mu.Lock()
	var was []string
	for name := range h.jobs {
		if !listed[name] {
			was = append(was, name)
		}
	}
	h.mu.Unlock()
	for _, name := range was {
		j, err := h.cfg.Store.GetJob(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			p.left[name] = nil
		case err != nil:
			return nil, fmt.Errorf("read job %s: %w", name, err)
		default:
			p.left[name] = &j
		}
	}
	return p, nil
}

// apply brings the state in line with p and sends every change to the
// streams. Under h.mu.
func (h *Hub) apply(p *poll) {
	if p.gen != h.gen || p.skip {
		return
	}
	recs, now := p.mark.recs, h.cfg.Clock.Now()
	for _, j := range p.jobs {
		if e := h.entry(j, recs, now); e != nil {
			h.jobs[j.Name] = e
		}
	}
	// A job that left the live list finished (a terminal status is
	// final) or was removed: its last event, and the hub forgets it.
	for _, name := range slices.Sorted(maps.Keys(p.left)) {
		if j := p.left[name]; j != nil {
			delete(h.jobs, name) // so that entry sends it, whatever changed
			h.entry(*j, recs, now)
		} else {
			h.removed(name)
			delete(h.jobs, name)
		}
		h.order = nil
	}
	h.applyNodes(recs)
	h.applySchedulers(recs)
}

// entry encodes j and sends its event when its print differs from the
// one sent last, and returns its new entry; nil when unchanged (or when
// it cannot be encoded). Under h.mu.
func (h *Hub) entry(j store.Job, recs map[string]store.Scheduler, now time.Time) *Job {
	algo := h.cfg.Render.Algorithm(recs[j.Spec.GPUType])
	pr := jobPrint{status: j.StatusRevision, progress: j.ProgressRevision, priority: j.Spec.Priority,
		deleteRequested: j.DeleteRequested, algorithm: algo, unreadable: j.Unreadable}
	if e, ok := h.jobs[j.Name]; ok && e.print == pr {
		return nil
	}
	r, err := h.cfg.Render.Job(j, algo, now)
	if err != nil {
		return nil
	}
	event := concat(`{"job":`, r.View, `}`)
	e := &Job{print: pr, Event: event, View: event[len(`{"job":`) : len(event)-1], Name: j.Name,
		Scope: r.Scope, Submit: j.Spec.SubmitTime, Extra: r.Extra}
	h.order = nil
	h.send(&Frame{Event: EventJob, Data: e.Event, Scope: e.Scope})
	return e
}

// removed sends the removal of a job the hub holds. Under h.mu.
func (h *Hub) removed(name string) {
	e, ok := h.jobs[name]
	if !ok {
		return
	}
	data, err := h.cfg.Render.Deleted(name, e.Scope)
	if err != nil {
		return
	}
	h.send(&Frame{Event: EventJob, Data: data, Scope: e.Scope})
}

func (h *Hub) applyNodes(recs map[string]store.Scheduler) {
	for _, ns := range h.cfg.Render.Nodes(recs, slices.Collect(maps.Values(h.jobs))) {
		if old, ok := h.nodes[ns.GPUType]; ok && bytes.Equal(old.Data, ns.Data) {
			continue
		}
		h.nodes[ns.GPUType] = ns
		h.send(&Frame{Event: EventNodes, Data: ns.Data, Nodes: ns})
	}
}

func (h *Hub) applySchedulers(recs map[string]store.Scheduler) {
	for _, t := range h.cfg.GPUTypes {
		rec := recs[t]
		rec.GPUType = t
		data, key, err := h.cfg.Render.Scheduler(rec)
		if err != nil || h.schedKeys[t] == string(key) {
			continue
		}
		h.schedKeys[t], h.schedulers[t] = string(key), data
		h.send(&Frame{Event: EventScheduler, Data: data})
	}
}

// send hands f to every stream without waiting: a stream whose buffer is
// full is dropped. Under h.mu.
func (h *Hub) send(f *Frame) {
	for sub := range h.subs {
		select {
		case sub.ch <- f:
		default:
			h.log.Warn("event stream too slow; disconnected", "buffer", h.lim.Buffer)
			h.cfg.Metrics.EventStreamsDropped.Inc()
			h.drop(sub)
		}
	}
}

// drop ends a stream; the last one stops the poller, and the hub forgets
// its state until the next stream. Under h.mu.
func (h *Hub) drop(sub *Subscriber) {
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	if h.callers[sub.caller]--; h.callers[sub.caller] <= 0 {
		delete(h.callers, sub.caller)
	}
	close(sub.gone)
	h.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	h.stopIfIdle()
}

// stopIfIdle stops the poller when no stream is open, and forgets the
// state. Under h.mu.
func (h *Hub) stopIfIdle() {
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
		h.reset()
	}
}

// Snapshot is the state a new stream starts from. Its parts are shared
// with the hub and other streams, and never changed.
type Snapshot struct {
	Now        time.Time
	Jobs       []*Job // by submit time, then name
	Nodes      []*Nodes
	Schedulers [][]byte
}

// admit says why a new stream of caller may not open, if it may not.
// Under h.mu.
func (h *Hub) admit(caller string) error {
	switch {
	case h.closed:
		return ErrClosed
	case len(h.subs) >= h.lim.MaxStreams:
		return ErrTooManyStreams
	case h.callers[caller] >= h.lim.MaxPerCaller:
		return ErrCallerStreams
	}
	return nil
}

// Subscribe opens a stream of caller: when no poller runs (the first
// stream), it reads the store itself, or waits for the stream that
// does, and starts one; then it returns the stream and its snapshot.
// The caller must Leave the stream when done with it.
func (h *Hub) Subscribe(ctx context.Context, caller string) (*Subscriber, *Snapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.stop == nil {
		if err := h.admit(caller); err != nil {
			return nil, nil, err
		}
		if wait := h.loading; wait != nil {
			h.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
			}
			h.mu.Lock()
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			continue
		}
		h.gen++
		gen, done := h.gen, make(chan struct{})
		h.loading = done
		h.mu.Unlock()
		p, err := h.read(ctx, gen, nil, true)
		h.mu.Lock()
		h.loading = nil
		close(done)
		if err != nil {
			return nil, nil, err
		}
		if h.closed {
			return nil, nil, ErrClosed
		}
		h.reset()
		h.apply(p)
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.stop = cancel
		go h.run(pctx, gen, p.mark)
	}
	if err := h.admit(caller); err != nil {
		h.stopIfIdle()
		return nil, nil, err
	}
	sub := &Subscriber{caller: caller, ch: make(chan *Frame, h.lim.Buffer), gone: make(chan struct{})}
	h.subs[sub] = struct{}{}
	h.callers[caller]++
	h.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	if h.order == nil {
		h.order = slices.SortedFunc(maps.Values(h.jobs), func(a, b *Job) int {
			return cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(a.Name, b.Name))
		})
	}
	snap := &Snapshot{Now: h.cfg.Clock.Now(), Jobs: h.order}
	for _, t := range h.cfg.GPUTypes {
		if n, ok := h.nodes[t]; ok {
			snap.Nodes = append(snap.Nodes, n)
		}
		if d, ok := h.schedulers[t]; ok {
			snap.Schedulers = append(snap.Schedulers, d)
		}
	}
	return sub, snap, nil
}

// Subscribers is the number of open streams.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Held names the live jobs the hub holds, sorted.
func (h *Hub) Held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.jobs))
}

// Leave ends a stream whose client went away.
func (h *Hub) Leave(sub *Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(sub)
}

// Kick makes the poller poll soon: a write through this replica (a
// submission, a deletion, a setting) shows without waiting for the next
// poll. The scheduler's writes wait for it.
func (h *Hub) Kick() {
	select {
	case h.kicked <- struct{}{}:
	default:
	}
}

// run polls the store every Poll, and when kicked, until ctx ends. A
// poll reads the jobs when kicked, when the mark differs from the last
// read of the jobs (loaded, at first), or when FullPollEvery polls went
// by without.
func (h *Hub) run(ctx context.Context, gen int, loaded mark) {
	t := time.NewTicker(h.lim.Poll)
	defer t.Stop()
	last, skipped := time.Now(), 0
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.kicked:
			force = true
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(last.Add(minPollGap))):
			}
		}
		last = time.Now()
		p, err := h.read(ctx, gen, &loaded, force || skipped+1 >= FullPollEvery)
		if err == nil {
			if skipped++; !p.skip {
				loaded, skipped = p.mark, 0
			}
			h.mu.Lock()
			h.apply(p)
			h.mu.Unlock()
			h.cfg.Metrics.EventPollDuration.Observe(time.Since(last).Seconds())
			continue
		}
		if ctx.Err() == nil {
			h.log.Warn("event stream: read the store; trying again at the next poll", "err", err)
		}
	}
}

// Close ends every stream and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		h.drop(sub)
	}
}

func concat(prefix string, b []byte, suffix string) []byte {
	out := make([]byte, 0, len(prefix)+len(b)+len(suffix))
	return append(append(append(out, prefix...), b...), suffix...)
}
