package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/eventhub"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/store"
)

// Defaults of the event stream (StreamLimits).
const (
	DefaultMaxStreams          = eventhub.DefaultMaxStreams
	DefaultMaxStreamsPerCaller = eventhub.DefaultMaxStreamsPerCaller
	DefaultStreamBuffer        = eventhub.DefaultStreamBuffer
	DefaultStreamPoll          = eventhub.DefaultStreamPoll
	DefaultHeartbeat           = eventhub.DefaultHeartbeat
)

// StreamLimits bound GET /api/v1/events; zero fields take the defaults.
type StreamLimits = eventhub.Limits

// streamWriteWait bounds one write to a stream's client: a client that
// takes longer is gone or too slow, and its stream ends.
const streamWriteWait = 30 * time.Second

var (
	errRightsChanged    = errors.New("the caller's rights changed")
	errRightsUnverified = errors.New("the caller's rights could not be asked again")
)

// scope is a namespace and a kind: what the Authorizer decides a list of
// jobs on.
type scope = eventhub.Scope

// views renders the hub's events as the API's wire types.
type views struct{ s *Server }

var _ eventhub.Renderer = views{}

func (v views) Algorithm(rec store.Scheduler) string { return v.s.algorithmOf(rec) }

func (v views) Job(j store.Job, algorithm string, now time.Time) (eventhub.Rendered, error) {
	data, err := json.Marshal(v.s.view(j, algorithm, now))
	if err != nil {
		v.s.log.Error("encode a job for the event stream", "job", j.Name, "err", err)
		return eventhub.Rendered{}, err
	}
	r := eventhub.Rendered{View: data, Scope: scope{Namespace: v.s.namespaceOf(j), Kind: string(j.Kind)}}
	if h, ok := v.s.holderOf(j); ok {
		r.Extra = h
	}
	return r, nil
}

func (v views) Deleted(name string, sc scope) ([]byte, error) {
	data, err := json.Marshal(JobEvent{Name: name, Namespace: sc.Namespace, Deleted: true})
	if err != nil {
		v.s.log.Error("encode a deletion for the event stream", "job", name, "err", err)
	}
	return data, err
}

// nodesDetail is what nodesData needs to redact a nodes event: the view,
// and the kind of each job it names.
type nodesDetail struct {
	view  GPUTypeNodes
	kinds map[string]string
}

func (v views) Nodes(recs map[string]store.Scheduler, jobs []*eventhub.Job) []*eventhub.Nodes {
	var holders []holder
	for _, e := range jobs {
		if h, ok := e.Extra.(holder); ok {
			holders = append(holders, h)
		}
	}
	slices.SortFunc(holders, func(a, b holder) int { return cmp.Compare(a.name, b.name) })
	kinds := map[string]string{}
	for _, h := range holders {
		kinds[h.name] = h.kind
	}
	var out []*eventhub.Nodes
	for _, t := range v.s.cfg.GPUTypes {
		view, scopes := nodesView(t, recs[t], holders)
		data, err := json.Marshal(view)
		if err != nil {
			v.s.log.Error("encode nodes for the event stream", "gpuType", t, "err", err)
			continue
		}
		used := map[string]string{}
		for _, n := range view.Nodes {
			for _, j := range n.Jobs {
				used[j.Name] = kinds[j.Name]
			}
		}
		out = append(out, &eventhub.Nodes{GPUType: t, Data: data, Scopes: scopes,
			Extra: nodesDetail{view: view, kinds: used}})
	}
	return out
}

func (v views) Scheduler(rec store.Scheduler) (data, key []byte, err error) {
	view := v.s.schedulerView(rec)
	if data, err = json.Marshal(view); err != nil {
		v.s.log.Error("encode a scheduler for the event stream", "gpuType", rec.GPUType, "err", err)
		return nil, nil, err
	}
	view.Now = nil // the clock alone is no change
	key, err = json.Marshal(view)
	return data, key, err
}

// CloseStreams ends every open event stream and refuses new ones: an
// http.Server's Shutdown waits for handlers to return, which a stream
// never does by itself (register it with RegisterOnShutdown).
func (s *Server) CloseStreams() { s.hub.Close() }

// jobKinds are the kinds of job the Authorizer is asked about when a
// stream opens.
var jobKinds = []string{string(jobspec.KindMPIJob), string(jobspec.KindPyTorchJob)}

// streamEvents serves GET /api/v1/events (docs/api.md): a snapshot, then
// the changes, as server-sent events.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	v := s.newViewer(ctx)
	sub, snap, err := s.hub.Subscribe(ctx, s.callerOf(r, v.user))
	switch {
	case errors.Is(err, eventhub.ErrCallerStreams):
		who := "this address"
		if s.cfg.Authenticator != nil {
			who = fmt.Sprintf("user %q", v.user.Name)
		}
		return newError(http.StatusTooManyRequests, ReasonTooManyRequests, "",
			fmt.Sprintf("event stream: %s holds %d event streams, the most one caller may (--max-event-streams-per-user); close one, or try again later",
				who, s.hub.Limits().MaxPerCaller)).with("Retry-After", "5")
	case errors.Is(err, eventhub.ErrTooManyStreams), errors.Is(err, eventhub.ErrClosed):
		return newError(http.StatusServiceUnavailable, ReasonServiceUnavailable, "",
			fmt.Sprintf("event stream: %v; try again later", err)).with("Retry-After", "5")
	case err != nil:
		return fmt.Errorf("event stream: %w", err)
	}
	defer s.hub.Leave(sub)
	if err := s.allowStream(r, v, snap); err != nil {
		return err
	}
	cluster := s.mayList(ctx, v.user, auth.ResourceSchedulers)
	// The schedulers' teams name namespaces: only for a caller who may
	// list teams (see schedulerData).
	teams := s.mayList(ctx, v.user, auth.ResourceTeams)
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
		ok, _ := v.sees(sc.Namespace, sc.Kind) // an error hides the job; sees logged it
		return ok
	}
	s.writeSnapshot(out, snap, cluster, teams, sees)
	snap = nil // the stream holds no more than its queue
	heartbeat := time.NewTicker(s.hub.Limits().Heartbeat)
	defer heartbeat.Stop()
	for out.err == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Gone():
			return nil
		case <-heartbeat.C:
			// The rights are asked again, and the stream ends when they
			// changed: the client's reconnection gets a snapshot of what
			// the caller may see now, or a 403.
			if err := s.recheck(v, cluster, teams); err != nil {
				s.log.Info("event stream ended", "user", v.user.Name, "reason", err)
				return nil
			}
			out.comment("heartbeat")
		case f := <-sub.Frames():
			switch {
			case f.Event == eventhub.EventJob && sees(f.Scope):
				out.event(f.Event, f.Data)
			case f.Event == eventhub.EventNodes && cluster:
				out.event(f.Event, s.nodesData(f.Nodes, sees))
			case f.Event == eventhub.EventScheduler && cluster:
				out.event(f.Event, s.schedulerData(f.Data, teams))
			}
		}
	}
	s.log.Debug("event stream ended", "user", v.user.Name, "err", out.err)
	return nil
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

// allowStream returns a 403 error unless the caller may list
// jobs somewhere: of some kind across namespaces, or in a namespace where
// jobs run (the server's, the default, those of the live jobs in snap).
// A caller who may see no job has no use for the stream, and would hold
// one of its places for nothing. The namespace and kind that allowed it
// join v's answers, which the heartbeat asks again.
func (s *Server) allowStream(r *http.Request, v *viewer, snap *eventhub.Snapshot) error {
	if s.cfg.Authorizer == nil {
		return nil
	}
	namespaces := []string{"", s.namespaceOf(store.Job{})}
	namespaces = append(namespaces, s.cfg.Namespaces...)
	for _, e := range snap.Jobs {
		namespaces = append(namespaces, e.Scope.Namespace)
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
			sc := scope{Namespace: ns, Kind: kind}
			ok, err := v.ask(sc)
			if err != nil {
				return forbid(r, r.Pattern, v.user, v.action, "the authorizer failed; see the server log")
			}
			if ok {
				v.decided[sc] = true
				return nil
			}
		}
	}
	s.log.Info("refused", "user", v.user.Name, "action", v.action.String(), "reason", "may list jobs in no namespace")
	return forbid(r, r.Pattern, v.user, v.action, "the stream shows jobs, and the caller may list none (of any kind, in any namespace where jobs run)")
}

// recheck asks the Authorizer again every answer it gave for a stream:
// whether the caller may list schedulers (cluster, as the stream
// opened) and teams, and each namespace and kind of jobs v decided. It
// returns why the stream must end: an answer changed, or could not be
// had.
func (s *Server) recheck(v *viewer, cluster, teams bool) error {
	changed, err := v.recheck()
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", errRightsUnverified, err)
	case changed || s.mayList(v.ctx, v.user, auth.ResourceSchedulers) != cluster ||
		s.mayList(v.ctx, v.user, auth.ResourceTeams) != teams:
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

// schedulerData is a scheduler event's payload for a caller: the shared
// encoding when it may see the teams or there are none, else the
// scheduler without its teams.
func (s *Server) schedulerData(data []byte, teams bool) []byte {
	if teams {
		return data
	}
	var view Scheduler
	if err := json.Unmarshal(data, &view); err != nil {
		s.log.Error("decode a scheduler for the event stream", "err", err)
		return []byte(`{}`)
	}
	if view.Teams == nil {
		return data
	}
	view.Teams = nil
	out, err := json.Marshal(view)
	if err != nil {
		s.log.Error("encode a scheduler for the event stream", "gpuType", view.GPUType, "err", err)
		return []byte(`{}`)
	}
	return out
}

// nodesData is a nodes event's payload for a caller: the shared encoding
// when it may see every job named, else its own with the others redacted.
func (s *Server) nodesData(ns *eventhub.Nodes, sees func(scope) bool) []byte {
	if !slices.ContainsFunc(ns.Scopes, func(sc scope) bool { return !sees(sc) }) {
		return ns.Data
	}
	d, ok := ns.Extra.(nodesDetail)
	if !ok { // not from views: nothing to redact with, so show nothing
		s.log.Error("nodes for the event stream without their detail", "gpuType", ns.GPUType)
		return []byte(`{}`)
	}
	data, err := json.Marshal(redact(d.view, d.kinds, func(namespace, kind string) bool {
		return sees(scope{Namespace: namespace, Kind: kind})
	}))
	if err != nil {
		s.log.Error("encode nodes for the event stream", "gpuType", ns.GPUType, "err", err)
		return []byte(`{}`)
	}
	return data
}

// writeSnapshot writes the snapshot event for a caller straight from the
// encodings the hub keeps, part by part: no stream copies the views, so
// a stream whose client does not read holds no more than the shared
// snapshot.
func (s *Server) writeSnapshot(out *eventWriter, snap *eventhub.Snapshot, cluster, teams bool, sees func(scope) bool) {
	now, _ := json.Marshal(snap.Now)
	out.write(eventhub.EventSnapshot, func(put func(...[]byte)) {
		put([]byte("event: "+eventhub.EventSnapshot), dataField, []byte(`{"now":`), now, []byte(`,"clockRate":`+strconv.FormatFloat(s.cfg.ClockRate, 'g', -1, 64)+`,"jobs":[`))
		first := true
		for _, e := range snap.Jobs {
			if !sees(e.Scope) {
				continue
			}
			if !first {
				put(comma)
			}
			first = false
			put(e.View)
		}
		put([]byte(`],"nodes":[`))
		if cluster {
			for i, n := range snap.Nodes {
				if i > 0 {
					put(comma)
				}
				put(s.nodesData(n, sees))
			}
		}
		put([]byte(`],"schedulers":[`))
		if cluster {
			for i, d := range snap.Schedulers {
				if i > 0 {
					put(comma)
				}
				put(s.schedulerData(d, teams))
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
