package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// serverEnv names the environment variable that points the client
// commands at a server when --server is not given; tokenEnv and caEnv
// stand in for --token and --certificate-authority.
const (
	serverEnv = "VODA_SERVER"
	tokenEnv  = "VODA_TOKEN"
	caEnv     = "VODA_CA_FILE"
)

// clientOptions are the settings every command that talks to the API
// shares.
type clientOptions struct {
	server, token, caFile string
	// kubeconfig and context choose the kubeconfig context whose token
	// is sent when neither --token nor $VODA_TOKEN is given, and whose
	// Voda API (vodaExtension) is the server when neither --server nor
	// $VODA_SERVER is given.
	kubeconfig, context string
	// plugin: the commands run as `kubectl voda`, whose namespace is the
	// context's unless -n or -A says otherwise.
	plugin bool

	// sent describes the credential the last client sends, for the
	// error of a 401.
	sent sentCredential
	// stderr is the running command's standard error, where the server's
	// warnings go.
	stderr io.Writer
}

// sentCredential is the credential a client sends, and where it came
// from, so that a 401 can say which one the server refused.
type sentCredential struct {
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

// newClientCommands returns the commands that talk to a Voda server:
// create, get, describe, delete and set, which share --server, --token,
// --certificate-authority, --kubeconfig and --context; and config, which
// records the server in the kubeconfig. A 401 of the server is explained
// with the credential that was sent (explainUnauthorized).
func newClientCommands() []*cobra.Command {
	return newClientCommandsFor(&clientOptions{})
}

// newClientCommandsFor returns the client commands sharing o.
func newClientCommandsFor(o *clientOptions) []*cobra.Command {
	cmds := []*cobra.Command{
		newCreateCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newDeleteCommand(o),
		newSetCommand(o),
	}
	setServer := "voda config set-server"
	if o.plugin {
		setServer = "kubectl voda config set-server"
	}
	for _, c := range cmds {
		o.addFlags(c.PersistentFlags(), setServer)
	}
	cmds = append(cmds, newConfigCommand(o))
	for _, c := range cmds {
		wrapRuns(c, o)
	}
	return cmds
}

// addFlags adds the flags that choose the server and the credential to
// f; setServer is the command that records a server in the kubeconfig.
func (o *clientOptions) addFlags(f *pflag.FlagSet, setServer string) {
	f.StringVar(&o.server, "server", "",
		"address of the Voda API, host:port or http(s)://host:port (default $"+serverEnv+", else the kubeconfig context's (see '"+setServer+"'), else "+api.DefaultServerAddr+")")
	f.StringVar(&o.token, "token", "", "bearer token for the server (default $"+tokenEnv+", else the current kubeconfig context's token)")
	f.StringVar(&o.caFile, "certificate-authority", "", "PEM file of the certificate authority that signed an https server's certificate (default $"+caEnv+", else the system's roots)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file to take the token from when neither --token nor $"+tokenEnv+" is given: the context user's token, tokenFile or exec plugin, sent only to an https or loopback server (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context whose token to send (default the kubeconfig's current context)")
}

// wrapRuns makes every command under c print the server's warnings on
// its standard error and explain a 401 with the credential it sent.
func wrapRuns(c *cobra.Command, o *clientOptions) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return o.explainUnauthorized(run(cmd, args))
		}
	}
	for _, sub := range c.Commands() {
		wrapRuns(sub, o)
	}
}

// warn prints a warning of the server as kubectl does:
// `Warning: unknown field "spec.slotsPerWorkr"`.
func (o *clientOptions) warn(text string) {
	w := o.stderr
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "Warning: %s\n", text)
}

// explainUnauthorized adds to an error that holds a 401 of the server a
// line saying which credential the request carried: the server refused it,
// or wanted one and got none. Other errors are returned as they are.
func (o *clientOptions) explainUnauthorized(err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		return err
	}
	return fmt.Errorf("%w\n%s", err, o.sent.explain())
}

// explain says which credential was sent, for a 401.
func (s sentCredential) explain() string {
	switch {
	case s.withheld:
		return fmt.Sprintf("The request carried no token: the token of kubeconfig context %q was withheld because %s is plain HTTP and not a loopback address, "+
			"so anyone on the way could read a key to the cluster. Serve the API over https and give --server https://... "+
			"(with --certificate-authority if a private authority signed its certificate), or give a token explicitly with --token or $%s.",
			s.kubeContext, s.server, tokenEnv)
	case s.source != "":
		return fmt.Sprintf("The request carried the token of %s; the server did not accept it.", s.source)
	case s.kubeContext != "":
		return fmt.Sprintf("The request carried no token (kubeconfig context %q has no token, token file or exec plugin): give one with --token or $%s, or choose another context with --context.", s.kubeContext, tokenEnv)
	}
	return fmt.Sprintf("The request carried no token: give one with --token or $%s, or use a kubeconfig context that has one (--kubeconfig, --context).", tokenEnv)
}

// serverAddr is the server to talk to: --server, else $VODA_SERVER, else
// the kubeconfig context's Voda API (vodaExtension), else the default
// address of `voda server`. ca is the context's certificate authority
// when the server is the context's; source names where addr came from.
func (o *clientOptions) serverAddr() (addr, ca, source string, err error) {
	if o.server != "" {
		return o.server, "", "--server", nil
	}
	if s := strings.TrimSpace(os.Getenv(serverEnv)); s != "" {
		return s, "", "$" + serverEnv, nil
	}
	_, name, kctx, err := loadKubeContext(o.kubeconfig, o.context)
	if err != nil {
		return "", "", "", err
	}
	if kctx != nil {
		ext, err := contextVoda(name, kctx)
		if err != nil {
			return "", "", "", err
		}
		if ext.Server != "" {
			return ext.Server, ext.CertificateAuthority, fmt.Sprintf("kubeconfig context %q", name), nil
		}
		if o.plugin {
			return "", "", "", fmt.Errorf("kubeconfig context %q does not say where its Voda API is: run 'kubectl voda config set-server URL', or give --server or $%s", name, serverEnv)
		}
	}
	return "http://" + api.DefaultServerAddr, "", "the default server", nil
}

// namespace is the namespace a command works in when -n is not given:
// none (every one) for voda; as kubectl voda, the kubeconfig context's,
// else "default", as kubectl does.
func (o *clientOptions) namespace() (string, error) {
	if !o.plugin {
		return "", nil
	}
	_, _, kctx, err := loadKubeContext(o.kubeconfig, o.context)
	if err != nil {
		return "", err
	}
	if kctx != nil && kctx.Namespace != "" {
		return kctx.Namespace, nil
	}
	return "default", nil
}

// client returns a client of the chosen server, with the token and the
// certificate authority of the flags or the environment. Without --token
// and $VODA_TOKEN the token is the kubeconfig context's (kubeconfigOption).
func (o *clientOptions) client() (*client.Client, error) {
	addr, contextCA, source, err := o.serverAddr()
	if err != nil {
		return nil, err
	}
	probe, err := client.New(addr, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var opts []client.Option
	o.sent = sentCredential{}
	switch env := strings.TrimSpace(os.Getenv(tokenEnv)); {
	case o.token != "":
		o.sent.source = "--token"
		opts = append(opts, from("--token", client.WithBearerToken(o.token)))
	case env != "":
		o.sent.source = "$" + tokenEnv
		opts = append(opts, from("$"+tokenEnv, client.WithBearerToken(env)))
	default:
		opt, err := o.kubeconfigOption(probe.BaseURL())
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	if caFile := cmp.Or(o.caFile, strings.TrimSpace(os.Getenv(caEnv))); caFile != "" {
		opts = append(opts, from("--certificate-authority or $"+caEnv, client.WithCAFile(caFile)))
	} else if contextCA != "" {
		opts = append(opts, from(source+"'s certificate-authority", client.WithCAFile(contextCA)))
	}
	c, err := client.New(addr, nil, opts...)
	if err != nil {
		return nil, err
	}
	return c.WithWarningHandler(o.warn), nil
}

// kubeconfigOption is the option that sends the token of the kubeconfig
// context (--kubeconfig, --context) to server, when it may go there
// (mayCarryKubeconfigToken); it records in o.sent what is sent.
func (o *clientOptions) kubeconfigOption(server string) (client.Option, error) {
	none := client.WithTransportWrapper(nil)
	cred, err := loadKubeCredential(o.kubeconfig, o.context)
	if err != nil {
		return nil, err
	}
	if cred == nil {
		return none, nil
	}
	o.sent.kubeContext = cred.context
	if cred.none {
		return none, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	if !mayCarryKubeconfigToken(u) {
		o.sent.withheld, o.sent.server = true, server
		return none, nil
	}
	wrap, err := cred.wrapper(u)
	if err != nil {
		return nil, err
	}
	o.sent.source = fmt.Sprintf("kubeconfig context %q", cred.context)
	return client.WithTransportWrapper(wrap), nil
}

// from names where an option's setting came from in its error.
func from(source string, opt client.Option) client.Option {
	return func(c *client.Client) error {
		if err := opt(c); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		return nil
	}
}

// resolveGPUType is gpuType when given; otherwise the server's only GPU
// type, since then there is nothing to choose.
func resolveGPUType(ctx context.Context, c *client.Client, gpuType string) (string, error) {
	if gpuType != "" {
		return gpuType, nil
	}
	scheds, err := c.ListSchedulers(ctx)
	if err != nil {
		return "", err
	}
	types := make([]string, 0, len(scheds))
	for _, s := range scheds {
		types = append(types, s.GPUType)
	}
	sort.Strings(types)
	switch len(types) {
	case 0:
		return "", errors.New("the server has no schedulers (no GPU nodes are labeled vodascheduler/accelerator=<gpu-type>)")
	case 1:
		return types[0], nil
	}
	return "", fmt.Errorf("the server schedules several GPU types (%s): choose one with --gpu-type", strings.Join(types, ", "))
}

// unknownResource is the error of a get, describe or set with a resource
// it does not know.
func unknownResource(cmd *cobra.Command, args []string) error {
	return subcommandError(cmd, args, "resource")
}
