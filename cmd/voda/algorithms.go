package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/algorithm"
)

func newAlgorithmsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "algorithms",
		Short: "List the scheduling algorithms and their parameters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg := algorithm.Builtin()
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tELASTIC\tSUMMARY")
			for _, name := range reg.Names() {
				e, _ := reg.Lookup(name)
				el := "no"
				if e.Has(algorithm.TagElastic) {
					el = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", e.Name, el, e.Summary)
				for _, p := range e.Params {
					fmt.Fprintf(w, "\t\t  --param %s=<%s> (default %s): %s\n", p.Name, p.Name, p.Default, p.Help)
				}
			}
			return w.Flush()
		},
	}
}
