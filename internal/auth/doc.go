// Package auth says who a caller of Voda's API is and what they may do.
//
// Two small interfaces carry it: an Authenticator turns a request into a
// User (today from a bearer token), an Authorizer decides whether a User
// may perform an action described by Attributes. The API's middleware
// (internal/api) calls one, then the other, and knows no implementation.
//
// The standalone mode implemented here reads kube-apiserver's static token
// file (TokenFile) and maps two groups to two roles (Roles): users act on
// jobs, admins also change a scheduler's algorithm and rate limit. The
// Attributes are shaped like a SubjectAccessReview's resource and
// non-resource attributes, so that a Kubernetes mode (TokenReview for the
// Authenticator, SubjectAccessReview for the Authorizer) can be plugged in
// behind the same interfaces without touching the API.
package auth
