package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/ui"
)

// routeAttributes maps each route (its ServeMux pattern) to the action it
// performs, for the Authorizer. The Name of an action on one object is
// filled from the path. A route missing here is refused to everyone but
// is still authenticated (see authorize), so a new route cannot be served
// unchecked by mistake; TestEveryRouteHasAttributes keeps the table whole.
var routeAttributes = map[string]auth.Attributes{
	"POST " + RouteJobs:        {Verb: auth.VerbCreate, Resource: auth.ResourceJobs},
	"GET " + RouteJobs:         {Verb: auth.VerbList, Resource: auth.ResourceJobs},
	"GET " + RouteJob:          {Verb: auth.VerbGet, Resource: auth.ResourceJobs},
	"DELETE " + RouteJob:       {Verb: auth.VerbDelete, Resource: auth.ResourceJobs},
	"PUT " + RouteJobPriority:  {Verb: auth.VerbUpdate, Resource: auth.ResourceJobs, Subresource: auth.SubresourcePriority},
	"POST " + RouteJobProgress: {Verb: auth.VerbUpdate, Resource: auth.ResourceJobs, Subresource: auth.SubresourceProgress},
	"GET " + RouteSchedulers:   {Verb: auth.VerbList, Resource: auth.ResourceSchedulers},
	"GET " + RouteScheduler:    {Verb: auth.VerbGet, Resource: auth.ResourceSchedulers},
	"PUT " + RouteAlgorithm:    {Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceAlgorithm},
	"PUT " + RouteRateLimit:    {Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceRateLimit},
	"GET " + RouteAlgorithms:   {Verb: auth.VerbList, Resource: auth.ResourceAlgorithms},
	// A team's quota is named by the team alone: one quota resource per
	// team, whatever the GPU type, as RBAC names a namespace.
	"GET " + RouteTeams:   {Verb: auth.VerbList, Resource: auth.ResourceTeams},
	"PUT " + RouteTeam:    {Verb: auth.VerbUpdate, Resource: auth.ResourceTeams},
	"DELETE " + RouteTeam: {Verb: auth.VerbDelete, Resource: auth.ResourceTeams},
	// The nodes are the schedulers' (which jobs hold GPUs is filtered
	// as jobs are); the stream is a list of jobs (with the nodes and the
	// schedulers when the caller may list schedulers).
	"GET " + RouteNodes:         {Verb: auth.VerbList, Resource: auth.ResourceSchedulers},
	"GET " + RouteEvents:        {Verb: auth.VerbList, Resource: auth.ResourceJobs},
	"GET " + RouteOpenAPI:       {Verb: auth.VerbGet, Path: RouteOpenAPI},
	"GET " + RouteMetrics:       {Verb: auth.VerbGet, Path: RouteMetrics},
	"POST " + RouteLegacyJobs:   {Verb: auth.VerbCreate, Resource: auth.ResourceJobs},
	"DELETE " + RouteLegacyJobs: {Verb: auth.VerbDelete, Resource: auth.ResourceJobs}, // the name is in the body
	"GET " + RouteLegacyJobs:    {Verb: auth.VerbList, Resource: auth.ResourceJobs},
	"PUT " + RouteLegacyAlgo:    {Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceAlgorithm},
	"PUT " + RouteLegacyLimit:   {Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceRateLimit},
}

// openRoutes are served to anyone: the probes of kubelets and load
// balancers, which carry no token and reveal nothing, and the dashboard's
// static pages, which are Voda's public code; the data they show comes
// from the API routes, with the viewer's token.
var openRoutes = map[string]bool{
	"GET " + RouteHealthz:                       true,
	"GET " + RouteReadyz:                        true,
	"GET " + ui.Prefix:                          true,
	"GET " + strings.TrimSuffix(ui.Prefix, "/"): true,
}

// authorize authenticates r and asks the Authorizer about its route: a
// 401 or 403 error when the caller may not go on. It returns r with the
// user in its context. Without an Authenticator (anonymous
// mode) every request goes on as it is. A path no route takes is
// authenticated only, so that strangers learn nothing of the routes;
// noRoute then answers 404 or 405.
func (s *Server) authorize(r *http.Request) (*http.Request, error) {
	if s.cfg.Authenticator == nil {
		return r, nil
	}
	_, pattern := s.mux.Handler(r)
	if openRoutes[pattern] {
		return r, nil
	}
	authn := s.cfg.Authenticator
	if pattern == "POST "+RouteJobProgress && s.cfg.ReportAuthenticator != nil {
		authn = s.cfg.ReportAuthenticator // the job's pods, not people
	}
	u, ok, err := authn.Authenticate(r)
	if err != nil {
		s.log.Error("authenticate", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if !ok {
		r.Pattern = pattern // for the request metrics
		msg := "this server requires a bearer token (Authorization: Bearer <token>; voda's CLI sends --token, $VODA_TOKEN or the current kubeconfig context's token)"
		if _, given := auth.BearerToken(r); given {
			msg = "the bearer token is not valid"
		}
		if err != nil {
			msg = "the bearer token could not be checked; see the server log"
		}
		return r, newError(http.StatusUnauthorized, ReasonUnauthorized, "", msg).with("WWW-Authenticate", `Bearer realm="voda"`)
	}
	r = r.WithContext(auth.WithUser(r.Context(), u))
	if pattern == "" || pattern == "/" {
		return r, nil
	}
	a, known := routeAttributes[pattern]
	if !known {
		s.log.Error("route has no authorization attributes; refused", "pattern", pattern)
		return r, forbid(r, pattern, u, auth.Attributes{Verb: r.Method, Path: r.URL.Path}, "the route has no authorization rule")
	}
	if a.Resource != "" && a.Verb != auth.VerbList {
		a.Name = pathName(pattern, r.URL)
	}
	if a.Name == "" && a.Resource == auth.ResourceSchedulers {
		a.Name = r.URL.Query().Get("gpuType") // the original's routes
	}
	if a.Resource == auth.ResourceJobs {
		// Who may act on a job depends on its namespace and kind, which
		// the handler learns from the manifest or the store: it asks
		// (see allow, visible).
		return r, nil
	}
	r.Pattern = pattern // for allow's answer; the mux sets it again
	return r, s.allow(r, a)
}

// allow asks the Authorizer whether the request's caller may perform a:
// a 403 error if not. Without authentication everyone may do
// anything.
func (s *Server) allow(r *http.Request, a auth.Attributes) error {
	authz := s.cfg.Authorizer
	if authz == nil {
		return nil
	}
	if a.Subresource == auth.SubresourceProgress && s.cfg.ReportAuthorizer != nil {
		authz = s.cfg.ReportAuthorizer
	}
	u, _ := auth.UserFrom(r.Context())
	allowed, reason, err := authz.Authorize(r.Context(), u, a)
	if err != nil {
		s.log.Error("authorize", "user", u.Name, "action", a.String(), "err", err)
		reason = "the authorizer failed; see the server log"
	}
	if !allowed || err != nil {
		s.log.Info("refused", "user", u.Name, "action", a.String(), "reason", reason)
		return forbid(r, r.Pattern, u, a, reason)
	}
	if a.Verb != auth.VerbGet && a.Verb != auth.VerbList {
		// An audit trail of changes: who deleted or re-prioritised a
		// job, who switched the algorithm.
		s.log.Info("authorized", "user", u.Name, "action", a.String())
	}
	return nil
}

// jobAction is the action of the request's route on one job: a job of
// kind in namespace, named name (empty for a new job).
func jobAction(r *http.Request, kind jobspec.Kind, namespace, name string) auth.Attributes {
	a := routeAttributes[r.Pattern]
	a.Kind, a.Namespace, a.Name = string(kind), namespace, name
	return a
}

// visible returns the jobs the request's caller may see: those of the
// namespaces and kinds where the Authorizer allows the route's list
// action. It asks once per namespace and kind, and returns a 403 error
// when it cannot decide, rather than show a partial list.
func (s *Server) visible(r *http.Request, jobs []store.Job) ([]store.Job, error) {
	if s.cfg.Authorizer == nil {
		return jobs, nil
	}
	v := s.newViewer(r.Context())
	v.action = routeAttributes[r.Pattern]
	out := make([]store.Job, 0, len(jobs))
	for _, j := range jobs {
		allowed, err := v.sees(s.namespaceOf(j), string(j.Kind))
		if err != nil {
			a := jobAction(r, j.Kind, s.namespaceOf(j), "")
			return nil, forbid(r, r.Pattern, v.user, a, "the authorizer failed; see the server log")
		}
		if allowed {
			out = append(out, j)
		}
	}
	return out, nil
}

// forbid is the 403 error of u's action a, refused for reason; it sets
// r's pattern for the request metrics.
func forbid(r *http.Request, pattern string, u auth.User, a auth.Attributes, reason string) error {
	r.Pattern = pattern
	msg := fmt.Sprintf("user %q may not %s", u.Name, a)
	if reason != "" {
		msg += ": " + reason
	}
	return newError(http.StatusForbidden, ReasonForbidden, "", msg)
}

// pathName is the object a path names: the segment of r's path where
// pattern has its last wildcard ({name}, {gpuType}, {team}), unescaped;
// empty when the pattern has none. (The mux fills path values only as it
// serves.)
func pathName(pattern string, u *url.URL) string {
	_, path, _ := strings.Cut(pattern, " ")
	want := strings.Split(path, "/")
	got := strings.Split(u.EscapedPath(), "/")
	for i := len(want) - 1; i >= 0; i-- {
		if seg := want[i]; strings.HasPrefix(seg, "{") && i < len(got) {
			name, err := url.PathUnescape(got[i])
			if err != nil {
				return got[i]
			}
			return name
		}
	}
	return ""
}
