package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// table reads a CSV file whose first record is a header, and hands out the
// following records' cells by column name. It is the one place that knows
// about CSV, so every format reports lines and fields the same way.
type table struct {
	r      *csv.Reader
	cols   map[string]int // lower-case column name -> index
	ncols  int
	header int // line of the header
	line   int // line of the current record
	rec    []string
}

// tableSpec says which columns a format needs and which it knows.
type tableSpec struct {
	// required columns must be in the header.
	required []string
	// optional columns may be in the header.
	optional []string
	// strict rejects columns that are neither required nor optional, for
	// our own format, where an unknown column is most likely a typo that
	// would otherwise silently fall back to a default.
	strict bool
	// comments lets lines starting with '#' be skipped.
	comments bool
}

func newTable(r io.Reader, spec tableSpec) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, to give a clearer message
	cr.TrimLeadingSpace = true
	if spec.comments {
		cr.Comment = '#'
	}
	t := &table{r: cr, cols: make(map[string]int)}
	hdr, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, lineErr(1, "", "missing header (empty input)")
	}
	if err != nil {
		return nil, csvErr(err)
	}
	t.header, _ = cr.FieldPos(0)
	t.ncols = len(hdr)
	known := make(map[string]bool, len(spec.required)+len(spec.optional))
	for _, c := range spec.required {
		known[c] = true
	}
	for _, c := range spec.optional {
		known[c] = true
	}
	for i, h := range hdr {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a byte-order mark from spreadsheets
		}
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			return nil, lineErr(t.header, "", "header column %d has no name", i+1)
		}
		if _, dup := t.cols[h]; dup {
			return nil, lineErr(t.header, h, "duplicate column")
		}
		if spec.strict && !known[h] {
			return nil, lineErr(t.header, h, "unknown column (known: %s)",
				strings.Join(append(append([]string(nil), spec.required...), spec.optional...), ", "))
		}
		t.cols[h] = i
	}
	for _, c := range spec.required {
		if _, ok := t.cols[c]; !ok {
			return nil, lineErr(t.header, c, "missing column in header")
		}
	}
	return t, nil
}

// next reads the next record; it returns false at the end of the input.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, csvErr(err)
	}
	t.line, _ = t.r.FieldPos(0)
	if len(rec) != t.ncols {
		return false, lineErr(t.line, "", "has %d fields, the header has %d", len(rec), t.ncols)
	}
	t.rec = rec
	return true, nil
}

// str returns the trimmed cell of the column, "" if the column is absent.
func (t *table) str(col string) string {
	i, ok := t.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

// err builds an error about the column on the current line.
func (t *table) err(col, format string, args ...any) error {
	return lineErr(t.line, col, format, args...)
}

// noJobs is the error for a header with nothing after it.
func (t *table) noJobs() error {
	return &LineError{Line: t.header, Err: ErrNoJobs}
}

// csvErr turns encoding/csv's syntax errors into LineErrors.
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{Line: pe.Line, Err: fmt.Errorf("column %d: %w", pe.Column, pe.Err)}
	}
	return fmt.Errorf("read csv: %w", err)
}

// required returns the cell or an error if it is empty.
func (t *table) required(col string) (string, error) {
	s := t.str(col)
	if s == "" {
		return "", t.err(col, "empty, a value is required")
	}
	return s, nil
}

// seconds parses a required, finite, non-negative time in seconds.
func (t *table) seconds(col string) (float64, error) {
	s, err := t.required(col)
	if err != nil {
		return 0, err
	}
	v, err := parseFloat(s)
	if err != nil {
		return 0, t.err(col, "%v", err)
	}
	if v < 0 {
		return 0, t.err(col, "%s is negative, must be >= 0", s)
	}
	return v, nil
}

// integer parses a required integer that must be at least min.
func (t *table) integer(col string, min int) (int, error) {
	s, err := t.required(col)
	if err != nil {
		return 0, err
	}
	v, err := parseInt(s)
	if err != nil {
		return 0, t.err(col, "%v", err)
	}
	if v < min {
		return 0, t.err(col, "%d is below the minimum %d", v, min)
	}
	return v, nil
}

// optInteger parses an optional integer: an absent column or empty cell
// gives set == false.
func (t *table) optInteger(col string, min int) (v int, set bool, err error) {
	if t.str(col) == "" {
		return 0, false, nil
	}
	v, err = t.integer(col, min)
	return v, err == nil, err
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil
}

// parseInt accepts integers, and floats with an integral value ("4.0"), as
// written by tools that store every number as a float.
func parseInt(s string) (int, error) {
	if v, err := strconv.Atoi(s); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int(f), nil
}

// names checks that each job name is new, remembering where it was seen.
type names map[string]int

func (n names) add(t *table, col, name string) error {
	if first, dup := n[name]; dup {
		return t.err(col, "duplicate name %q (first on line %d)", name, first)
	}
	n[name] = t.line
	return nil
}

// each calls row on every following record, stopping at the first error.
func (t *table) each(row func() error) error {
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return err
		}
		if err := row(); err != nil {
			return err
		}
	}
}

// readAll reads every row with row, which also rejects duplicate names
// through seen, and returns the jobs sorted; a table without rows is an
// error.
func (t *table) readAll(row func(*table, names) (Job, error)) ([]Job, error) {
	var jobs []Job
	seen := names{}
	err := t.each(func() error {
		j, err := row(t, seen)
		jobs = append(jobs, j)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, t.noJobs()
	}
	Sort(jobs)
	return jobs, nil
}
