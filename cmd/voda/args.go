package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// operands describes a command's positional arguments, so that a command
// line with too few or too many says what is missing and how to write it,
// where cobra's own checks say only "accepts 1 arg(s), received 0".
type operands struct {
	// usage is the arguments as the command's usage line writes them:
	// "NAME", "JOB PRIORITY".
	usage string
	// names say what each required argument is, in order: "the job's
	// name".
	names []string
	// variadic: more arguments than names are accepted.
	variadic bool
	// list, if set, is the command (after the root's name) that lists the
	// values the first argument may take: "get jobs".
	list string
	// example, if set, is an example of the arguments: "30".
	example string
}

// check is a cobra.PositionalArgs.
func (o operands) check(cmd *cobra.Command, args []string) error {
	path := cmd.CommandPath()
	if len(args) < len(o.names) {
		var notes []string
		if o.list != "" {
			notes = append(notes, cmd.Root().CommandPath()+" "+o.list+" lists them")
		}
		if o.example != "" {
			notes = append(notes, "e.g. "+path+" "+o.example)
		}
		msg := fmt.Sprintf("missing %s: %s %s", andList(o.names[len(args):]), path, o.usage)
		if len(notes) > 0 {
			msg += " (" + strings.Join(notes, "; ") + ")"
		}
		return errors.New(msg)
	}
	if !o.variadic && len(args) > len(o.names) {
		extra := make([]string, 0, len(args)-len(o.names))
		for _, a := range args[len(o.names):] {
			extra = append(extra, strconv.Quote(a))
		}
		return fmt.Errorf("too many arguments (%s): %s %s", strings.Join(extra, " "), path, o.usage)
	}
	return nil
}

// andList is "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// Positional arguments of the client commands.
var (
	jobNamesOperand = operands{usage: "NAME", names: []string{"the job's name"}, variadic: true, list: "get jobs"}
	priorityOperand = operands{usage: "JOB PRIORITY", names: []string{"the job's name", "the priority"},
		example: "mnist-elastic-20250601-100000 0"}
	algorithmOperand = operands{usage: "NAME", names: []string{"the algorithm's name"}, list: "get algorithms"}
	rateLimitOperand = operands{usage: "SECONDS", names: []string{"the rate limit"}, example: "30"}
	serverURLOperand = operands{usage: "URL", names: []string{"the Voda API's URL"}, example: "https://voda.example.com"}
)

// subcommandError is the error of a command that only groups
// subcommands (get, describe, set, config), run without one or with one
// it does not have; what names its subcommands: "resource".
func subcommandError(cmd *cobra.Command, args []string, what string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("%s needs a %s: %s (see '%s --help')", cmd.CommandPath(), what, orList(names), cmd.CommandPath())
	}
	return fmt.Errorf("unknown %s %q for %s: use %s", what, args[0], cmd.CommandPath(), orList(names))
}
