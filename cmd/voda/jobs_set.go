package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newSetCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change a scheduler's algorithm or rate limit, a team's quota, or a job's priority",
		Long: `Change, while the server runs, the scheduling algorithm or the rate limit of a
GPU type's scheduler, a team's quota on a GPU type, or the priority of a
job. The scheduler applies the change at its next cycle.`,
		Example: `  voda set algorithm ElasticTiresias --gpu-type nvidia-tesla-v100
  voda set ratelimit 10 --gpu-type nvidia-tesla-v100
  voda set quota team-a --guarantee 8 --limit 16 --gpu-type nvidia-tesla-v100
  voda set priority mnist-elastic-20250601-100000 1`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	cmd.AddCommand(newSetAlgorithmCommand(o), newSetRateLimitCommand(o), newSetQuotaCommand(o), newSetPriorityCommand(o))
	return cmd
}

func newSetPriorityCommand(o *clientOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "priority JOB PRIORITY",
		Short: "Change a job's priority",
		Long: `Change a job's priority, an integer where 0 is the highest (the original's
JOB_PRIORITY). Algorithms that order jobs by priority use it from their next
cycle. A finished job's priority cannot be changed.

PRIORITY is taken as written, a negative number too (no '--' needed); the
server says which values it accepts. Flags may come before or after JOB
and PRIORITY.`,
		Example: `  voda set priority mnist-elastic-20250601-100000 0
  Priority of mnist-elastic-20250601-100000 set to 0`,
		Args: cobra.ArbitraryArgs, // checked by priorityArgs
		RunE: func(cmd *cobra.Command, args []string) error {
			name, prio, help, err := priorityArgs(cmd, args)
			if err != nil {
				return err
			}
			if help {
				return cmd.Help()
			}
			if err := checkOutput(&output, outJSON, outYAML); err != nil {
				return err
			}
			p, err := strconv.Atoi(prio)
			if err != nil {
				return fmt.Errorf("priority %q is not an integer", prio)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			job, err := c.SetPriority(cmd.Context(), name, p)
			if err != nil {
				return err
			}
			if output != outTable {
				return printObject(cmd.OutOrStdout(), output, job)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Priority of %s set to %d\n", job.Name, job.Priority)
			return nil
		},
	}
	addOutputFlag(cmd, &output, outJSON, outYAML)
	// Flag parsing stops at JOB, so that a PRIORITY of -1 is not taken
	// for a flag; priorityArgs parses the flags after PRIORITY.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// priorityArgs finds JOB and PRIORITY among `set priority`'s arguments,
// which cobra leaves unparsed from JOB on, and parses the flags between
// and after them: a negative number is an argument, not a flag; after
// "--" everything is. help reports --help among them.
func priorityArgs(cmd *cobra.Command, args []string) (name, priority string, help bool, err error) {
	flags := cmd.Flags()
	var pos []string
	for rest := args; len(rest) > 0; {
		switch {
		case rest[0] == "--":
			pos, rest = append(pos, rest[1:]...), nil
		case !strings.HasPrefix(rest[0], "-") || negativeNumber.MatchString(rest[0]):
			pos, rest = append(pos, rest[0]), rest[1:]
		default:
			if err := flags.Parse(rest); err != nil {
				return "", "", false, err
			}
			rest = flags.Args() // from the first argument on
			if flags.ArgsLenAtDash() == 0 {
				pos, rest = append(pos, rest...), nil
			}
		}
	}
	if help, _ = flags.GetBool("help"); help {
		return "", "", true, nil
	}
	if err := priorityOperand.check(cmd, pos); err != nil {
		return "", "", false, err
	}
	return pos[0], pos[1], false, nil
}

// negativeNumber is an argument that looks like a flag but is a number.
var negativeNumber = regexp.MustCompile(`^-[0-9.]`)
