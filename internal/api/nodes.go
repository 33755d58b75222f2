package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/store"
)

// holder is what the nodes' view needs of a live job: where its workers
// are, how many GPUs each holds, and who may see it.
type holder struct {
	name, namespace, kind, gpuType string
	// workers are the job's workers on all nodes, each of perWorker GPUs.
	workers, perWorker int
	placement          map[string]int // node -> workers
}

// holderOf is j's holder entry; ok is false when j holds no GPUs.
func (s *Server) holderOf(j store.Job) (holder, bool) {
	st := j.Status.State
	if statusOf(j).Done() || st.GPUs <= 0 || len(st.Placement) == 0 {
		return holder{}, false
	}
	g := j.Spec.PerWorker()
	h := holder{name: j.Name, namespace: s.namespaceOf(j), kind: string(j.Kind), gpuType: j.Spec.GPUType,
		workers: st.GPUs / g, perWorker: g, placement: map[string]int{}}
	for _, nw := range st.Placement {
		h.placement[nw.Node] += nw.Workers
	}
	return h, true
}

// nodesView is one GPU type's nodes as its scheduler last wrote them,
// with the GPUs each of holders (sorted by name) holds there. scopes are
// the namespaces and kinds of the jobs named, for redact.
func nodesView(gpuType string, rec store.Scheduler, holders []holder) (GPUTypeNodes, []scope) {
	out := GPUTypeNodes{GPUType: gpuType, Nodes: []Node{}}
	var scopes []scope
	for _, n := range rec.Status.NodeStates {
		v := Node{Name: n.Name, GPUs: n.GPUs, Ready: !n.NotReady, Cordoned: n.Cordoned, Jobs: []NodeJob{}}
		used := 0
		for _, h := range holders {
			if w := h.placement[n.Name]; w > 0 && h.gpuType == gpuType {
				v.Jobs = append(v.Jobs, NodeJob{Name: h.name, Namespace: h.namespace, Workers: w, GPUs: w * h.perWorker, JobWorkers: h.workers})
				scopes = append(scopes, scope{Namespace: h.namespace, Kind: h.kind})
				used += w * h.perWorker
			}
		}
		v.FreeGPUs = max(n.GPUs-used, 0)
		out.Nodes = append(out.Nodes, v)
	}
	slices.SortFunc(scopes, scope.Compare)
	return out, slices.Compact(scopes)
}

// redact returns v with the jobs the caller may not see (sees says
// whether it may see a namespace and kind) folded into one busy entry
// per node, without names; kinds gives each named job's kind.
func redact(v GPUTypeNodes, kinds map[string]string, sees func(namespace, kind string) bool) GPUTypeNodes {
	out := GPUTypeNodes{GPUType: v.GPUType, Nodes: make([]Node, len(v.Nodes))}
	for i, n := range v.Nodes {
		busy := NodeJob{Busy: true}
		jobs := make([]NodeJob, 0, len(n.Jobs))
		for _, j := range n.Jobs {
			if sees(j.Namespace, kinds[j.Name]) {
				jobs = append(jobs, j)
			} else {
				busy.Workers += j.Workers
				busy.GPUs += j.GPUs
			}
		}
		if busy.Workers > 0 {
			jobs = append(jobs, busy)
		}
		n.Jobs = jobs
		out.Nodes[i] = n
	}
	return out
}

// nodeHolders are the holders among jobs, sorted by name.
func (s *Server) nodeHolders(jobs []store.Job) []holder {
	var out []holder
	for _, j := range jobs {
		if h, ok := s.holderOf(j); ok {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b holder) int { return cmp.Compare(a.name, b.name) })
	return out
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.settings(r.Context())
	if err != nil {
		return err
	}
	jobs, err := s.cfg.Store.ListJobs(r.Context(), store.ListOptions{Live: true})
	if err != nil {
		return err
	}
	holders := s.nodeHolders(jobs)
	kinds := map[string]string{}
	for _, h := range holders {
		kinds[h.name] = h.kind
	}
	v := s.newViewer(r.Context())
	var failed error
	sees := func(namespace, kind string) bool {
		ok, err := v.sees(namespace, kind)
		if err != nil && failed == nil {
			failed = err
		}
		return ok
	}
	out := NodeList{Items: []GPUTypeNodes{}}
	for _, t := range s.cfg.GPUTypes {
		view, _ := nodesView(t, recs[t], holders)
		out.Items = append(out.Items, redact(view, kinds, sees))
	}
	if failed != nil {
		u, _ := auth.UserFrom(r.Context())
		return forbid(r, r.Pattern, u, v.action, "the authorizer failed; see the server log")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// viewer decides which jobs one caller may see: those of the namespaces
// and kinds where the Authorizer allows listing jobs. It asks once per
// scope and remembers the answer (an event stream asks them all again
// with recheck); not safe for concurrent use.
type viewer struct {
	s       *Server
	ctx     context.Context
	user    auth.User
	action  auth.Attributes
	decided map[scope]bool
}

// newViewer is the viewer of the caller of a request whose context is ctx.
func (s *Server) newViewer(ctx context.Context) *viewer {
	u, _ := auth.UserFrom(ctx)
	return &viewer{s: s, ctx: ctx, user: u, action: routeAttributes["GET "+RouteJobs], decided: map[scope]bool{}}
}

// sees reports whether the caller may see jobs of kind in namespace; an
// error of the Authorizer is logged and returned, with false.
func (v *viewer) sees(namespace, kind string) (bool, error) {
	if v.s.cfg.Authorizer == nil {
		return true, nil
	}
	sc := scope{Namespace: namespace, Kind: kind}
	if allowed, ok := v.decided[sc]; ok {
		return allowed, nil
	}
	allowed, err := v.ask(sc)
	if err != nil {
		return false, err
	}
	v.decided[sc] = allowed
	return allowed, nil
}

// ask asks the Authorizer whether the caller may list jobs of sc,
// logging an error.
func (v *viewer) ask(sc scope) (bool, error) {
	a := v.action
	a.Namespace, a.Kind = sc.Namespace, sc.Kind
	allowed, _, err := v.s.cfg.Authorizer.Authorize(v.ctx, v.user, a)
	if err != nil {
		v.s.log.Error("authorize", "user", v.user.Name, "action", a.String(), "err", err)
	}
	return allowed && err == nil, err
}

// recheck asks the Authorizer again about every scope v remembers, so
// that a long-lived stream follows changes of the caller's rights, and
// reports whether any answer changed. An error leaves the answers as
// they were.
func (v *viewer) recheck() (changed bool, err error) {
	if v.s.cfg.Authorizer == nil {
		return false, nil
	}
	now := make(map[scope]bool, len(v.decided))
	for sc, was := range v.decided {
		allowed, err := v.ask(sc)
		if err != nil {
			return false, err
		}
		now[sc] = allowed
		changed = changed || allowed != was
	}
	v.decided = now
	return changed, nil
}
