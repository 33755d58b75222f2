package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/auth"
)

// teamAuthorizer allows what Kubernetes RBAC would with one RoleBinding
// per team: a user acts on jobs in the namespace named after their first
// group and nowhere else; "root" may do anything. It records what it was
// asked, and fails when failing is set.
type teamAuthorizer struct {
	mu      sync.Mutex
	asked   []auth.Attributes
	failing bool
}

func (z *teamAuthorizer) Authorize(_ context.Context, u auth.User, a auth.Attributes) (bool, string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.asked = append(z.asked, a)
	switch {
	case z.failing:
		return false, "", errors.New("the authorizer is down")
	case u.Name == "root":
		return true, "", nil
	case a.Resource != auth.ResourceJobs:
		return a.Verb == auth.VerbGet || a.Verb == auth.VerbList, "reads only", nil
	case len(u.Groups) > 0 && a.Namespace == u.Groups[0]:
		return true, "", nil
	}
	return false, "not your team's namespace", nil
}

func (z *teamAuthorizer) last() auth.Attributes {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.asked[len(z.asked)-1]
}

// inNamespace is an MPIJob manifest naming a namespace.
func inNamespace(name, ns string) string {
	return strings.Replace(mpiJob(name, "1", "2", "v100"), "metadata: {name: "+name+"}", "metadata: {name: "+name+", namespace: "+ns+"}", 1)
}

// TestNamespacedAuthorization: jobs belong to their namespace; a caller
// may act on a job, and sees it listed, only where the Authorizer allows
// the action on the job's kind in its namespace.
func TestNamespacedAuthorization(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0\n" + userToken + ",alice,1,team-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	z := &teamAuthorizer{}
	f := newFixtureWith(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, z })
	submit := func(token, manifest string) Job {
		t.Helper()
		code, _, _, b := f.as(token, "POST", RouteJobs, "application/yaml", manifest)
		if code != http.StatusCreated {
			t.Fatalf("submit: %d %s", code, b)
		}
		var j Job
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	mine := submit(userToken, inNamespace("mine", "team-a"))
	if mine.Namespace != "team-a" {
		t.Errorf("the job's namespace is %q, want team-a", mine.Namespace)
	}
	if got, want := z.last(), (auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Namespace: "team-a", Kind: "MPIJob"}); got != want {
		t.Errorf("a submission asked %+v, want %+v", got, want)
	}
	theirs := submit(adminToken, inNamespace("theirs", "team-b"))
	inDefault := submit(adminToken, mpiJob("nowhere", "1", "2", "v100"))
	if inDefault.Namespace != "default" {
		t.Errorf("a manifest without a namespace: job in %q, want default", inDefault.Namespace)
	}

	refused := "in namespace team-b: not your team's namespace"
	for _, c := range []struct {
		name, method, path, contentType, body string
		wantCode                              int
		wantMessage                           string
		want                                  auth.Attributes // asked last, if Verb is set
	}{
		{"get another team's job", "GET", "/api/v1/jobs/" + theirs.Name, "", "", 403, `user "alice" may not get MPIJob jobs ` + theirs.Name + " " + refused,
			auth.Attributes{Verb: "get", Resource: "jobs", Name: theirs.Name, Namespace: "team-b", Kind: "MPIJob"}},
		{"delete another team's job", "DELETE", "/api/v1/jobs/" + theirs.Name, "", "", 403, "may not delete MPIJob jobs " + theirs.Name + " " + refused,
			auth.Attributes{Verb: "delete", Resource: "jobs", Name: theirs.Name, Namespace: "team-b", Kind: "MPIJob"}},
		{"delete another team's job, legacy route", "DELETE", RouteLegacyJobs, "", theirs.Name, 403, "may not delete MPIJob jobs " + theirs.Name + " " + refused, auth.Attributes{}},
		{"reprioritise another team's job", "PUT", "/api/v1/jobs/" + theirs.Name + "/priority", "application/json", `{"priority": 1}`, 403,
			"may not update MPIJob jobs/priority " + theirs.Name + " " + refused,
			auth.Attributes{Verb: "update", Resource: "jobs", Subresource: "priority", Name: theirs.Name, Namespace: "team-b", Kind: "MPIJob"}},
		{"submit to another team's namespace", "POST", RouteJobs, "application/yaml", inNamespace("sneaky", "team-b"), 403, "may not create MPIJob jobs " + refused, auth.Attributes{}},
		{"dry-run to another team's namespace", "POST", RouteJobs + "?dryRun=All", "application/yaml", inNamespace("sneaky", "team-b"), 403, "may not create", auth.Attributes{}},
		{"submit to another team's namespace, legacy route", "POST", RouteLegacyJobs, "application/yaml", inNamespace("sneaky", "team-b"), 403, "may not create", auth.Attributes{}},
		{"get a job without a namespace", "GET", "/api/v1/jobs/" + inDefault.Name, "", "", 403, "in namespace default", auth.Attributes{}},
		{"a job that does not exist", "GET", "/api/v1/jobs/nosuch", "", "", 404, "no job", auth.Attributes{}},
		{"get my job", "GET", "/api/v1/jobs/" + mine.Name, "", "", 200, "", auth.Attributes{}},
		{"reprioritise my job", "PUT", "/api/v1/jobs/" + mine.Name + "/priority", "application/json", `{"priority": 1}`, 200, "", auth.Attributes{}},
		// Asked last whether their teams may be shown.
		{"read the schedulers", "GET", RouteSchedulers, "", "", 200, "", auth.Attributes{Verb: "list", Resource: "teams"}},
		{"change the algorithm", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "FIFO"}`, 403, "reads only",
			auth.Attributes{Verb: "update", Resource: "schedulers", Subresource: "algorithm", Name: "v100"}},
	} {
		code, _, e, b := f.as(userToken, c.method, c.path, c.contentType, c.body)
		if code != c.wantCode || !strings.Contains(e.Message, c.wantMessage) {
			t.Errorf("%s: %d %s, want %d with a message containing %q", c.name, code, b, c.wantCode, c.wantMessage)
		}
		if c.want.Verb != "" {
			if got := z.last(); got != c.want {
				t.Errorf("%s: asked %+v, want %+v", c.name, got, c.want)
			}
		}
	}
	// Nothing refused was done.
	if j, err := f.store.GetJob(t.Context(), theirs.Name); err != nil || j.DeleteRequested || j.Spec.Priority != theirs.Priority {
		t.Errorf("the other team's job after the refusals: %+v, %v", j, err)
	}

	names := func(token, path string) []string {
		t.Helper()
		code, _, _, b := f.as(token, "GET", path, "", "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		var l JobList
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range l.Items {
			out = append(out, j.Name)
		}
		return out
	}
	all := []string{mine.Name, theirs.Name, inDefault.Name}
	for _, c := range []struct {
		name, token, path string
		want              []string
	}{
		{"a user lists", userToken, RouteJobs, []string{mine.Name}},
		{"a user lists another namespace", userToken, RouteJobs + "?namespace=team-b", nil},
		{"an admin lists", adminToken, RouteJobs, all},
		{"an admin lists one namespace", adminToken, RouteJobs + "?namespace=team-b", []string{theirs.Name}},
	} {
		got := names(c.token, c.path)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The original's table too.
	if code, _, _, b := f.as(userToken, "GET", RouteLegacyJobs, "", ""); code != 200 || !strings.Contains(string(b), mine.Name) || strings.Contains(string(b), theirs.Name) {
		t.Errorf("legacy list: %d %s, want only %s", code, b, mine.Name)
	}
	// A list asks once per namespace and kind.
	z.mu.Lock()
	z.asked = nil
	z.mu.Unlock()
	names(userToken, RouteJobs)
	z.mu.Lock()
	want := []auth.Attributes{
		{Verb: "list", Resource: "jobs", Namespace: "default", Kind: "MPIJob"},
		{Verb: "list", Resource: "jobs", Namespace: "team-a", Kind: "MPIJob"},
		{Verb: "list", Resource: "jobs", Namespace: "team-b", Kind: "MPIJob"},
	}
	asked := slices.Clone(z.asked)
	z.mu.Unlock()
	slices.SortFunc(asked, func(a, b auth.Attributes) int { return strings.Compare(a.Namespace, b.Namespace) })
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("a list asked (-want,+got):\n%s", diff)
	}

	// An authorizer that cannot decide refuses, and shows no partial list.
	z.mu.Lock()
	z.failing = true
	z.mu.Unlock()
	for _, path := range []string{RouteJobs, "/api/v1/jobs/" + mine.Name} {
		if code, _, e, b := f.as(userToken, "GET", path, "", ""); code != 403 || !strings.Contains(e.Message, "the authorizer failed") {
			t.Errorf("GET %s with a failing authorizer: %d %s, want 403", path, code, b)
		}
	}
}
