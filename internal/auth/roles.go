package auth

import (
	"context"
	"fmt"
)

// The default groups of Roles.
const (
	DefaultUsersGroup  = "voda:users"
	DefaultAdminsGroup = "voda:admins"
)

// Roles is the standalone Authorizer: two roles, each held by the members
// of one group.
//
//   - Any authenticated caller, whatever its groups, may read the API's
//     description (GET /api/v1/openapi.yaml) and the Prometheus metrics
//     (GET /metrics): a scraper needs a token, but one without a group
//     can do nothing else.
//   - The user role (UsersGroup) may also submit, list, read and delete
//     jobs, change a job's priority, report a job's progress, and read
//     the schedulers, the algorithms and the teams' quotas. In the
//     standalone mode jobs are not owned: a user may act on every job, as
//     a team sharing a cluster does.
//   - The admin role (AdminsGroup) may do everything the user role may,
//     change a scheduler's algorithm and rate limit, and set and delete
//     the teams' quotas.
//
// Anything else is refused. The health probes are not asked about: the
// API serves them to anyone.
type Roles struct {
	UsersGroup  string
	AdminsGroup string
}

var _ Authorizer = Roles{}

// NewRoles returns the roles of two groups, each defaulting to
// DefaultUsersGroup and DefaultAdminsGroup when empty.
func NewRoles(usersGroup, adminsGroup string) Roles {
	if usersGroup == "" {
		usersGroup = DefaultUsersGroup
	}
	if adminsGroup == "" {
		adminsGroup = DefaultAdminsGroup
	}
	return Roles{UsersGroup: usersGroup, AdminsGroup: adminsGroup}
}

// Authorize applies the roles.
func (r Roles) Authorize(_ context.Context, u User, a Attributes) (bool, string, error) {
	isAdmin := r.AdminsGroup != "" && u.InGroup(r.AdminsGroup)
	isUser := isAdmin || r.UsersGroup != "" && u.InGroup(r.UsersGroup)
	switch need := roleFor(a); {
	case need == roleAny:
		return true, "", nil
	case need == roleUser && isUser:
		return true, "", nil
	case need == roleAdmin && isAdmin:
		return true, "", nil
	case need == roleUser:
		return false, fmt.Sprintf("needs the user role: membership of group %q or %q", r.UsersGroup, r.AdminsGroup), nil
	case need == roleAdmin:
		return false, fmt.Sprintf("needs the admin role: membership of group %q", r.AdminsGroup), nil
	}
	return false, "no role allows it", nil
}

type role int

const (
	roleNone role = iota
	roleAny       // any authenticated caller
	roleUser
	roleAdmin
)

// roleFor is the least role an action needs.
func roleFor(a Attributes) role {
	if a.Resource == "" {
		if a.Verb == VerbGet && (a.Path == "/metrics" || a.Path == "/api/v1/openapi.yaml") {
			return roleAny
		}
		return roleNone
	}
	switch a.Resource {
	case ResourceJobs:
		switch {
		case a.Subresource == "" && (a.Verb == VerbGet || a.Verb == VerbList || a.Verb == VerbCreate || a.Verb == VerbDelete):
			return roleUser
		case (a.Subresource == SubresourcePriority || a.Subresource == SubresourceProgress) && a.Verb == VerbUpdate:
			return roleUser
		}
	case ResourceSchedulers:
		switch {
		case a.Subresource == "" && (a.Verb == VerbGet || a.Verb == VerbList):
			return roleUser
		case (a.Subresource == SubresourceAlgorithm || a.Subresource == SubresourceRateLimit) && a.Verb == VerbUpdate:
			return roleAdmin
		}
	case ResourceAlgorithms:
		if a.Subresource == "" && (a.Verb == VerbGet || a.Verb == VerbList) {
			return roleUser
		}
	case ResourceTeams:
		switch {
		case a.Subresource == "" && (a.Verb == VerbGet || a.Verb == VerbList):
			return roleUser
		case a.Subresource == "" && (a.Verb == VerbUpdate || a.Verb == VerbDelete):
			return roleAdmin
		}
	}
	return roleNone
}
