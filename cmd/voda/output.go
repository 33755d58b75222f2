package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of -o. The empty format is the default table.
const (
	outTable = ""
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
	outName  = "name"
)

// addOutputFlag registers -o with the formats a command supports.
func addOutputFlag(cmd *cobra.Command, out *string, formats ...string) {
	cmd.Flags().StringVarP(out, "output", "o", outTable, "output format: "+orList(formats)+" (default: for people)")
}

// checkOutput normalizes -o and rejects the formats a command does not
// support, naming those it does.
func checkOutput(out *string, formats ...string) error {
	f := strings.ToLower(strings.TrimSpace(*out))
	if f == outTable {
		*out = f
		return nil
	}
	for _, ok := range formats {
		if f == ok {
			*out = f
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q (-o): use %s", *out, orList(formats))
}

// orList is "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// printObject writes v as indented JSON or as YAML.
func printObject(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	switch format {
	case outJSON:
		if b, err = json.MarshalIndent(v, "", "  "); err == nil {
			b = append(b, '\n')
		}
	case outYAML:
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("output format %q cannot print an object", format)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// newTable is the tabwriter every table of the client commands uses:
// columns three spaces apart, as kubectl prints them.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

// humanSeconds formats a number of seconds, rounded to the second, the
// way kubectl prints ages: 28s, 3m12s, 47m, 2h5m, 20h, 3d4h, 45d, 2y10d.
// Precision drops as the duration grows. Unlike kubectl, which prints 110s
// and 125m, a minute or more is shown in minutes and an hour or more in
// hours, so that a column of durations reads the same way throughout.
func humanSeconds(seconds float64) string {
	if math.IsNaN(seconds) || seconds <= 0 {
		return "0s"
	}
	if seconds > float64(math.MaxInt64/int64(time.Second)) {
		seconds = float64(math.MaxInt64 / int64(time.Second))
	}
	s := int64(math.Round(seconds))
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	minutes := s / 60
	switch {
	case minutes < 10:
		return withRest(minutes, "m", s%60, "s")
	case minutes < 60:
		return fmt.Sprintf("%dm", minutes)
	}
	hours := minutes / 60
	switch {
	case hours < 8:
		return withRest(hours, "h", minutes%60, "m")
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 8*24:
		return withRest(hours/24, "d", hours%24, "h")
	case hours < 2*365*24:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 8*365*24:
		return withRest(hours/24/365, "y", hours/24%365, "d")
	}
	return fmt.Sprintf("%dy", hours/24/365)
}

func withRest(n int64, unit string, rest int64, restUnit string) string {
	if rest == 0 {
		return fmt.Sprintf("%d%s", n, unit)
	}
	return fmt.Sprintf("%d%s%d%s", n, unit, rest, restUnit)
}

// relative says how far t is from now: "3m ago", "in 3m" or "now".
func relative(t, now time.Time) string {
	d := now.Sub(t).Seconds()
	switch {
	case math.Abs(d) < 0.5:
		return "now"
	case d > 0:
		return humanSeconds(d) + " ago"
	}
	return "in " + humanSeconds(-d)
}

// formatSeconds prints a number of seconds without needless digits:
// 30s, 2.5s.
func formatSeconds(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + "s"
}

// clockKey carries a clock in a command's context, so that tests print
// relative times and local times deterministically.
type clockKey struct{}

type clock struct {
	now time.Time
	loc *time.Location
}

// clockFrom is the current time and the zone to print times in: the
// wall clock and the local zone unless a test set a clock.
func clockFrom(ctx context.Context) (time.Time, *time.Location) {
	if c, ok := ctx.Value(clockKey{}).(clock); ok {
		return c.now, c.loc
	}
	return time.Now(), time.Local
}
