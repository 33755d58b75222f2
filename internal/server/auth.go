package server

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/auth/kubeauth"
	"github.com/vodascheduler/voda/internal/kube"
)

// The authentication modes of AuthOptions.Mode.
const (
	// AuthNone serves anyone: allowed only on loopback, unless
	// AuthOptions.AllowAnonymous.
	AuthNone = "none"
	// AuthTokenFile checks bearer tokens against a static token file and
	// maps their groups to two roles.
	AuthTokenFile = "token-file"
	// AuthKubernetes defers to the cluster: TokenReviews say who a bearer
	// token is, SubjectAccessReviews what RBAC lets them do.
	AuthKubernetes = "kubernetes"
)

// DefaultAuthCacheTTL is how long AuthKubernetes reuses a review's
// answer: the default of kube's delegated authentication and
// authorization, so that a revoked token or RoleBinding stops working
// within seconds while a burst of requests costs one review.
const DefaultAuthCacheTTL = 10 * time.Second

// maxAuthCacheTTL bounds AuthOptions.CacheTTL: a longer cache would keep
// a revoked credential working for too long.
const maxAuthCacheTTL = 10 * time.Minute

// AuthOptions say who may call the API and how it is reached (see
// docs/security.md). The zero value is the anonymous mode over plain
// HTTP, which validate allows only on a loopback address.
type AuthOptions struct {
	// Mode is AuthNone, AuthTokenFile or AuthKubernetes; empty means
	// AuthTokenFile when TokenFile is set, else AuthNone.
	Mode string
	// TokenFile is a static token file of kube-apiserver's format
	// (auth.TokenFile), for AuthTokenFile.
	TokenFile string
	// CacheTTL is how long AuthKubernetes reuses the answer of a
	// TokenReview or SubjectAccessReview (DefaultAuthCacheTTL when 0).
	CacheTTL time.Duration
	// UsersGroup and AdminsGroup are the groups of the user and admin
	// roles (auth.Roles); empty means auth.DefaultUsersGroup and
	// auth.DefaultAdminsGroup.
	UsersGroup, AdminsGroup string
	// AllowAnonymous lets an API without TokenFile listen on an address
	// other than loopback, where anyone who reaches it may do anything.
	AllowAnonymous bool
	// TLSCertFile and TLSKeyFile, both or neither, are the PEM
	// certificate (chain) and private key the API serves HTTPS with.
	TLSCertFile, TLSKeyFile string
}

// mode is Mode with its default.
func (o *AuthOptions) mode() string {
	switch {
	case o.Mode != "":
		return o.Mode
	case o.TokenFile != "":
		return AuthTokenFile
	}
	return AuthNone
}

// validate checks the options of an API listening on addr.
func (o *AuthOptions) validate(addr string) error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file: give both or neither")
	}
	switch mode := o.mode(); {
	case mode != AuthNone && mode != AuthTokenFile && mode != AuthKubernetes:
		return fmt.Errorf("--authentication: %q is not %s, %s or %s", o.Mode, AuthNone, AuthTokenFile, AuthKubernetes)
	case mode == AuthTokenFile && o.TokenFile == "":
		return fmt.Errorf("--authentication %s needs --token-auth-file", AuthTokenFile)
	case mode != AuthTokenFile && o.TokenFile != "":
		return fmt.Errorf("--token-auth-file: not used with --authentication %s; give one or the other", mode)
	case o.CacheTTL < 0 || o.CacheTTL > maxAuthCacheTTL:
		return fmt.Errorf("--authentication-cache-ttl: %v is outside [0, %v]", o.CacheTTL, maxAuthCacheTTL)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil // listening reports it
	}
	if o.mode() == AuthNone && !o.AllowAnonymous && !auth.IsLoopbackAddr(addr) {
		return fmt.Errorf("--addr %s: not a loopback address, and without authentication anyone who reaches it may delete any job and change the algorithm; "+
			"give --token-auth-file or --authentication %s, or --insecure-allow-anonymous to serve it without authentication anyway", addr, AuthKubernetes)
	}
	return nil
}

// apiSecurity is what the API is built and served with.
type apiSecurity struct {
	authn auth.Authenticator // nil: anonymous
	authz auth.Authorizer
	// reportAuthn and reportAuthz guard the progress route on Kubernetes:
	// the job's own pods (nil: authn and authz).
	reportAuthn auth.Authenticator
	reportAuthz auth.Authorizer
	tls         *tls.Config // nil: plain HTTP
}

// load reads the token file and the certificate, or connects to the
// cluster of kubeconfig (see restConfig); errors name the flags.
func (o *AuthOptions) load(addr, kubeconfig, progressAudience string, log *slog.Logger) (apiSecurity, error) {
	var sec apiSecurity
	switch o.mode() {
	case AuthKubernetes:
		cfg, err := restConfig(kubeconfig)
		if err != nil {
			return sec, fmt.Errorf("--authentication %s: %w", AuthKubernetes, err)
		}
		ttl := cmp.Or(o.CacheTTL, DefaultAuthCacheTTL)
		if sec, err = kubeReviewers(cfg, ttl, cmp.Or(progressAudience, kube.DefaultProgressAudience)); err != nil {
			return sec, fmt.Errorf("--authentication %s: %w", AuthKubernetes, err)
		}
		log.Info("API authenticates bearer tokens with TokenReviews and authorizes with SubjectAccessReviews", "apiServer", cfg.Host, "cacheTTL", ttl)
	case AuthTokenFile:
		tf, err := auth.LoadTokenFile(o.TokenFile)
		if err != nil {
			return sec, fmt.Errorf("--token-auth-file: %w", err)
		}
		sec.authn, sec.authz = tf, auth.NewRoles(o.UsersGroup, o.AdminsGroup)
		roles := sec.authz.(auth.Roles)
		log.Info("API authenticates bearer tokens", "tokenFile", o.TokenFile, "tokens", tf.Len(),
			"usersGroup", roles.UsersGroup, "adminsGroup", roles.AdminsGroup)
	default:
		if auth.IsLoopbackAddr(addr) {
			break
		}
		log.Warn("API without authentication on a non-loopback address: anyone who reaches it may do anything", "addr", addr)
	}
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return sec, fmt.Errorf("--tls-cert-file and --tls-private-key-file: %w", err)
		}
		sec.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else if o.mode() != AuthNone && !auth.IsLoopbackAddr(addr) {
		log.Warn("API takes bearer tokens over plain HTTP on a non-loopback address; give --tls-cert-file and --tls-private-key-file unless a proxy terminates TLS", "addr", addr)
	}
	return sec, nil
}

// kubeReviewers are the Authenticators and Authorizers of AuthKubernetes,
// asking the API server of cfg and reusing answers for ttl: people's
// tokens and RBAC for every route but the progress reports, which take
// tokens of audience (the jobs' pods') and check the pod is the job's.
func kubeReviewers(cfg *rest.Config, ttl time.Duration, audience string) (apiSecurity, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return apiSecurity{}, err
	}
	return apiSecurity{
		authn:       kubeauth.NewTokenReviewer(cs.AuthenticationV1(), kubeauth.TokenReviewOptions{TTL: ttl}),
		authz:       kubeauth.NewAccessReviewer(cs.AuthorizationV1(), kubeauth.AccessReviewOptions{AllowedTTL: ttl, DeniedTTL: ttl}),
		reportAuthn: kubeauth.NewTokenReviewer(cs.AuthenticationV1(), kubeauth.TokenReviewOptions{TTL: ttl, Audiences: []string{audience}}),
		reportAuthz: kubeauth.NewPodReports(cs.CoreV1(), kube.LabelJob, kubeauth.PodReportsOptions{TTL: ttl}),
	}, nil
}
