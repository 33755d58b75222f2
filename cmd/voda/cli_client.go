package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/clientconfig"
)

// clientOptions are the settings every command that talks to the API
// shares: the flags (clientconfig.Options), and what the running command
// needs to report the server's answers.
type clientOptions struct {
	clientconfig.Options

	// sent describes the credential the last client sends, for the
	// error of a 401.
	sent clientconfig.Sent
	// stderr is the running command's standard error, where the server's
	// warnings go.
	stderr io.Writer
}

// newClientCommands returns the commands that talk to a Voda server:
// create, get, describe, delete and set, which share --server, --token,
// --certificate-authority, --kubeconfig and --context; and config, which
// records the server in the kubeconfig. A 401 of the server is explained
// with the credential that was sent (clientconfig.Sent).
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
	if o.Plugin {
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
	f.StringVar(&o.Server, "server", "",
		"address of the Voda API, host:port or http(s)://host:port (default $"+clientconfig.ServerEnv+", else the kubeconfig context's (see '"+setServer+"'), else "+api.DefaultServerAddr+")")
	f.StringVar(&o.Token, "token", "", "bearer token for the server (default $"+clientconfig.TokenEnv+", else the current kubeconfig context's token)")
	f.StringVar(&o.CAFile, "certificate-authority", "", "PEM file of the certificate authority that signed an https server's certificate (default $"+clientconfig.CAEnv+", else the system's roots)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file to take the token from when neither --token nor $"+clientconfig.TokenEnv+" is given: the context user's token, tokenFile or exec plugin, sent only to an https or loopback server (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context whose token to send (default the kubeconfig's current context)")
}

// wrapRuns makes every command under c print the server's warnings on
// its standard error and explain a 401 with the credential it sent.
func wrapRuns(c *cobra.Command, o *clientOptions) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return o.sent.ExplainUnauthorized(run(cmd, args))
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

// client returns a client of the chosen server with the chosen
// credential (clientconfig.Options.Client), which prints the server's
// warnings, and records the credential for a 401.
func (o *clientOptions) client() (*client.Client, error) {
	c, sent, err := o.Client()
	o.sent = sent
	if err != nil {
		return nil, err
	}
	return c.WithWarningHandler(o.warn), nil
}

// clientForGPUType is client() and the GPU type a command acts on
// (resolveGPUType): the commands that change one GPU type's settings.
func (o *clientOptions) clientForGPUType(ctx context.Context, gpuType string) (*client.Client, string, error) {
	c, err := o.client()
	if err != nil {
		return nil, "", err
	}
	gt, err := resolveGPUType(ctx, c, gpuType)
	return c, gt, err
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
