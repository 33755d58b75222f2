package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/placement"
)

func newPlacersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "placers",
		Short: "List the placement policies and their parameters",
		Long: `List the placement policies 'voda simulate --placer' accepts, with the
parameters 'voda simulate --placer-param' sets and their defaults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg := placement.Builtin()
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSUMMARY")
			for _, name := range reg.Names() {
				e, _ := reg.Lookup(name)
				fmt.Fprintf(w, "%s\t%s\n", e.Name, e.Summary)
				for _, p := range e.Params {
					fmt.Fprintf(w, "\t  --placer-param %s=<%s> (default %s): %s\n", p.Name, p.Name, p.Default, p.Help)
				}
			}
			if err := w.Flush(); err != nil {
				return fmt.Errorf("placers: %w", err)
			}
			return nil
		},
	}
}
