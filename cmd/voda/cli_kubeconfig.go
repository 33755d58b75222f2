package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/homedir"

	"github.com/vodascheduler/voda/internal/auth"
)

// kubeCredential is the bearer credential of a kubeconfig context's user:
// a token, a token file or an exec plugin. Only those are taken: a client
// certificate, a username and password, impersonation and the legacy
// auth providers are for kube-apiserver alone, and so are the context's
// cluster address and certificate authority.
type kubeCredential struct {
	// context names the kubeconfig context.
	context string
	// none: the context's user has no token, token file or exec plugin
	// (only a client certificate, say), so there is nothing to send.
	none bool
	// config is the kubeconfig cut down to context, its cluster and its
	// user's token, token file or exec plugin.
	config clientcmdapi.Config
}

// loadKubeCredential reads the kubeconfig the way kubectl does: path
// (--kubeconfig) when given, else the files of $KUBECONFIG, else
// ~/.kube/config; and takes the credential of context (--context), else
// of the current context. No kubeconfig or no current context is (nil,
// nil), and a user without a token, token file or exec plugin is a
// credential that is none: the client sends no token. A kubeconfig that
// does not parse, a missing --kubeconfig and a --context that the
// kubeconfig does not have are errors.
func loadKubeCredential(path, context string) (*kubeCredential, error) {
	raw, name, kctx, err := loadKubeContext(path, context)
	if err != nil || kctx == nil {
		return nil, err
	}
	user := raw.AuthInfos[kctx.AuthInfo]
	if user == nil || (user.Token == "" && user.TokenFile == "" && user.Exec == nil) {
		return &kubeCredential{context: name, none: true}, nil
	}
	cfg := clientcmdapi.NewConfig()
	cfg.CurrentContext = name
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: user.Token, TokenFile: user.TokenFile, Exec: user.Exec}
	// clientcmd wants a cluster with a server. It is never dialed: an exec
	// plugin with provideClusterInfo is told the real one (and its
	// certificate authority, which clientcmd then checks), and no other
	// part of the credential looks at it.
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: "https://kubernetes.invalid"}
	if cl := raw.Clusters[kctx.Cluster]; cl != nil && user.Exec != nil && user.Exec.ProvideClusterInfo {
		cfg.Clusters["cluster"] = cl
	}
	return &kubeCredential{context: name, config: *cfg}, nil
}

// kubeconfigRules are the rules kubectl loads a kubeconfig by: path
// (--kubeconfig) when given, else the files of $KUBECONFIG, else
// ~/.kube/config.
func kubeconfigRules(path string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// clientcmd finds ~ when the program starts; look it up now.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	rules.ExplicitPath = path
	rules.MigrationRules = nil // never write a file
	rules.WarnIfAllMissing = false
	return rules
}

// loadKubeContext reads the kubeconfig (kubeconfigRules) and returns it
// with the context named context, else the current one. No kubeconfig, no
// current context or a dangling current context is a nil context and no
// error (kubectl fails on the last, but Voda may not need one); a
// kubeconfig that does not parse, a missing --kubeconfig and a --context
// the kubeconfig does not have are errors.
func loadKubeContext(path, context string) (*clientcmdapi.Config, string, *clientcmdapi.Context, error) {
	rules := kubeconfigRules(path)
	raw, err := rules.Load()
	if err != nil {
		if path != "" {
			return nil, "", nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return nil, "", nil, fmt.Errorf("kubeconfig: %w", err)
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return raw, "", nil, nil
	}
	kctx := raw.Contexts[name]
	if kctx == nil && context != "" {
		return nil, "", nil, fmt.Errorf("--context %q: the kubeconfig (%s) has no such context", context, kubeconfigFiles(rules))
	}
	return raw, name, kctx, nil
}

// kubeconfigFiles names the files loadKubeCredential read, for errors.
func kubeconfigFiles(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	return strings.Join(rules.Precedence, string(filepath.ListSeparator))
}

// wrapper returns the transport wrapper that adds the credential to the
// requests to server and to no other: client-go's transport adds it to
// every request it is given, redirected ones too, so a redirect elsewhere
// would otherwise carry a key to the cluster along. The wrapper runs the
// exec plugin when a request needs a token, caches what it prints until it
// expires, and re-reads a token file, as kubectl does.
func (k *kubeCredential) wrapper(server *url.URL) (func(http.RoundTripper) http.RoundTripper, error) {
	rc, err := clientcmd.NewNonInteractiveClientConfig(k.config, k.context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", k.context, err)
	}
	tc, err := rc.TransportConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", k.context, err)
	}
	if _, err := transport.HTTPWrappersForConfig(tc, http.DefaultTransport); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", k.context, err)
	}
	return func(rt http.RoundTripper) http.RoundTripper {
		authed, err := transport.HTTPWrappersForConfig(tc, rt)
		if err != nil { // it did not fail above, with the same config
			authed = roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, err })
		}
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Scheme == server.Scheme && strings.EqualFold(r.URL.Host, server.Host) {
				return authed.RoundTrip(r)
			}
			return rt.RoundTrip(r)
		})
	}, nil
}

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mayCarryKubeconfigToken reports whether a kubeconfig's credential may
// go to server: over https, or to a loopback address (127.0.0.0/8, ::1,
// localhost), where nobody else is on the path. A plain-http server
// elsewhere would show a key to the whole cluster to anyone between.
func mayCarryKubeconfigToken(server *url.URL) bool {
	switch server.Scheme {
	case "https":
		return true
	case "http":
		return auth.IsLoopbackHost(server.Hostname())
	}
	return false
}
