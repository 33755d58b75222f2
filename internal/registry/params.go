package registry

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Params are an entry's name=value settings. A factory reads each one it
// knows; CheckUnused reports the rest.
type Params struct {
	values map[string]string
	used   map[string]bool
}

// ParseParams parses "name=value" pairs. Names are case-insensitive.
func ParseParams(pairs []string) (*Params, error) {
	p := &Params{values: map[string]string{}}
	for _, kv := range pairs {
		name, value, ok := strings.Cut(kv, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("param %q: want name=value", kv)
		}
		if _, dup := p.values[name]; dup {
			return nil, fmt.Errorf("param %q: given twice", name)
		}
		p.values[name] = strings.TrimSpace(value)
	}
	return p, nil
}

func (p *Params) lookup(name string) (string, bool) {
	if p.used == nil {
		p.used = map[string]bool{}
	}
	p.used[name] = true
	v, ok := p.values[name]
	return v, ok
}

// Float returns the named parameter, or def when it is not set.
func (p *Params) Float(name string, def float64) (float64, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("param %s: %q is not a number", name, v)
	}
	return f, nil
}

// Bool returns the named parameter (true/false, 1/0, as strconv.ParseBool
// reads them), or def when it is not set.
func (p *Params) Bool(name string, def bool) (bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("param %s: %q is not true or false", name, v)
	}
	return b, nil
}

// Int returns the named parameter, or def when it is not set.
func (p *Params) Int(name string, def int) (int, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("param %s: %q is not an integer", name, v)
	}
	return n, nil
}

// CheckUnused reports the parameters no factory read: a misspelt name is
// an error, not a silent default.
func (p *Params) CheckUnused() error {
	var unknown []string
	for name := range p.values {
		if !p.used[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("unknown param(s) %s", strings.Join(unknown, ", "))
}
