package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/store"
)

// Defaults of the event stream (StreamLimits).
const (
	DefaultMaxStreams   = 100
	DefaultStreamBuffer = 1024
	DefaultStreamPoll   = time.Second
	DefaultHeartbeat    = 15 * time.Second
)

// streamWriteWait bounds one write to a stream's client: a client that
// takes longer is gone or too slow, and its stream ends.
const streamWriteWait = 30 * time.Second

// minPollGap is the least time between two polls: a burst of writes
// through this replica (kick) polls at most this often.
const minPollGap = 100 * time.Millisecond

// fullListEvery is how many polls of the live jobs make one of every
// job, which finds finished jobs removed from the store.
const fullListEvery = 30

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
	// Buffer is the most events queued for one stream; a client that
	// falls further behind is disconnected, and reconnects to a new
	// snapshot.
	Buffer int
	// Poll is the time between two reads of the store that find the
	// changes, shared by every stream of the replica.
	Poll time.Duration
	// Heartbeat is the time between two comment lines that keep an idle
	// stream's connection open.
	Heartbeat time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxStreams, DefaultMaxStreams)
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
	errTooManyStreams = errors.New("too many event streams")
	errStreamsClosed  = errors.New("the server is shutting down")
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

type jobEntry struct {
	print  jobPrint
	view   []byte // the Job view, JSON
	scope  scope
	submit time.Time
	live   bool
	holder holder
	holds  bool
}

type nodesState struct {
	view   GPUTypeNodes
	data   []byte
	kinds  map[string]string // job name -> kind
	scopes []scope
}

// subscriber is one open stream.
type subscriber struct {
	ch chan *frame
	// gone is closed when the hub drops the stream (too slow, or the
	// server is shutting down).
	gone chan struct{}
}

// hub finds the changes of jobs, nodes and schedulers with one poll of
// the store per replica, however many streams are open, encodes each
// change once and hands it to every stream. It polls only while a
// stream is open.
type hub struct {
	s   *Server
	lim StreamLimits

	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	// gen counts poller starts; a poll of an older generation is
	// discarded. stop ends the running poller (nil when none).
	gen  int
	stop context.CancelFunc
	// kicked asks the poller to poll now (one slot: kicks coalesce).
	kicked chan struct{}
	// The state as of the last poll applied.
	jobs       map[string]*jobEntry
	nodes      map[string]*nodesState
	schedulers map[string][]byte // GPU type -> Scheduler view, JSON
	schedKeys  map[string]string // the same without the clock, to compare
}

func newHub(s *Server, lim StreamLimits) *hub {
	return &hub{s: s, lim: lim.withDefaults(), subs: map[*subscriber]struct{}{},
		kicked: make(chan struct{}, 1), jobs: map[string]*jobEntry{}, nodes: map[string]*nodesState{},
		schedulers: map[string][]byte{}, schedKeys: map[string]string{}}
}

// poll is what one read of the store found.
type poll struct {
	gen  int
	full bool
	jobs []store.Job
	// left are the jobs that were live and are not listed live any
	// more: as read again, nil when deleted.
	left map[string]*store.Job
	recs map[string]store.Scheduler
}

// read reads the store: every job when full, else the live ones and
// again those that were live before.
func (h *hub) read(ctx context.Context, gen int, full bool) (*poll, error) {
	p := &poll{gen: gen, full: full, left: map[string]*store.Job{}}
	var err error
	if p.recs, err = h.s.settings(ctx); err != nil {
		return nil, fmt.Errorf("read schedulers: %w", err)
	}
	if p.jobs, err = h.s.cfg.Store.ListJobs(ctx, store.ListOptions{Live: !full}); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	if full {
		return p, nil
	}
	listed := make(map[string]bool, len(p.jobs))
	for _, j := range p.jobs {
		listed[j.Name] = true
	}
	h.mu.Lock()
	var was []string
	for name, e := range h.jobs {
		if e.live && !listed[name] {
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
	if p.gen != h.gen {
		return
	}
	now := h.s.cfg.Clock.Now()
	seen := make(map[string]bool, len(p.jobs))
	for _, j := range p.jobs {
		seen[j.Name] = true
		h.applyJob(j, p.recs, now)
	}
	for name, j := range p.left {
		if j != nil {
			h.applyJob(*j, p.recs, now)
		} else {
			h.removeJob(name)
		}
	}
	if p.full {
		for name := range h.jobs {
			if !seen[name] {
				h.removeJob(name)
			}
		}
	}
	h.applyNodes(p.recs)
	h.applySchedulers(p.recs)
}

func (h *hub) applyJob(j store.Job, recs map[string]store.Scheduler, now time.Time) {
	algo := h.s.algorithmOf(recs[j.Spec.GPUType])
	pr := jobPrint{status: j.StatusRevision, progress: j.ProgressRevision, priority: j.Spec.Priority,
		deleteRequested: j.DeleteRequested, algorithm: algo, unreadable: j.Unreadable}
	if e, ok := h.jobs[j.Name]; ok && e.print == pr {
		return
	}
	view, err := json.Marshal(h.s.view(j, algo, now))
	if err != nil {
		h.s.log.Error("encode a job for the event stream", "job", j.Name, "err", err)
		return
	}
	e := &jobEntry{print: pr, view: view, scope: scope{h.s.namespaceOf(j), j.Kind}, submit: j.Spec.SubmitTime,
		live: !statusOf(j).Done()}
	e.holder, e.holds = h.s.holderOf(j)
	h.jobs[j.Name] = e
	h.send(&frame{event: eventJob, data: concat(`{"job":`, view, `}`), scope: e.scope})
}

func (h *hub) removeJob(name string) {
	e, ok := h.jobs[name]
	if !ok {
		return
	}
	delete(h.jobs, name)
	data, err := json.Marshal(JobEvent{Name: name, Namespace: e.scope.namespace, Deleted: true})
	if err != nil {
		h.s.log.Error("encode a deletion for the event stream", "job", name, "err", err)
		return
	}
	h.send(&frame{event: eventJob, data: data, scope: e.scope})
}

func (h *hub) applyNodes(recs map[string]store.Scheduler) {
	var holders []holder
	kinds := map[string]string{}
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
		used := map[string]string{}
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

// drop ends a stream. Under h.mu.
func (h *hub) drop(sub *subscriber) {
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	close(sub.gone)
	h.s.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// snapshot is the state a new stream starts from.
type snapshot struct {
	now        time.Time
	jobs       []*jobEntry // by submit time, then name
	names      []string
	nodes      []*nodesState
	schedulers [][]byte
}

// subscribe opens a stream: it reads the store itself when no poller
// runs (the first stream), starts one, and returns the stream and its
// snapshot.
func (h *hub) subscribe(ctx context.Context) (*subscriber, *snapshot, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return nil, nil, errStreamsClosed
	case len(h.subs) >= h.lim.MaxStreams:
		h.mu.Unlock()
		return nil, nil, errTooManyStreams
	}
	if h.stop == nil {
		h.gen++
		gen := h.gen
		h.mu.Unlock()
		p, err := h.read(ctx, gen, true)
		if err != nil {
			return nil, nil, err
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, nil, errStreamsClosed
		}
		if h.stop == nil && h.gen == gen {
			h.apply(p)
			pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			h.stop = cancel
			go h.run(pctx, gen)
		}
	}
	defer h.mu.Unlock()
	if len(h.subs) >= h.lim.MaxStreams {
		return nil, nil, errTooManyStreams
	}
	sub := &subscriber{ch: make(chan *frame, h.lim.Buffer), gone: make(chan struct{})}
	h.subs[sub] = struct{}{}
	h.s.cfg.Metrics.EventStreams.Set(float64(len(h.subs)))
	snap := &snapshot{now: h.s.cfg.Clock.Now()}
	for name := range h.jobs {
		snap.names = append(snap.names, name)
	}
	slices.SortFunc(snap.names, func(a, b string) int {
		return cmp.Or(h.jobs[a].submit.Compare(h.jobs[b].submit), cmp.Compare(a, b))
	})
	for _, name := range snap.names {
		snap.jobs = append(snap.jobs, h.jobs[name])
	}
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

// run polls the store every Poll, and when kicked, until ctx ends.
func (h *hub) run(ctx context.Context, gen int) {
	t := time.NewTicker(h.lim.Poll)
	defer t.Stop()
	last := time.Now()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.kicked:
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(last.Add(minPollGap))):
			}
		}
		last = time.Now()
		p, err := h.read(ctx, gen, n%fullListEvery == 0)
		if err == nil {
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

// streamEvents serves GET /api/v1/events (docs/api.md): a snapshot, then
// the changes, as server-sent events.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := s.newViewer(ctx)
	cluster := s.mayList(ctx, v.user, auth.ResourceSchedulers)
	sub, snap, err := s.hub.subscribe(ctx)
	switch {
	case errors.Is(err, errTooManyStreams), errors.Is(err, errStreamsClosed):
		w.Header().Set("Retry-After", "5")
		s.fail(w, http.StatusServiceUnavailable, "ServiceUnavailable", "", fmt.Sprintf("event stream: %v; try again later", err))
		return
	case err != nil:
		s.failInternal(w, r, fmt.Errorf("event stream: %w", err))
		return
	}
	defer s.hub.leave(sub)
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
	out.event(eventSnapshot, s.snapshotData(snap, cluster, sees))
	heartbeat := time.NewTicker(s.hub.lim.Heartbeat)
	defer heartbeat.Stop()
	for out.err == nil {
		select {
		case <-ctx.Done():
			return
		case <-sub.gone:
			return
		case <-heartbeat.C:
			v.forget()
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
	data, err := json.Marshal(redact(ns.view, ns.kinds, func(namespace, kind string) bool { return sees(scope{namespace, kind}) }))
	if err != nil {
		s.log.Error("encode nodes for the event stream", "gpuType", ns.view.GPUType, "err", err)
		return []byte(`{}`)
	}
	return data
}

// snapshotData is the snapshot event's payload for a caller, built from
// the encodings the hub keeps.
func (s *Server) snapshotData(snap *snapshot, cluster bool, sees func(scope) bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"now":`)
	now, _ := json.Marshal(snap.now)
	b.Write(now)
	b.WriteString(`,"clockRate":`)
	b.WriteString(strconv.FormatFloat(s.cfg.ClockRate, 'g', -1, 64))
	b.WriteString(`,"jobs":[`)
	first := true
	for _, e := range snap.jobs {
		if !sees(e.scope) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(e.view)
	}
	b.WriteString(`],"nodes":[`)
	if cluster {
		for i, n := range snap.nodes {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(s.nodesData(n, sees))
		}
	}
	b.WriteString(`],"schedulers":[`)
	if cluster {
		b.Write(bytes.Join(snap.schedulers, []byte{','}))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// eventWriter writes server-sent events, each flushed under its own
// write deadline; the first error sticks and ends the stream.
type eventWriter struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	err         error
	sent, bytes *prometheus.CounterVec
}

func (e *eventWriter) write(name string, parts ...[]byte) {
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
	for _, p := range parts {
		var k int
		k, e.err = e.w.Write(p)
		n += k
		if e.err != nil {
			return
		}
	}
	e.err = e.rc.Flush()
}

func (e *eventWriter) event(name string, data []byte) {
	e.write(name, []byte("event: "+name+"\ndata: "), data, []byte("\n\n"))
}

func (e *eventWriter) comment(text string) { e.write(text, []byte(": "+text+"\n\n")) }
