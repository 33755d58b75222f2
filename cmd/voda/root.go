package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "voda",
		Short: "Voda schedules elastic deep-learning training jobs on GPU clusters",
		Long: `Voda is a GPU scheduler for elastic deep-learning training on Kubernetes.

On every event (a job arrives, finishes, fails or is deleted, a priority
changes, a node joins or leaves) Voda's scheduler for that GPU type decides how
many GPUs each job gets, places the workers on as few nodes as possible and
applies the difference. The same scheduling core runs in a trace-driven
simulator, so you can compare algorithms on your own workload first.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newSimulateCommand(), newWorkloadCommand(), newAlgorithmsCommand(), newPlacersCommand(), newServerCommand(), newVersionCommand())
	root.AddCommand(newClientCommands()...)
	return root
}
