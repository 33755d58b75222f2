package clientconfig

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"

	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/auth"
)

// Sent is the credential a client sends, and where it came from, so that
// a 401 can say which one the server refused. The zero value is a client
// that sends no token and looked at no kubeconfig context.
type Sent struct {
	// source is "--token", "$VODA_TOKEN" or "kubeconfig context \"<name>\"";
	// empty when the client sends no token.
	source string
	// kubeContext names the kubeconfig context whose token was withheld
	// (withheld) or whose user has none to send; empty when no kubeconfig
	// context was looked at.
	kubeContext string
	// withheld: the kubeconfig context has a token, but server is plain
	// HTTP and not loopback.
	withheld bool
	server   string
}

// ExplainUnauthorized adds to an error that holds a 401 of the server a
// line saying which credential the request carried: the server refused it,
// or wanted one and got none. Other errors are returned as they are.
func (s Sent) ExplainUnauthorized(err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		return err
	}
	return fmt.Errorf("%w\n%s", err, s.explain())
}

// explain says which credential was sent, for a 401.
func (s Sent) explain() string {
	switch {
	case s.withheld:
		return fmt.Sprintf("The request carried no token: the token of kubeconfig context %q was withheld because %s is plain HTTP and not a loopback address, "+
			"so anyone on the way could read a key to the cluster. Serve the API over https and give --server https://... "+
			"(with --certificate-authority if a private authority signed its certificate), or give a token explicitly with --token or $%s.",
			s.kubeContext, s.server, TokenEnv)
	case s.source != "":
		return fmt.Sprintf("The request carried the token of %s; the server did not accept it.", s.source)
	case s.kubeContext != "":
		return fmt.Sprintf("The request carried no token (kubeconfig context %q has no token, token file or exec plugin): give one with --token or $%s, or choose another context with --context.", s.kubeContext, TokenEnv)
	}
	return fmt.Sprintf("The request carried no token: give one with --token or $%s, or use a kubeconfig context that has one (--kubeconfig, --context).", TokenEnv)
}

// kubeconfigOption is the option that sends the token of the kubeconfig
// context (--kubeconfig, --context) to server, when it may go there
// (mayCarryKubeconfigToken); it records in sent what is sent.
func (o Options) kubeconfigOption(server string, sent *Sent) (client.Option, error) {
	none := client.WithTransportWrapper(nil)
	cred, err := loadKubeCredential(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	if cred == nil {
		return none, nil
	}
	sent.kubeContext = cred.context
	if cred.none {
		return none, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	if !mayCarryKubeconfigToken(u) {
		sent.withheld, sent.server = true, server
		return none, nil
	}
	wrap, err := cred.wrapper(u)
	if err != nil {
		return nil, err
	}
	sent.source = fmt.Sprintf("kubeconfig context %q", cred.context)
	return client.WithTransportWrapper(wrap), nil
}

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
