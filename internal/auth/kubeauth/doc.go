// Package kubeauth is the Kubernetes mode of Voda's API security: the API
// server defers to the cluster, as Kubernetes' aggregated API servers do
// with delegated authentication and authorization.
//
//   - TokenReviewer (an auth.Authenticator) asks the cluster who a bearer
//     token belongs to, with a TokenReview.
//   - AccessReviewer (an auth.Authorizer) asks the cluster whether that
//     user may perform an action, with a SubjectAccessReview, naming jobs
//     as the Kubernetes resources they are (mpijobs.kubeflow.org in their
//     namespace) and Voda's own resources in the API group
//     vodascheduler.io. RBAC, or whatever authorizer the cluster runs,
//     decides.
//
// Both keep answers for a few seconds in a bounded cache, and a burst of
// requests with the same question makes one review, so that a busy API
// does not turn every request into a round trip to kube-apiserver.
//
// The package is written with plain client-go rather than
// k8s.io/apiserver's delegating authenticator and authorizer: those come
// in webhook packages that pull gRPC, OpenTelemetry and CEL into the
// binary, for what is here a few hundred lines.
package kubeauth
