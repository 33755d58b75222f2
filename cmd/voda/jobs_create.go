package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

type createFlags struct {
	files     []string
	recursive bool
	output    string
	namespace string
}

func newCreateCommand(o *clientOptions) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR [-f FILE|DIR...] [-R]",
		Short: "Submit training jobs from manifests",
		Long: `Submit elastic training jobs to a Voda server.

A manifest is a Kubeflow MPIJob or PyTorchJob in YAML or JSON, as for the
original Voda: the launcher's environment sets MIN_NUM_PROC (or MIN_NP),
MAX_NUM_PROC (or MAX_NP), NUM_PROC (or NP), EPOCHS and JOB_PRIORITY, and the
worker template's nodeSelector vodascheduler/accelerator names the GPU type.
The annotations vodascheduler/min-workers, max-workers, workers, epochs,
priority and gpu-type may say the same for any kind (see docs/job-spec.md).
A file may hold several YAML documents separated by '---'; each is a job.
-f DIR takes every .json, .yaml and .yml file in the directory, in name
order; with -R, those of its subdirectories too.

The server makes every name unique by appending the submission time, so the
name printed is the one to use with 'voda get', 'voda describe' and
'voda delete'.

All or nothing: every file is read and every document validated by the
server (a dry run, so the server's GPU types and limits apply) before any
job is created. When one is invalid, each invalid document is reported with
its file, document number, field and reason, nothing is created and the
command exits non-zero; fix them and run it again. Only a failure while
creating (the server failing or going away midway) can leave some created:
they are printed, and the command exits non-zero. A directory is no
exception: kubectl apply -f DIR goes on past a failing file because applying
again is harmless, whereas creating again would duplicate the jobs.

A field the job's kind does not know, such as a misspelt one, is accepted
and ignored, as Kubernetes ignores it; the server warns of it and the
command prints the warning on standard error, as kubectl does:
Warning: unknown field "spec.slotsPerWorkr".`,
		Example: `  # Submit a job
  voda create -f mnist-elastic.yaml
  Training job created: mnist-elastic-20250601-100000

  # Submit two files, then a manifest from standard input
  voda create -f bert.yaml -f resnet.yaml
  cat job.json | voda create -f -

  # Every manifest in a directory, and in its subdirectories
  voda create -f jobs/ -R

  # Keep the new name for a script
  name=$(voda create -f mnist-elastic.yaml -o name)`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%s takes its manifests with -f: %s -f %s", cmd.CommandPath(), cmd.CommandPath(), strings.Join(args, " -f "))
			}
			if len(f.files) == 0 {
				return fmt.Errorf("missing the manifests: %s -f FILE (an MPIJob or PyTorchJob in YAML or JSON; -f DIR takes a directory's, -f - standard input)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runCreate(cmd, o, f) },
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, or directory of .json, .yaml and .yml files, to submit; '-' for standard input (repeatable)")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "with -f DIR, the manifests of its subdirectories too")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace of the manifests that name none (default: the server's --namespace; as kubectl voda, the kubeconfig context's namespace)")
	addOutputFlag(cmd, &f.output, outJSON, outYAML, outName)
	return cmd
}

func runCreate(cmd *cobra.Command, o *clientOptions, f *createFlags) error {
	if err := checkOutput(&f.output, outJSON, outYAML, outName); err != nil {
		return err
	}
	manifests, err := readManifests(cmd.InOrStdin(), f.files, f.recursive)
	if err != nil {
		return err
	}
	ns := f.namespace
	if ns == "" {
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	for i := range manifests {
		manifests[i].body = withNamespace(manifests[i].body, ns)
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	if err := validateManifests(cmd.Context(), c, manifests, o.warn); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	var created []api.Job
	var errs []error
	for _, m := range manifests {
		job, err := c.CreateJob(cmd.Context(), m.body)
		var ce *client.ConnectionError
		if errors.As(err, &ce) {
			return err // the other submissions would fail the same way
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.source, err))
			continue
		}
		created = append(created, job)
		switch f.output {
		case outTable:
			fmt.Fprintf(out, "Training job created: %s\n", job.Name)
		case outName:
			fmt.Fprintln(out, job.Name)
		}
	}
	if (f.output == outJSON || f.output == outYAML) && len(created) > 0 {
		if err := printJobs(out, f.output, created, len(manifests) == 1); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// validateManifests has the server validate every manifest (a dry run)
// and reports every invalid one, so that a run creates all jobs or none.
// The dry runs' warnings go to warn, each after its manifest's source,
// only when no job is to be created: otherwise creating the jobs repeats
// them.
func validateManifests(ctx context.Context, c *client.Client, manifests []manifest, warn func(string)) (err error) {
	var warnings []string
	defer func() {
		if err != nil {
			for _, w := range warnings {
				warn(w)
			}
		}
	}()
	var errs []error
	for _, m := range manifests {
		vc := c.WithWarningHandler(func(text string) { warnings = append(warnings, m.source+": "+text) })
		_, err := vc.ValidateJob(ctx, m.body)
		var ce *client.ConnectionError
		if errors.As(err, &ce) || errors.Is(err, client.ErrNoDryRun) {
			return err // nothing more can be checked
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.source, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s invalid; no job was created:\n%w",
		len(errs), len(manifests), plural(len(manifests), "manifest is", "manifests are"), errors.Join(errs...))
}
