package kube

import (
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRBACLeastPrivilege asks the API server, as `kubectl auth can-i
// --as` does, what deploy/rbac.yaml lets Voda's ServiceAccount do: all
// it needs in a job namespace, on nodes, on its leases and to ask the
// cluster about its API's callers, and nothing
// on pods or jobs elsewhere, on secrets, or on other workloads.
func TestRBACLeastPrivilege(t *testing.T) {
	schedulerKubeconfig(t) // applies deploy/rbac.yaml
	jobs := "t-rbac"
	if err := env.CreateNamespace(t.Context(), jobs); err != nil {
		t.Fatal(err)
	}
	bindJobRole(t, jobs)
	other := "t-rbac-other"
	if err := env.CreateNamespace(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	type check struct {
		verb, group, resource, ns string
		want                      bool
	}
	var checks []check
	for _, verb := range []string{"get", "list", "watch", "patch", "delete"} {
		checks = append(checks, check{verb, "", "pods", jobs, true}, check{verb, "", "pods", other, false}, check{verb, "", "pods", "kube-system", false})
	}
	for _, verb := range []string{"get", "list", "watch", "create", "patch", "delete"} {
		for _, res := range []string{"mpijobs", "pytorchjobs"} {
			checks = append(checks, check{verb, "kubeflow.org", res, jobs, true}, check{verb, "kubeflow.org", res, other, false})
		}
	}
	checks = append(checks,
		check{"get", "", "pods/log", jobs, true},
		check{"get", "", "pods/log", other, false},
		check{"create", "", "pods/exec", jobs, false},
		check{"get", "", "configmaps", jobs, true},
		check{"get", "", "configmaps", other, false},
		check{"list", "", "configmaps", jobs, false},
		check{"get", "", "nodes", "", true},
		check{"list", "", "nodes", "", true},
		check{"watch", "", "nodes", "", true},
		check{"patch", "", "nodes", "", false},
		check{"delete", "", "nodes", "", false},
		check{"get", "coordination.k8s.io", "leases", leaseNamespace, true},
		check{"create", "coordination.k8s.io", "leases", leaseNamespace, true},
		check{"update", "coordination.k8s.io", "leases", leaseNamespace, true},
		check{"create", "coordination.k8s.io", "leases", jobs, false},
		check{"get", "", "secrets", jobs, false},
		check{"list", "", "secrets", leaseNamespace, false},
		check{"get", "", "secrets", "kube-system", false},
		check{"create", "", "pods", jobs, false},
		check{"update", "", "pods", jobs, false},
		check{"create", "apps", "deployments", jobs, false},
		check{"create", "batch", "jobs", jobs, false},
		check{"create", "rbac.authorization.k8s.io", "rolebindings", jobs, false},
		check{"create", "", "serviceaccounts", jobs, false},
		// --authentication kubernetes: who a token is, what RBAC allows.
		check{"create", "authentication.k8s.io", "tokenreviews", "", true},
		check{"create", "authorization.k8s.io", "subjectaccessreviews", "", true},
		check{"get", "authentication.k8s.io", "tokenreviews", "", false},
		check{"impersonate", "", "users", "", false},
		check{"impersonate", "", "serviceaccounts", jobs, false},
	)
	const sa = "system:serviceaccount:" + leaseNamespace + ":voda-scheduler"
	for _, c := range checks {
		t.Run(fmt.Sprintf("%s %s.%s in %q", c.verb, c.resource, c.group, c.ns), func(t *testing.T) {
			resource, subresource, _ := strings.Cut(c.resource, "/")
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   sa,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + leaseNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: c.verb, Group: c.group, Resource: resource, Subresource: subresource, Namespace: c.ns,
				},
			}}
			got, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != c.want {
				t.Errorf("can-i %s %s.%s -n %q as %s: %v, want %v (%s)", c.verb, c.resource, c.group, c.ns, sa, got.Status.Allowed, c.want, got.Status.Reason)
			}
		})
	}
}
