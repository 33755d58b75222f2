package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// selector is a metric a PromQL expression reads, with the label names
// its matchers name (__name__ aside).
type selector struct {
	Metric string
	Labels []string
}

// promqlKeywords are PromQL's binary operators and modifiers that are
// words; none is a metric name.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true,
}

// labelListKeywords take a parenthesised list of label names.
var labelListKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// aggregations may put their by or without clause before their
// parenthesis: sum by (le) (x).
var aggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
}

// promqlSelectors returns the metric selectors of a PromQL expression (a
// Grafana one too: $variables outside strings are skipped), in order. It
// is a tokenizer, not a parser: an identifier is a metric unless it is a
// keyword, a function or aggregation (followed by "(", or an aggregation
// by a by or without clause), or a label name (in a {} matcher list or a
// by, without, on, ignoring or group list). Strings, durations in [],
// numbers and comments are skipped.
func promqlSelectors(expr string) ([]selector, error) {
	var out []selector
	n := len(expr)
	skipSpace := func(j int) int {
		for j < n && isSpace(expr[j]) {
			j++
		}
		return j
	}
	word := func(j int) (string, int) {
		k := j
		for k < n && isIdentChar(expr[k]) {
			k++
		}
		return expr[j:k], k
	}
	for i := 0; i < n; {
		c := expr[i]
		switch {
		case isSpace(c):
			i++
		case c == '#':
			for i < n && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("offset %d: [ without ]", i)
			}
			i += j + 1
		case c == '{':
			labels, name, j, err := matchers(expr, i)
			if err != nil {
				return nil, err
			}
			if name == "" {
				return nil, fmt.Errorf("offset %d: a selector without a metric name", i)
			}
			out = append(out, selector{Metric: name, Labels: labels})
			i = j
		case c == '$':
			_, i = word(i + 1)
		case isDigit(c) || c == '.' && i+1 < n && isDigit(expr[i+1]):
			for i < n && (isIdentChar(expr[i]) || expr[i] == '.') {
				i++ // a number, or a duration after offset
			}
		case isIdentStart(c):
			w, j := word(i)
			k := skipSpace(j)
			next, _ := word(k)
			switch {
			case labelListKeywords[w] && k < n && expr[k] == '(':
				end := strings.IndexByte(expr[k:], ')')
				if end < 0 {
					return nil, fmt.Errorf("offset %d: %s ( without )", i, w)
				}
				i = k + end + 1
			case promqlKeywords[w]:
				i = j
			case k < n && expr[k] == '(':
				i = j // a function or aggregation
			case aggregations[w] && (next == "by" || next == "without"):
				i = j
			default:
				sel := selector{Metric: w}
				i = j
				if k < n && expr[k] == '{' {
					labels, name, end, err := matchers(expr, k)
					if err != nil {
						return nil, err
					}
					if name != "" {
						return nil, fmt.Errorf("offset %d: %s has a __name__ matcher too", i, w)
					}
					sel.Labels, i = labels, end
				}
				out = append(out, sel)
			}
		default:
			i++ // an operator, a parenthesis, a comma
		}
	}
	return out, nil
}

// matchers reads the label matchers at expr[i] == '{': the label names,
// the metric name of a __name__= matcher, and where they end.
func matchers(expr string, i int) (labels []string, name string, end int, err error) {
	n := len(expr)
	i++
	for {
		for i < n && (isSpace(expr[i]) || expr[i] == ',') {
			i++
		}
		if i >= n {
			return nil, "", 0, fmt.Errorf("{ without }")
		}
		if expr[i] == '}' {
			return labels, name, i + 1, nil
		}
		j := i
		for j < n && isIdentChar(expr[j]) {
			j++
		}
		if j == i {
			return nil, "", 0, fmt.Errorf("offset %d: want a label name, got %q", i, expr[i])
		}
		label := expr[i:j]
		for j < n && isSpace(expr[j]) {
			j++
		}
		op := j
		for j < n && strings.IndexByte("=!~", expr[j]) >= 0 {
			j++
		}
		if !slices.Contains([]string{"=", "!=", "=~", "!~"}, expr[op:j]) {
			return nil, "", 0, fmt.Errorf("offset %d: want a matcher operator after %s", op, label)
		}
		for j < n && isSpace(expr[j]) {
			j++
		}
		if j >= n || strings.IndexByte("\"'`", expr[j]) < 0 {
			return nil, "", 0, fmt.Errorf("offset %d: want a string after %s%s", j, label, expr[op:j])
		}
		k, err := skipString(expr, j)
		if err != nil {
			return nil, "", 0, err
		}
		if label == "__name__" && expr[op:j] != "=" {
			return nil, "", 0, fmt.Errorf("offset %d: only __name__= names a metric", op)
		}
		if label == "__name__" {
			name = expr[j+1 : k-1]
		} else {
			labels = append(labels, label)
		}
		i = k
	}
}

// skipString returns the offset after the string literal at expr[i].
func skipString(expr string, i int) (int, error) {
	q := expr[i]
	for j := i + 1; j < len(expr); j++ {
		switch {
		case expr[j] == '\\' && q != '`':
			j++
		case expr[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("offset %d: unterminated string", i)
}

func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || c|0x20 >= 'a' && c|0x20 <= 'z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

func TestPromQLSelectors(t *testing.T) {
	tests := []struct {
		expr string
		want []selector
	}{
		{`voda_gpus`, []selector{{Metric: "voda_gpus"}}},
		{`sum by (gpu_type) (rate(voda_reschedules_total{gpu_type=~"$gpu_type"}[$__rate_interval]))`,
			[]selector{{"voda_reschedules_total", []string{"gpu_type"}}}},
		{`histogram_quantile(0.99, sum by (gpu_type, le) (rate(x_bucket[5m]))) > 5`, []selector{{Metric: "x_bucket"}}},
		{"(time() - a > 600)\nand b > 0", []selector{{Metric: "a"}, {Metric: "b"}}},
		{`count by (gpu_type) (w > 4 * 3600) > 0`, []selector{{Metric: "w"}}},
		{`rate(c[5m]) and on (instance, job) group by (instance, job) (d)`, []selector{{Metric: "c"}, {Metric: "d"}}},
		{`sum(x) by (le) / ignoring(code) y`, []selector{{Metric: "x"}, {Metric: "y"}}},
		{`a / on(instance) group_left(gpu_type) b unless c offset 5m`, []selector{{Metric: "a"}, {Metric: "b"}, {Metric: "c"}}},
		{`{__name__="a", code=~"5.."}`, []selector{{"a", []string{"code"}}}},
		{`x{route="POST /api/v1/jobs/{name}/progress", code!~'4..'}`, []selector{{"x", []string{"route", "code"}}}},
		{`absent(voda_scheduler_leader) # a comment naming metric_like words`, []selector{{Metric: "voda_scheduler_leader"}}},
		{`process_resident_memory_bytes / 2^20 + 1e9 - inf`, []selector{{Metric: "process_resident_memory_bytes"}}},
		{`topk(5, sort_desc(m{a="\"}"}))`, []selector{{"m", []string{"a"}}}},
		{`max without (instance) (m) == bool 0`, []selector{{Metric: "m"}}},
		{`job:voda_up:sum`, []selector{{Metric: "job:voda_up:sum"}}},
	}
	for _, tt := range tests {
		got, err := promqlSelectors(tt.expr)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if !slices.EqualFunc(got, tt.want, func(a, b selector) bool { return a.Metric == b.Metric && slices.Equal(a.Labels, b.Labels) }) {
			t.Errorf("%s:\n got %v\nwant %v", tt.expr, got, tt.want)
		}
	}
	for _, bad := range []string{`x{a="b"`, `x{a="b}`, `x{a}`, `rate(x[5m)`, `{a="b"}`, `{__name__=~"x"}`, `sum by (a`} {
		if got, err := promqlSelectors(bad); err == nil {
			t.Errorf("%s: %v, want an error", bad, got)
		}
	}
}
