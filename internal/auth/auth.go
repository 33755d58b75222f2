package auth

import (
	"context"
	"net/http"
	"strings"
)

// User is an authenticated caller.
type User struct {
	// Name identifies the caller in logs and in the answers that refuse
	// them.
	Name string
	// UID is a stable identifier; it may be empty.
	UID string
	// Groups decide the caller's roles (see Roles).
	Groups []string
	// Extra is what a Kubernetes TokenReview says of the caller beyond
	// its groups (e.g. a ServiceAccount token's pod); a
	// SubjectAccessReview passes it back. Nil elsewhere.
	Extra map[string][]string
}

// InGroup reports whether the user is a member of group.
func (u User) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Authenticator says who sent a request. It returns ok false, with a
// nil error, when the request carries no credential it recognises (no
// token, an unknown token); an error means it could not decide (e.g. a
// remote token review failed). It never logs or returns the credential.
type Authenticator interface {
	Authenticate(r *http.Request) (u User, ok bool, err error)
}

// The verbs of Attributes, as Kubernetes names them.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbDelete = "delete"
)

// APIGroup is the Kubernetes API group of the resources only Voda has
// (schedulers, algorithms, teams), which a SubjectAccessReview names and
// ClusterRoles grant. Jobs are not among them: a job is authorized as the
// kind it is (MPIJob, PyTorchJob), in its namespace.
const APIGroup = "vodascheduler.io"

// The resources and subresources of Attributes.
const (
	ResourceJobs       = "jobs"
	ResourceSchedulers = "schedulers"
	ResourceAlgorithms = "algorithms"
	// ResourceTeams are the teams' quotas, cluster-scoped and named by
	// team (a namespace): reading them names namespaces, so it is asked
	// about, not granted to every authenticated caller.
	ResourceTeams = "teams"

	SubresourcePriority  = "priority"  // of jobs
	SubresourceProgress  = "progress"  // of jobs: a report from the job's pods
	SubresourceAlgorithm = "algorithm" // of schedulers
	SubresourceRateLimit = "ratelimit" // of schedulers
)

// Attributes describe an action, as a SubjectAccessReview does: either a
// resource action (Resource set) or a non-resource one (Path set, e.g.
// GET /metrics).
type Attributes struct {
	Verb        string
	Resource    string
	Subresource string
	// Name is the object acted on (a job, a GPU type, a team); empty for lists
	// and creations.
	Name string
	// Namespace is the job's namespace, for actions on jobs; empty for a
	// list across namespaces and for the schedulers, algorithms and teams,
	// which belong to the whole cluster.
	Namespace string
	// Kind is the job's kind (MPIJob, PyTorchJob), for actions on jobs:
	// Kubernetes RBAC grants the job kinds one by one.
	Kind string
	// Path is the URL path of a non-resource action.
	Path string
}

// String describes the action for messages: "update schedulers/algorithm
// v100", "get /metrics".
func (a Attributes) String() string {
	if a.Resource == "" {
		return a.Verb + " " + a.Path
	}
	var b strings.Builder
	b.WriteString(a.Verb + " ")
	if a.Kind != "" {
		b.WriteString(a.Kind + " ")
	}
	b.WriteString(a.Resource)
	if a.Subresource != "" {
		b.WriteString("/" + a.Subresource)
	}
	if a.Name != "" {
		b.WriteString(" " + a.Name)
	}
	if a.Namespace != "" {
		b.WriteString(" in namespace " + a.Namespace)
	}
	return b.String()
}

// Authorizer decides whether u may perform a. A refusal is allowed
// false with a reason for the caller; an error means it could not decide
// (the caller is refused too).
type Authorizer interface {
	Authorize(ctx context.Context, u User, a Attributes) (allowed bool, reason string, err error)
}

type userKey struct{}

// WithUser returns ctx carrying the authenticated user.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user a request's context carries; ok is false
// for an anonymous request (no authentication configured).
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 9110); ok is false when
// there is no such header, or it is another scheme or empty.
func BearerToken(r *http.Request) (token string, ok bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
