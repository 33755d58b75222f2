package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/store"
)

// Defaults of the event stream (StreamLimits).
const (
	DefaultMaxStreams          = 100
	DefaultMaxStreamsPerCaller = 10
	DefaultStreamBuffer        = 1024
	DefaultStreamPoll          = time.Second
	DefaultHeartbeat           = 15 * time.Second
)

// streamWriteWait bounds one write to a stream's client: a client that
// takes longer is gone or too slow, and its stream ends.
const streamWriteWait = 30 * time.Second

// minPollGap is the least time between two polls: a burst of writes
// through this replica (kick) polls at most this often.
const minPollGap = 100 * time.Millisecond

// fullPollEvery is how many polls may go by without reading the jobs,
// when nothing says they changed (see mark).
const fullPollEvery = 5

// Events of the stream (docs/api.md).
const (
	eventSnapshot  = "snapshot"
	eventJob       = "job"
	eventNodes     = "nodes"
	eventScheduler = "scheduler"
)

// StreamLimits bound GET /api/v1/events; zero fields take the defaults.
type StreamLimits struct {
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
	// each.
	Heartbeat time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
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

var (
	errTooManyStreams   = errors.New("too many event streams")
	errCallerStreams    = errors.New("too many event streams of this caller")
	errStreamsClosed    = errors.New("the server is shutting down")
	errRightsChanged    = errors.New("the caller's rights changed")
	errRightsUnverified = errors.New("the caller's rights could not be asked again")
)

// frame is one event, encoded once for every stream that may see it.
type frame struct {
	event string
	data  []byte
	// job frames: the job's namespace and kind, which decide who sees it.
	scope scope
	// nodes frames: what redact needs for callers who may not see every
	// job named.
	nodes *nodesState
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

// jobEntry is a live job as the hub last sent it. It is never changed
// once made (a change makes a new one), so snapshots share it.
type jobEntry struct {
	print jobPrint
	// event is the job event's payload, {"job":VIEW}; view is the VIEW
	// within it: one encoding for the event and every snapshot.
	event, view []byte
	scope       scope
	submit      time.Time
	name        string
	holder      holder
	holds       bool
}

type nodesState struct {
	view   GPUTypeNodes
	data   []byte
	kinds  map[string]jobspec.Kind // job name -> kind
	scopes []scope
}

// subscriber is one open stream.
type subscriber struct {
	// caller is who the stream counts against (StreamLimits.MaxPerCaller).
	caller string
	ch     chan *frame
	// gone is closed when the hub drops the stream (too slow, or the
	// server is shutting down).
	gone chan struct{}
}

// hub finds the changes of the live jobs, the nodes and the schedulers
// with one poll of the store per replica, however many streams are open,
// encodes each change once and hands it to every stream. It keeps only
// the live jobs: each poll lists them (the store reads them from an
// index, whatever the number of finished jobs) and reads once more each
// job that left the list, to send its final state or its removal. It
// polls only while a stream is open, and forgets everything when the
// last one closes.
type hub struct {
	s   *Server
	lim StreamLimits

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
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
	jobs       map[string]*jobEntry
	order      []*jobEntry
	nodes      map[string]*nodesState
	schedulers map[string][]byte // GPU type -> Scheduler view, JSON
	schedKeys  map[string]string // the same without the clock, to compare
}

func newHub(s *Server, lim StreamLimits) *hub {
	h := &hub{s: s, lim: lim.withDefaults(), subs: map[*subscriber]struct{}{}, callers: map[string]int{},
		kicked: make(chan struct{}, 1)}
	h.reset()
	return h
}

// reset forgets the state. Under h.mu (or before h is shared).
func (h *hub) reset() {
	h.jobs, h.order = map[string]*jobEntry{}, nil
	h.nodes, h.schedulers, h.schedKeys = map[string]*nodesState{}, map[string][]byte{}, map[string]string{}
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
// every fullPollEvery polls anyway.
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
func (h *hub) read(ctx context.Context, gen int, last *mark, force bool) (*poll, error) {
	p := &poll{gen: gen, left: map[string]*store.Job{}}
	var err error
	if p.mark.recs, err = h.s.settings(ctx); err != nil {
		return nil, fmt.Errorf("read schedulers: %w", err)
	}
	if p.mark.live, p.mark.finished, err = h.s.cfg.Store.CountJobs(ctx); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	if !force && last != nil && p.mark.equal(*last) {
		p.skip = true
		return p, nil
	}
	if p.jobs, err = h.s.cfg.Store.ListJobs(ctx, store.ListOptions{Live: true}); err != nil {
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
		j, err := h.s.cfg.Store.GetJob(ctx, name)
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
func (h *hub) apply(p *poll) {
	if p.gen != h.gen || p.skip {
		return
	}
	recs, now := p.mark.recs, h.s.cfg.Clock.Now()
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
func (h *hub) entry(j store.Job, recs map[string]store.Scheduler, now time.Time) *jobEntry {
	algo := h.s.algorithmOf(recs[j.Spec.GPUType])
	pr := jobPrint{status: j.StatusRevision, progress: j.ProgressRevision, priority: j.Spec.Priority,
		deleteRequested: j.DeleteRequested, algorithm: algo, unreadable: j.Unreadable}
	if e, ok := h.jobs[j.Name]; ok && e.print == pr {
		return nil
	}
	view, err := json.Marshal(h.s.view(j, algo, now))
	if err != nil {
		h.s.log.Error("encode a job for the event stream", "job", j.Name, "err", err)
		return nil
	}
	event := concat(`{"job":`, view, `}`)
	e := &jobEntry{print: pr, event: event, view: event[len(`{"job":`) : len(event)-1], name: j.Name,
		scope: scope{h.s.namespaceOf(j), j.Kind}, submit: j.Spec.SubmitTime}
	e.holder, e.holds = h.s.holderOf(j)
	h.order = nil
	h.send(&frame{event: eventJob, data: e.event, scope: e.scope})
	return e
}

// removed sends the removal of a job the hub holds. Under h.mu.
func (h *hub) removed(name string) {
	e, ok := h.jobs[name]
	if !ok {
		return
	}
	data, err := json.Marshal(JobEvent{Name: name, Namespace: e.scope.namespace, Deleted: true})
	if err != nil {
		h.s.log.Error("encode a deletion for the event stream", "job", name, "err", err)
		return
	}
	h.send(&frame{event: eventJob, data: data, scope: e.scope})
}

func (h *hub) applyNodes(recs map[string]store.Scheduler) {
	var holders []holder
	kinds := map[string]jobspec.Kind{}
	for _, e := range h.jobs {
		if e.holds {
			holders = append(holders, e.holder)
			kinds[e.holder.name] = e.holder.kind
		}
	}
	slices.SortFunc(holders, func(a, b holder) int { return cmp.Compare(a.name, b.name) })
	for _, t := range h.s.cfg.GPUTypes {
		view, scopes := nodesView(t, recs[t], holders)
		data, err := json.Marshal(view)
		if err != nil {
			h.s.log.Error("encode nodes for the event stream", "gpuType", t, "err", err)
			continue
		}
		if old, ok := h.nodes[t]; ok && bytes.Equal(old.data, data) {
			continue
		}
		used := map[string]jobspec.Kind{}
		for _, n := range view.Nodes {
			for _, j := range n.Jobs {
				used[j.Name] = kinds[j.Name]
			}
		}
		ns := &nodesState{view: view, data: data, kinds: used, scopes: scopes}
		h.nodes[t] = ns
		h.send(&frame{event: eventNodes, data: data, nodes: ns})
	}
}

func (h *hub) applySchedulers(recs map[string]store.Scheduler) {
	for _, t := range h.s.cfg.GPUTypes {
		rec := recs[t]
		rec.GPUType = t
		view := h.s.schedulerView(rec)
		data, err := json.Marshal(view)
		if err != nil {
			h.s.log.Error("encode a scheduler for the event stream", "gpuType", t, "err", err)
			continue
		}
		view.Now = nil // the clock alone is no change
		key, _ := json.Marshal(view)
		if h.schedKeys[t] == string(key) {
			continue
		}
		h.schedKeys[t], h.schedulers[t] = string(key), data
		h.send(&frame{event: eventScheduler, data: data})
	}
}

// send hands f to every stream without waiting: a stream whose buffer is
// full is dropped. Under h.mu.
func (h *hub) send(f *frame) {
	for sub := range h.subs {
		select {
		case sub.ch <- f:
		default:
			h.s.log.Warn("event stream too slow; disconnected", "buffer", h.lim.Buffer)
			h.s.cfg.Metrics.EventStreamsDropped.Inc()
			h.drop(sub)
		}
	}
}

// drop ends a stream; the last one stops the poller, and the hub forgets
// its state until the next stream. Under h.mu.
func (h *hub) drop(sub *subscriber) {
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	if h.callers[sub.caller]--; h.callers[sub.caller] <= 0 {
		delete(h.callers, sub.caller)
	}
	close(sub.gone)
	h.s.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	h.stopIfIdle()
}

// stopIfIdle stops the poller when no stream is open, and forgets the
// state. Under h.mu.
func (h *hub) stopIfIdle() {
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
		h.reset()
	}
}

// snapshot is the state a new stream starts from. Its parts are shared
// with the hub and other streams, and never changed.
type snapshot struct {
	now        time.Time
	jobs       []*jobEntry // by submit time, then name
	nodes      []*nodesState
	schedulers [][]byte
}

// admit says why a new stream of caller may not open, if it may not.
// Under h.mu.
func (h *hub) admit(caller string) error {
	switch {
	case h.closed:
		return errStreamsClosed
	case len(h.subs) >= h.lim.MaxStreams:
		return errTooManyStreams
	case h.callers[caller] >= h.lim.MaxPerCaller:
		return errCallerStreams
	}
	return nil
}

// subscribe opens a stream of caller: when no poller runs (the first
// stream), it reads the store itself, or waits for the stream that
// does, and starts one; then it returns the stream and its snapshot.
func (h *hub) subscribe(ctx context.Context, caller string) (*subscriber, *snapshot, error) {
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
			return nil, nil, errStreamsClosed
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
	sub := &subscriber{caller: caller, ch: make(chan *frame, h.lim.Buffer), gone: make(chan struct{})}
	h.subs[sub] = struct{}{}
	h.callers[caller]++
	h.s.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	if h.order == nil {
		h.order = slices.SortedFunc(maps.Values(h.jobs), func(a, b *jobEntry) int {
			return cmp.Or(a.submit.Compare(b.submit), cmp.Compare(a.name, b.name))
		})
	}
	snap := &snapshot{now: h.s.cfg.Clock.Now(), jobs: h.order}
	for _, t := range h.s.cfg.GPUTypes {
		if n, ok := h.nodes[t]; ok {
			snap.nodes = append(snap.nodes, n)
		}
		if d, ok := h.schedulers[t]; ok {
			snap.schedulers = append(snap.schedulers, d)
		}
	}
	return sub, snap, nil
}

// subscribers is the number of open streams.
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// leave ends a stream whose client went away.
func (h *hub) leave(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(sub)
}

// kick makes the poller poll soon: a write through this replica (a
// submission, a deletion, a setting) shows without waiting for the next
// poll. The scheduler's writes wait for it.
func (h *hub) kick() {
	select {
	case h.kicked <- struct{}{}:
	default:
	}
}

// run polls the store every Poll, and when kicked, until ctx ends. A
// poll reads the jobs when kicked, when the mark differs from the last
// read of the jobs (loaded, at first), or when fullPollEvery polls went
// by without.
func (h *hub) run(ctx context.Context, gen int, loaded mark) {
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
		p, err := h.read(ctx, gen, &loaded, force || skipped+1 >= fullPollEvery)
		if err == nil {
			if skipped++; !p.skip {
				loaded, skipped = p.mark, 0
			}
			h.mu.Lock()
			h.apply(p)
			h.mu.Unlock()
			h.s.cfg.Metrics.EventPollDuration.Observe(time.Since(last).Seconds())
			continue
		}
		if ctx.Err() == nil {
			h.s.log.Warn("event stream: read the store; trying again at the next poll", "err", err)
		}
	}
}

// close ends every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		h.drop(sub)
	}
}

// CloseStreams ends every open event stream and refuses new ones: an
// http.Server's Shutdown waits for handlers to return, which a stream
// never does by itself (register it with RegisterOnShutdown).
func (s *Server) CloseStreams() { s.hub.close() }

func concat(prefix string, b []byte, suffix string) []byte {
	out := make([]byte, 0, len(prefix)+len(b)+len(suffix))
	return append(append(append(out, prefix...), b...), suffix...)
}

// jobKinds are the kinds of job the Authorizer is asked about when a
// stream opens.
var jobKinds = []jobspec.Kind{jobspec.KindMPIJob, jobspec.KindPyTorchJob}

// streamEvents serves GET /api/v1/events (docs/api.md): a snapshot, then
// the changes, as server-sent events.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := s.newViewer(ctx)
	sub, snap, err := s.hub.subscribe(ctx, s.callerOf(r, v.user))
	switch {
	case errors.Is(err, errCallerStreams):
		who := "this address"
		if s.cfg.Authenticator != nil {
			who = fmt.Sprintf("user %q", v.user.Name)
		}
		w.Header().Set("Retry-After", "5")
		s.fail(w, http.StatusTooManyRequests, "TooManyRequests", "",
			fmt.Sprintf("event stream: %s holds %d event streams, the most one caller may (--max-event-streams-per-user); close one, or try again later",
				who, s.hub.lim.MaxPerCaller))
		return
	case errors.Is(err, errTooManyStreams), errors.Is(err, errStreamsClosed):
		w.Header().Set("Retry-After", "5")
		s.fail(w, http.StatusServiceUnavailable, "ServiceUnavailable", "", fmt.Sprintf("event stream: %v; try again later", err))
		return
	case err != nil:
		s.failInternal(w, r, fmt.Errorf("event stream: %w", err))
		return
	}
	defer s.hub.leave(sub)
	if !s.allowStream(w, r, v, snap) {
		return
	}
	cluster := s.mayList(ctx, v.user, auth.ResourceSchedulers)
	rc := http.NewResponseController(w)
	// The server's read timeout would end the stream: nothing more is read.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer
	w.WriteHeader(http.StatusOK)
	out := &eventWriter{w: w, rc: rc, sent: s.cfg.Metrics.EventsSent, bytes: s.cfg.Metrics.EventBytesSent}
	sees := func(sc scope) bool {
		ok, _ := v.sees(sc.namespace, sc.kind) // an error hides the job; sees logged it
		return ok
	}
	s.writeSnapshot(out, snap, cluster, sees)
	snap = nil // the stream holds no more than its queue
	heartbeat := time.NewTicker(s.hub.lim.Heartbeat)
	defer heartbeat.Stop()
	for out.err == nil {
		select {
		case <-ctx.Done():
			return
		case <-sub.gone:
			return
		case <-heartbeat.C:
			// The rights are asked again, and the stream ends when they
			// changed: the client's reconnection gets a snapshot of what
			// the caller may see now, or a 403.
			if err := s.recheck(v, cluster); err != nil {
				s.log.Info("event stream ended", "user", v.user.Name, "reason", err)
				return
			}
			out.comment("heartbeat")
		case f := <-sub.ch:
			switch {
			case f.event == eventJob && sees(f.scope):
				out.event(f.event, f.data)
			case f.event == eventNodes && cluster:
				out.event(f.event, s.nodesData(f.nodes, sees))
			case f.event == eventScheduler && cluster:
				out.event(f.event, f.data)
			}
		}
	}
	s.log.Debug("event stream ended", "user", v.user.Name, "err", out.err)
}

// callerOf names who a stream of r counts against for
// StreamLimits.MaxPerCaller: the user it authenticated, or without
// authentication the client's address (an IPv6 /64), the only identity
// an anonymous caller has.
func (s *Server) callerOf(r *http.Request, u auth.User) string {
	if s.cfg.Authenticator != nil {
		return "user " + u.Name
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return "address " + r.RemoteAddr
	}
	return "address " + clientOf(ap.Addr())
}

// allowStream answers 403 and returns false unless the caller may list
// jobs somewhere: of some kind across namespaces, or in a namespace where
// jobs run (the server's, the default, those of the live jobs in snap).
// A caller who may see no job has no use for the stream, and would hold
// one of its places for nothing. The namespace and kind that allowed it
// join v's answers, which the heartbeat asks again.
func (s *Server) allowStream(w http.ResponseWriter, r *http.Request, v *viewer, snap *snapshot) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	namespaces := []string{"", s.namespaceOf(store.Job{})}
	namespaces = append(namespaces, s.cfg.Namespaces...)
	for _, e := range snap.jobs {
		namespaces = append(namespaces, e.scope.namespace)
	}
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		for _, kind := range jobKinds {
			// Only the answer that allows is kept (for the heartbeat to
			// ask again): the refusals before it would cost a question
			// each at every heartbeat.
			sc := scope{ns, kind}
			ok, err := v.ask(sc)
			if err != nil {
				s.forbid(w, r, r.Pattern, v.user, v.action, "the authorizer failed; see the server log")
				return false
			}
			if ok {
				v.decided[sc] = true
				return true
			}
		}
	}
	s.log.Info("refused", "user", v.user.Name, "action", v.action.String(), "reason", "may list jobs in no namespace")
	s.forbid(w, r, r.Pattern, v.user, v.action, "the stream shows jobs, and the caller may list none (of any kind, in any namespace where jobs run)")
	return false
}

// recheck asks the Authorizer again every answer it gave for a stream:
// whether the caller may list schedulers (cluster, as the stream
// opened) and each namespace and kind of jobs v decided. It returns why
// the stream must end: an answer changed, or could not be had.
func (s *Server) recheck(v *viewer, cluster bool) error {
	changed, err := v.recheck()
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", errRightsUnverified, err)
	case changed || s.mayList(v.ctx, v.user, auth.ResourceSchedulers) != cluster:
		return errRightsChanged
	}
	return nil
}

// mayList asks the Authorizer, without answering, whether u may list
// resource.
func (s *Server) mayList(ctx context.Context, u auth.User, resource string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	a := auth.Attributes{Verb: auth.VerbList, Resource: resource}
	ok, _, err := s.cfg.Authorizer.Authorize(ctx, u, a)
	if err != nil {
		s.log.Error("authorize", "user", u.Name, "action", a.String(), "err", err)
	}
	return ok && err == nil
}

// nodesData is a nodes event's payload for a caller: the shared encoding
// when it may see every job named, else its own with the others redacted.
func (s *Server) nodesData(ns *nodesState, sees func(scope) bool) []byte {
	if !slices.ContainsFunc(ns.scopes, func(sc scope) bool { return !sees(sc) }) {
		return ns.data
	}
	data, err := json.Marshal(redact(ns.view, ns.kinds, func(namespace string, kind jobspec.Kind) bool { return sees(scope{namespace, kind}) }))
	if err != nil {
		s.log.Error("encode nodes for the event stream", "gpuType", ns.view.GPUType, "err", err)
		return []byte(`{}`)
	}
	return data
}

// writeSnapshot writes the snapshot event for a caller straight from the
// encodings the hub keeps, part by part: no stream copies the views, so
// a stream whose client does not read holds no more than the shared
// snapshot.
func (s *Server) writeSnapshot(out *eventWriter, snap *snapshot, cluster bool, sees func(scope) bool) {
	now, _ := json.Marshal(snap.now)
	out.write(eventSnapshot, func(put func(...[]byte)) {
		put([]byte("event: "+eventSnapshot), dataField, []byte(`{"now":`), now, []byte(`,"clockRate":`+strconv.FormatFloat(s.cfg.ClockRate, 'g', -1, 64)+`,"jobs":[`))
		first := true
		for _, e := range snap.jobs {
			if !sees(e.scope) {
				continue
			}
			if !first {
				put(comma)
			}
			first = false
			put(e.view)
		}
		put([]byte(`],"nodes":[`))
		if cluster {
			for i, n := range snap.nodes {
				if i > 0 {
					put(comma)
				}
				put(s.nodesData(n, sees))
			}
		}
		put([]byte(`],"schedulers":[`))
		if cluster {
			for i, d := range snap.schedulers {
				if i > 0 {
					put(comma)
				}
				put(d)
			}
		}
		put([]byte(`]}`), eventEnd)
	})
}

var comma = []byte{','}

// eventWriter writes server-sent events, each flushed under its own
// write deadline; the first error sticks and ends the stream.
type eventWriter struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	err         error
	sent, bytes *prometheus.CounterVec
}

// write writes one event (or comment) whose parts body hands to put, and
// flushes it.
func (e *eventWriter) write(name string, body func(put func(...[]byte))) {
	if e.err != nil {
		return
	}
	n := 0
	defer func() {
		if e.err == nil {
			e.sent.WithLabelValues(name).Inc()
			e.bytes.WithLabelValues(name).Add(float64(n))
		}
	}()
	if err := e.rc.SetWriteDeadline(time.Now().Add(streamWriteWait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		e.err = err
		return
	}
	body(func(parts ...[]byte) {
		for _, p := range parts {
			if e.err != nil {
				return
			}
			var k int
			k, e.err = e.w.Write(p)
			n += k
		}
	})
	if e.err == nil {
		e.err = e.rc.Flush()
	}
}

var (
	eventEnd  = []byte("\n\n")
	dataField = []byte("\ndata: ")
)

func (e *eventWriter) event(name string, data []byte) {
	e.write(name, func(put func(...[]byte)) { put([]byte("event: "+name), dataField, data, eventEnd) })
}

func (e *eventWriter) comment(text string) {
	e.write(text, func(put func(...[]byte)) { put([]byte(": "+text), eventEnd) })
}
