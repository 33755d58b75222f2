package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

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
}

// newClientCommands returns the commands that talk to a Voda server:
// create, get, describe, delete and set. They share --server.
func newClientCommands() []*cobra.Command {
	o := &clientOptions{}
	cmds := []*cobra.Command{
		newCreateCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newDeleteCommand(o),
		newSetCommand(o),
	}
	for _, c := range cmds {
		f := c.PersistentFlags()
		f.StringVar(&o.server, "server", "",
			"address of the Voda API, host:port or http(s)://host:port (default $"+serverEnv+", else "+api.DefaultServerAddr+")")
		f.StringVar(&o.token, "token", "", "bearer token for a server started with --token-auth-file (default $"+tokenEnv+")")
		f.StringVar(&o.caFile, "certificate-authority", "", "PEM file of the certificate authority that signed an https server's certificate (default $"+caEnv+", else the system's roots)")
	}
	return cmds
}

// serverAddr is the server to talk to: --server, else $VODA_SERVER,
// else the default address of `voda server`.
func (o *clientOptions) serverAddr() string {
	if o.server != "" {
		return o.server
	}
	if s := strings.TrimSpace(os.Getenv(serverEnv)); s != "" {
		return s
	}
	return "http://" + api.DefaultServerAddr
}

// client returns a client of the chosen server, with the token and the
// certificate authority of the flags or the environment.
func (o *clientOptions) client() (*client.Client, error) {
	addr := o.serverAddr()
	if _, err := client.New(addr, nil); err != nil {
		return nil, fmt.Errorf("--server or $%s: %w", serverEnv, err)
	}
	token := cmp.Or(o.token, strings.TrimSpace(os.Getenv(tokenEnv)))
	opts := []client.Option{from("--token or $"+tokenEnv, client.WithBearerToken(token))}
	if caFile := cmp.Or(o.caFile, strings.TrimSpace(os.Getenv(caEnv))); caFile != "" {
		opts = append(opts, from("--certificate-authority or $"+caEnv, client.WithCAFile(caFile)))
	}
	return client.New(addr, nil, opts...)
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

// unknownResource is the error of a get or describe with a resource it
// does not know.
func unknownResource(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("%s needs a resource: %s (see '%s --help')", cmd.CommandPath(), orList(names), cmd.CommandPath())
	}
	return fmt.Errorf("unknown resource %q for %s: use %s", args[0], cmd.CommandPath(), orList(names))
}
