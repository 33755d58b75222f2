// Command voda is the Voda GPU scheduler for elastic deep-learning
// training: its server, its command-line client and its simulator.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCommand()
	if plugin, complete := programMode(os.Args[0]); plugin {
		root = newPluginCommand()
		if complete {
			// kubectl asks its plugins' completion helper with the words
			// after "kubectl voda"; cobra answers its hidden __complete.
			root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, os.Args[1:]...))
		}
	}
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
