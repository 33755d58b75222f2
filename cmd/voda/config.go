package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newConfigCommand is `voda config` and `kubectl voda config`: both
// record the Voda API in the kubeconfig context, where both read it
// (clientconfig.Options.ServerAddr).
func newConfigCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Record where a kubeconfig context's Voda API is",
		Long: `Record in a kubeconfig context where that cluster's Voda API is, so that
later commands in that context find it without --server. voda and
kubectl voda read and write the same record (the context's extension
vodascheduler.io); --server and $VODA_SERVER still take precedence.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return subcommandError(cmd, args, "subcommand") },
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file to write (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to record the server in (default the kubeconfig's current context)")

	var caFile string
	set := &cobra.Command{
		Use:   "set-server URL",
		Short: "Record the Voda API of the kubeconfig context",
		Long: `Record in the current kubeconfig context (or --context) where that
cluster's Voda API is, as the context's extension vodascheduler.io, so that
later voda and kubectl voda commands in the context find it. The kubeconfig
file that defines the context is rewritten; nothing else in it changes.
The context's token is sent only to an https or loopback server.

Without a kubeconfig (no Kubernetes) there is no context to record it in:
give --server or set $VODA_SERVER instead.`,
		Example: `  voda config set-server https://voda.example.com
  voda config set-server https://voda.example.com --certificate-authority ca.crt --context prod`,
		Args: serverURLOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			return setContextServer(cmd, o, args[0], caFile)
		},
	}
	set.Flags().StringVar(&caFile, "certificate-authority", "", "PEM file of the certificate authority that signed the server's certificate (default: the system's roots)")
	cmd.AddCommand(set)
	return cmd
}

// setContextServer records server (and caFile) in the kubeconfig context.
func setContextServer(cmd *cobra.Command, o *clientOptions, server, caFile string) error {
	name, recorded, err := o.SetServer(server, caFile)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Context %q uses the Voda API at %s.\n", name, recorded)
	return nil
}
