package auth

import (
	"context"
	"strings"
	"testing"
)

func TestRoles(t *testing.T) {
	var (
		nobody = User{Name: "prometheus"}
		user   = User{Name: "alice", Groups: []string{"other", DefaultUsersGroup}}
		admin  = User{Name: "root", Groups: []string{DefaultAdminsGroup}}
	)
	jobs := func(verb, sub string) Attributes {
		return Attributes{Verb: verb, Resource: ResourceJobs, Subresource: sub, Name: "j"}
	}
	scheds := func(verb, sub string) Attributes {
		return Attributes{Verb: verb, Resource: ResourceSchedulers, Subresource: sub, Name: "v100"}
	}
	tests := []struct {
		a                    Attributes
		nobody, user, admins bool
	}{
		{Attributes{Verb: VerbGet, Path: "/metrics"}, true, true, true},
		{Attributes{Verb: VerbGet, Path: "/api/v1/openapi.yaml"}, true, true, true},
		{Attributes{Verb: VerbGet, Path: "/debug/pprof"}, false, false, false},
		{Attributes{Verb: VerbDelete, Path: "/metrics"}, false, false, false},
		{jobs(VerbCreate, ""), false, true, true},
		{jobs(VerbList, ""), false, true, true},
		{jobs(VerbGet, ""), false, true, true},
		{jobs(VerbDelete, ""), false, true, true},
		{jobs(VerbUpdate, SubresourcePriority), false, true, true},
		{jobs(VerbUpdate, ""), false, false, false},
		{scheds(VerbList, ""), false, true, true},
		{scheds(VerbGet, ""), false, true, true},
		{scheds(VerbUpdate, SubresourceAlgorithm), false, false, true},
		{scheds(VerbUpdate, SubresourceRateLimit), false, false, true},
		{scheds(VerbDelete, ""), false, false, false},
		{Attributes{Verb: VerbList, Resource: ResourceAlgorithms}, false, true, true},
		{Attributes{Verb: VerbList, Resource: ResourceTeams}, false, true, true},
		{Attributes{Verb: VerbGet, Resource: ResourceTeams, Name: "team-a"}, false, true, true},
		{Attributes{Verb: VerbUpdate, Resource: ResourceTeams, Name: "team-a"}, false, false, true},
		{Attributes{Verb: VerbDelete, Resource: ResourceTeams, Name: "team-a"}, false, false, true},
		{Attributes{Verb: VerbCreate, Resource: ResourceTeams, Name: "team-a"}, false, false, false},
		{Attributes{Verb: VerbGet, Resource: "secrets"}, false, false, false},
	}
	roles := NewRoles("", "")
	for _, tc := range tests {
		for _, c := range []struct {
			u    User
			want bool
		}{{nobody, tc.nobody}, {user, tc.user}, {admin, tc.admins}} {
			got, reason, err := roles.Authorize(context.Background(), c.u, tc.a)
			if err != nil || got != c.want {
				t.Errorf("%s may %s: %v (%q, %v), want %v", c.u.Name, tc.a, got, reason, err, c.want)
			}
			if !got && reason == "" {
				t.Errorf("%s may not %s, with no reason", c.u.Name, tc.a)
			}
		}
	}
}

func TestRolesGroupsConfigurable(t *testing.T) {
	roles := NewRoles("ml", "ops")
	algo := Attributes{Verb: VerbUpdate, Resource: ResourceSchedulers, Subresource: SubresourceAlgorithm}
	if ok, _, _ := roles.Authorize(context.Background(), User{Name: "a", Groups: []string{DefaultAdminsGroup}}, algo); ok {
		t.Error("the default admins group still works after another was configured")
	}
	if ok, _, _ := roles.Authorize(context.Background(), User{Name: "a", Groups: []string{"ops"}}, algo); !ok {
		t.Error("the configured admins group may not change the algorithm")
	}
	ok, reason, _ := roles.Authorize(context.Background(), User{Name: "a", Groups: []string{"ml"}}, algo)
	if ok || !strings.Contains(reason, `"ops"`) {
		t.Errorf("a user changing the algorithm: %v %q, want refused naming group ops", ok, reason)
	}
}

func TestAttributesString(t *testing.T) {
	for a, want := range map[Attributes]string{
		{Verb: VerbUpdate, Resource: ResourceSchedulers, Subresource: SubresourceAlgorithm, Name: "v100"}: "update schedulers/algorithm v100",
		{Verb: VerbList, Resource: ResourceJobs}:                                                          "list jobs",
		{Verb: VerbGet, Path: "/metrics"}:                                                                 "get /metrics",
		{Verb: VerbDelete, Resource: ResourceJobs, Name: "j", Namespace: "ml"}:                            "delete jobs j in namespace ml",
	} {
		if got := a.String(); got != want {
			t.Errorf("%+v: %q, want %q", a, got, want)
		}
	}
}
