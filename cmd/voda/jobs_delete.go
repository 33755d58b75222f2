package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api/client"
)

func newDeleteCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete [job] NAME...",
		Short: "Delete training jobs, or teams' quotas",
		Long: `Delete training jobs, as kubectl deletes objects. The scheduler halts a live
job (its workers stop and free their GPUs) and the job ends Canceled; it
stays listed by 'voda get jobs' until it is deleted again or the server's
retention removes it. Deleting a job again while it is being halted
succeeds the same way, so a command that is run twice, or a script that
retries, does not fail.

Deleting a finished job (Completed, Failed or Canceled) removes its record
from the server: the message says what it was, "(was Completed; record
removed)", and the job is then not found.

'voda delete job NAME' is accepted as well, like kubectl. 'voda delete
quota TEAM' deletes a team's quota instead (see its --help).`,
		Example: `  voda delete mnist-elastic-20250601-100000
  Training job deleted: mnist-elastic-20250601-100000

  # Every waiting job
  voda delete $(voda get jobs --status Waiting -o name)

  # The records of every completed job
  voda delete $(voda get jobs --status Completed -o name)`,
		Args: jobNamesOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if names[0] == "job" || names[0] == "jobs" {
				// The server's names end in a timestamp, so no job is
				// named "job".
				names = names[1:]
			}
			if err := jobNamesOperand.check(cmd, names); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range names {
				job, err := c.DeleteJob(cmd.Context(), name)
				var ce *client.ConnectionError
				if errors.As(err, &ce) {
					return err
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
					continue
				}
				removed := ""
				if client.Removed(job) {
					removed = " (was " + string(job.Status) + "; record removed)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Training job deleted: %s%s\n", job.Name, removed)
			}
			return errors.Join(errs...)
		},
	}
	cmd.AddCommand(newDeleteQuotaCommand(o))
	return cmd
}
