package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// Positional arguments of the quota commands.
var (
	quotaOperand      = operands{usage: "TEAM", names: []string{"the team (its namespace)"}, list: "get teams", example: "team-a --guarantee 8"}
	quotaTeamsOperand = operands{usage: "TEAM...", names: []string{"the team (its namespace)"}, variadic: true, list: "get teams"}
)

// teamLists is what `get teams -o json|yaml` prints for several GPU
// types.
type teamLists struct {
	Items []api.TeamList `json:"items"`
}

func newGetTeamsCommand(o *clientOptions) *cobra.Command {
	var output, gpuType string
	cmd := &cobra.Command{
		Use:     "teams [TEAM...] [--gpu-type TYPE]",
		Aliases: []string{"team", "quotas", "quota"},
		Short:   "List the teams' quotas and their use of each GPU type",
		Long: `List each team (namespace) with a quota or live jobs on a GPU type: its
quota (set by an admin, or the default: no guarantee, no limit, weight 1),
the GPUs its jobs hold, what the scheduler's last cycle entitled it to,
what its jobs want, and its running and waiting jobs. USAGE sets the GPUs
in use against the guarantee and the limit: within its guarantee,
borrowing GPUs beyond it, or at its limit.

Without --gpu-type every GPU type is listed, with a GPU-TYPE column when
there are several. TEAM arguments show only those teams (a team with
neither quota nor jobs shows with the default). Reading the teams needs
the right to list teams (the user role; on Kubernetes, RBAC on
teams.vodascheduler.io).`,
		Example: `  voda get teams --gpu-type nvidia-tesla-v100
  TEAM     QUOTA     GUARANTEE   LIMIT   WEIGHT   IN-USE   ENTITLED   DEMAND   RUNNING   WAITING   USAGE
  team-a   set       8           16      1        12       12         16       2         1         borrowing 4
  team-b   default   0           -       1        4        4          4        1         0         borrowing 4`,
		RunE: func(cmd *cobra.Command, teams []string) error { return runGetTeams(cmd, o, output, gpuType, teams) },
	}
	cmd.Flags().StringVar(&gpuType, "gpu-type", "", "GPU type whose teams to list (default: every GPU type)")
	addOutputFlag(cmd, &output, outJSON, outYAML, outName)
	return cmd
}

func runGetTeams(cmd *cobra.Command, o *clientOptions, output, gpuType string, teams []string) error {
	if err := checkOutput(&output, outJSON, outYAML, outName); err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	gpuTypes := []string{gpuType}
	if gpuType == "" {
		scheds, err := c.ListSchedulers(ctx)
		if err != nil {
			return err
		}
		gpuTypes = gpuTypes[:0]
		for _, s := range scheds {
			gpuTypes = append(gpuTypes, s.GPUType)
		}
	}
	lists, errs, err := getEach(ctx, "teams of", gpuTypes, c.ListTeams)
	if err != nil {
		return err
	}
	for i := range lists {
		lists[i].Items = pickTeams(lists[i], teams)
	}
	out := cmd.OutOrStdout()
	switch output {
	case outJSON, outYAML:
		var v any = teamLists{Items: append([]api.TeamList{}, lists...)}
		if gpuType != "" && len(lists) == 1 {
			v = lists[0]
		}
		if err := printObject(out, output, v); err != nil {
			return err
		}
	case outName:
		for _, l := range lists {
			for _, t := range l.Items {
				fmt.Fprintln(out, t.Team)
			}
		}
	default:
		if !slices.ContainsFunc(lists, func(l api.TeamList) bool { return len(l.Items) > 0 }) {
			if len(errs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No teams found: no quotas and no live jobs.")
			}
			break
		}
		if err := printTeamTable(out, lists, len(gpuTypes) > 1); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// pickTeams is l's teams named in teams, in their order (a team the list
// lacks has the default quota and no jobs); all of them when teams is
// empty.
func pickTeams(l api.TeamList, teams []string) []api.Team {
	if len(teams) == 0 {
		return l.Items
	}
	out := make([]api.Team, 0, len(teams))
	for _, name := range teams {
		i := slices.IndexFunc(l.Items, func(t api.Team) bool { return t.Team == name })
		if i < 0 {
			d := l.Default
			out = append(out, api.Team{Team: name, Guarantee: d.Guarantee, Limit: d.Limit, Weight: d.Weight})
			continue
		}
		out = append(out, l.Items[i])
	}
	return out
}

// printTeamTable writes one row per team of each list; withType adds the
// GPU type first.
func printTeamTable(w io.Writer, lists []api.TeamList, withType bool) error {
	tw := newTable(w)
	header := "TEAM\tQUOTA\tGUARANTEE\tLIMIT\tWEIGHT\tIN-USE\tENTITLED\tDEMAND\tRUNNING\tWAITING\tUSAGE"
	if withType {
		header = "GPU-TYPE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, l := range lists {
		for _, t := range l.Items {
			quota, limit := "default", "-"
			if t.Quota {
				quota = "set"
			}
			if t.Limit > 0 {
				limit = strconv.Itoa(t.Limit)
			}
			row := []string{t.Team, quota, strconv.Itoa(t.Guarantee), limit, strconv.FormatFloat(t.Weight, 'g', -1, 64),
				strconv.Itoa(t.GPUsInUse), strconv.Itoa(t.Entitled), strconv.Itoa(t.Demand), strconv.Itoa(t.Running),
				strconv.Itoa(t.Waiting), teamUsage(t)}
			if withType {
				row = append([]string{l.GPUType}, row...)
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}

// teamUsage sets a team's GPUs in use against its guarantee and limit.
func teamUsage(t api.Team) string {
	usage := "within guarantee"
	if extra := t.GPUsInUse - t.Guarantee; extra > 0 {
		usage = "borrowing " + strconv.Itoa(extra)
	}
	if t.Limit > 0 && t.GPUsInUse >= t.Limit {
		usage += ", at limit"
	}
	return usage
}

// quotaFlags are the values of `set quota`.
type quotaFlags struct {
	gpuType, output    string
	guarantee, limit   int
	weight             float64
	weightSet, guarSet bool
}

func newSetQuotaCommand(o *clientOptions) *cobra.Command {
	f := &quotaFlags{}
	cmd := &cobra.Command{
		Use:   "quota TEAM --guarantee N [--limit N] [--weight W] [--gpu-type TYPE]",
		Short: "Set a team's quota on a GPU type (admins)",
		Long: `Set a team's (namespace's) quota on a GPU type, replacing the one it had
whole: --guarantee GPUs whenever its jobs want them, never more than
--limit (0, the default: no limit), and of the GPUs beyond every team's
guarantee a share in proportion to --weight (1 by default). A team without
a quota has the default: no guarantee, no limit, weight 1. The scheduler
applies the change at its next cycle.

Setting quotas needs the admin role (on Kubernetes, "update" on
teams.vodascheduler.io). --gpu-type may be left out when the server
schedules a single GPU type.`,
		Example: `  voda set quota team-a --guarantee 8 --limit 16 --gpu-type nvidia-tesla-v100
  Quota of team-a on nvidia-tesla-v100 set: guarantee 8, limit 16, weight 1`,
		Args: quotaOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.guarSet, f.weightSet = cmd.Flags().Changed("guarantee"), cmd.Flags().Changed("weight")
			return runSetQuota(cmd, o, f, args[0])
		},
	}
	cmd.Flags().StringVar(&f.gpuType, "gpu-type", "", "GPU type of the quota (default: the only one)")
	cmd.Flags().IntVar(&f.guarantee, "guarantee", 0, "GPUs guaranteed to the team whenever its jobs want them (required)")
	cmd.Flags().IntVar(&f.limit, "limit", 0, "the most GPUs the team may hold; 0 is no limit")
	cmd.Flags().Float64Var(&f.weight, "weight", 1, "the team's share of the GPUs beyond the guarantees, relative to the others'")
	addOutputFlag(cmd, &f.output, outJSON, outYAML)
	return cmd
}

func runSetQuota(cmd *cobra.Command, o *clientOptions, f *quotaFlags, team string) error {
	if err := checkOutput(&f.output, outJSON, outYAML); err != nil {
		return err
	}
	if !f.guarSet {
		return fmt.Errorf("missing --guarantee: %s %s --guarantee N (0 for none)", cmd.CommandPath(), team)
	}
	req := api.QuotaRequest{Guarantee: f.guarantee, Limit: f.limit}
	if f.weightSet {
		req.Weight = &f.weight
	}
	c, gt, err := o.clientForGPUType(cmd.Context(), f.gpuType)
	if err != nil {
		return err
	}
	t, err := c.SetQuota(cmd.Context(), gt, team, req)
	if err != nil {
		return err
	}
	if f.output != outTable {
		return printObject(cmd.OutOrStdout(), f.output, t)
	}
	limit := "none"
	if t.Limit > 0 {
		limit = strconv.Itoa(t.Limit)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Quota of %s on %s set: guarantee %d, limit %s, weight %s\n",
		t.Team, gt, t.Guarantee, limit, strconv.FormatFloat(t.Weight, 'g', -1, 64))
	return nil
}

func newDeleteQuotaCommand(o *clientOptions) *cobra.Command {
	var gpuType string
	cmd := &cobra.Command{
		Use:     "quota TEAM... [--gpu-type TYPE]",
		Aliases: []string{"quotas"},
		Short:   "Delete teams' quotas on a GPU type (admins)",
		Long: `Delete teams' quotas on a GPU type: each has the default quota again (no
guarantee, no limit, weight 1). A team without a quota is an error. Needs
the admin role (on Kubernetes, "delete" on teams.vodascheduler.io).
--gpu-type may be left out when the server schedules a single GPU type.`,
		Example: `  voda delete quota team-a --gpu-type nvidia-tesla-v100
  Quota of team-a on nvidia-tesla-v100 deleted`,
		Args: quotaTeamsOperand.check,
		RunE: func(cmd *cobra.Command, teams []string) error {
			c, gt, err := o.clientForGPUType(cmd.Context(), gpuType)
			if err != nil {
				return err
			}
			var errs []error
			for _, team := range teams {
				err := c.DeleteQuota(cmd.Context(), gt, team)
				var ce *client.ConnectionError
				if errors.As(err, &ce) {
					return err
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("delete quota of %s: %w", team, err))
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Quota of %s on %s deleted\n", team, gt)
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVar(&gpuType, "gpu-type", "", "GPU type of the quotas (default: the only one)")
	return cmd
}
