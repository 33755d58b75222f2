package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
)

func newGetSchedulersCommand(o *clientOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "schedulers [GPU-TYPE...]",
		Aliases: []string{"scheduler", "sched"},
		Short:   "List the scheduler of every GPU type",
		Long: `List the scheduler of every GPU type: its algorithm, its rate limit (the
least time between two scheduling cycles), its nodes and GPUs, the GPUs in
use, its waiting and running jobs, and when it last ran a cycle.
-o wide adds the number of cycles and the algorithm's parameters.`,
		Example: `  voda get schedulers
  GPU-TYPE            ALGORITHM     RATELIMIT   NODES   GPUS   IN-USE   WAITING   RUNNING   LAST-CYCLE
  nvidia-tesla-v100   ElasticFIFO   30s         2       8      6        1         3         12s ago`,
		RunE: func(cmd *cobra.Command, gpuTypes []string) error { return runGetSchedulers(cmd, o, output, gpuTypes) },
	}
	addOutputFlag(cmd, &output, outWide, outJSON, outYAML, outName)
	return cmd
}

func runGetSchedulers(cmd *cobra.Command, o *clientOptions, output string, gpuTypes []string) error {
	if err := checkOutput(&output, outWide, outJSON, outYAML, outName); err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var scheds []api.Scheduler
	var errs []error
	if len(gpuTypes) == 0 {
		scheds, err = c.ListSchedulers(ctx)
	} else {
		scheds, errs, err = getEach(ctx, "scheduler", gpuTypes, c.GetScheduler)
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch output {
	case outJSON, outYAML:
		var v any = api.SchedulerList{Items: append([]api.Scheduler{}, scheds...)}
		if len(gpuTypes) == 1 && len(scheds) == 1 {
			v = scheds[0]
		}
		if err := printObject(out, output, v); err != nil {
			return err
		}
	case outName:
		for _, s := range scheds {
			fmt.Fprintln(out, s.GPUType)
		}
	default:
		if len(scheds) == 0 && len(gpuTypes) == 0 {
			fmt.Fprintln(cmd.ErrOrStderr(), "No schedulers found.")
		}
		if len(scheds) > 0 {
			now, _ := clockFrom(ctx)
			if err := printSchedulerTable(out, scheds, output == outWide, now); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}

// printSchedulerTable writes one row per GPU type. The age of the last
// cycle is measured on the server's clock when it says its time.
func printSchedulerTable(w io.Writer, scheds []api.Scheduler, wide bool, now time.Time) error {
	tw := newTable(w)
	header := "GPU-TYPE\tALGORITHM\tRATELIMIT\tNODES\tGPUS\tIN-USE\tWAITING\tRUNNING\tLAST-CYCLE"
	if wide {
		header += "\tCYCLES\tPARAMS"
	}
	fmt.Fprintln(tw, header)
	for _, s := range scheds {
		last := "-"
		if s.LastCycle != nil {
			ref := now
			if s.Now != nil {
				ref = *s.Now
			}
			last = relative(*s.LastCycle, ref)
		}
		row := []string{
			s.GPUType, dash(s.Algorithm), formatSeconds(s.RateLimitSeconds), strconv.Itoa(s.Nodes),
			strconv.Itoa(s.GPUs), strconv.Itoa(s.GPUsInUse), strconv.Itoa(s.Waiting), strconv.Itoa(s.Running), last,
		}
		if wide {
			row = append(row, strconv.FormatInt(s.Cycles, 10), dash(formatParams(s.Params)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// formatParams is "k=v,k2=v2", sorted by name.
func formatParams(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + params[k]
	}
	return strings.Join(keys, ",")
}

func newGetAlgorithmsCommand(o *clientOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "algorithms",
		Aliases: []string{"algorithm", "algo"},
		Short:   "List the scheduling algorithms the server offers",
		Long: `List the scheduling algorithms the server offers and their parameters, the
names 'voda set algorithm' accepts. ('voda algorithms' lists those built into
this binary, with their parameters' defaults, without asking a server.)`,
		Example: `  voda get algorithms
  voda get algorithms -o name`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&output, outJSON, outYAML, outName); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			algos, err := c.ListAlgorithms(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case outJSON, outYAML:
				return printObject(out, output, api.AlgorithmList{Items: append([]api.Algorithm{}, algos...)})
			case outName:
				for _, a := range algos {
					fmt.Fprintln(out, a.Name)
				}
				return nil
			}
			tw := newTable(out)
			fmt.Fprintln(tw, "NAME\tPARAMS\tSUMMARY")
			for _, a := range algos {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, dash(strings.Join(a.Params, ",")), a.Summary)
			}
			return tw.Flush()
		},
	}
	addOutputFlag(cmd, &output, outJSON, outYAML, outName)
	return cmd
}

func newSetAlgorithmCommand(o *clientOptions) *cobra.Command {
	var (
		output  string
		gpuType string
		params  []string
	)
	cmd := &cobra.Command{
		Use:   "algorithm NAME [--gpu-type TYPE] [--param KEY=VALUE...]",
		Short: "Switch a GPU type's scheduler to another algorithm",
		Long: `Switch a GPU type's scheduler to another scheduling algorithm (see
'voda get algorithms'), with parameters; parameters not given take the
algorithm's defaults. The next cycle allocates with the new algorithm.

--gpu-type may be left out when the server schedules a single GPU type.`,
		Example: `  voda set algorithm ElasticSRJF --gpu-type nvidia-tesla-v100
  Algorithm of nvidia-tesla-v100 set to ElasticSRJF

  voda set algorithm Tiresias --param threshold=7200`,
		Args: algorithmOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(&output, outJSON, outYAML); err != nil {
				return err
			}
			p, err := parseKeyValues(params)
			if err != nil {
				return err
			}
			c, gt, err := o.clientForGPUType(cmd.Context(), gpuType)
			if err != nil {
				return err
			}
			s, err := c.SetAlgorithm(cmd.Context(), gt, args[0], p)
			if err != nil {
				return err
			}
			if output != outTable {
				return printObject(cmd.OutOrStdout(), output, s)
			}
			msg := fmt.Sprintf("Algorithm of %s set to %s", s.GPUType, s.Algorithm)
			if len(s.Params) > 0 {
				msg += " (" + formatParams(s.Params) + ")"
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&gpuType, "gpu-type", "", "GPU type whose scheduler to change (default: the only one)")
	cmd.Flags().StringArrayVar(&params, "param", nil, "algorithm parameter KEY=VALUE (repeatable)")
	addOutputFlag(cmd, &output, outJSON, outYAML)
	return cmd
}

// parseKeyValues reads KEY=VALUE flags; a key given twice is an error
// rather than a silent override.
func parseKeyValues(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want KEY=VALUE", kv)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--param %s is given twice", k)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}

func newSetRateLimitCommand(o *clientOptions) *cobra.Command {
	var (
		output  string
		gpuType string
	)
	cmd := &cobra.Command{
		Use:   "ratelimit SECONDS [--gpu-type TYPE]",
		Short: "Set the least time between two scheduling cycles",
		Long: `Set a GPU type's rate limit: the least time between two of its scheduling
cycles (30 s by default). Events arriving sooner are coalesced into the next
cycle. SECONDS is a number of seconds (10, 0.5) or a duration (1m30s).

--gpu-type may be left out when the server schedules a single GPU type.`,
		Example: `  voda set ratelimit 10 --gpu-type nvidia-tesla-v100
  Rate limit of nvidia-tesla-v100 set to 10s`,
		Args: rateLimitOperand.check,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(&output, outJSON, outYAML); err != nil {
				return err
			}
			seconds, err := parseSeconds(args[0])
			if err != nil {
				return err
			}
			c, gt, err := o.clientForGPUType(cmd.Context(), gpuType)
			if err != nil {
				return err
			}
			s, err := c.SetRateLimit(cmd.Context(), gt, seconds)
			if err != nil {
				return err
			}
			if output != outTable {
				return printObject(cmd.OutOrStdout(), output, s)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Rate limit of %s set to %s\n", s.GPUType, formatSeconds(s.RateLimitSeconds))
			return nil
		},
	}
	cmd.Flags().StringVar(&gpuType, "gpu-type", "", "GPU type whose scheduler to change (default: the only one)")
	addOutputFlag(cmd, &output, outJSON, outYAML)
	return cmd
}

// parseSeconds reads "10", "0.5" or "1m30s" as seconds.
func parseSeconds(s string) (float64, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d.Seconds(), nil
	}
	return 0, fmt.Errorf("rate limit %q is neither a number of seconds nor a duration like 1m30s", s)
}
