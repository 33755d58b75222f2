package algorithm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vodascheduler/voda/internal/model"
)

// Allocator decides job -> #GPUs for one snapshot.
type Allocator interface {
	// Name returns the algorithm's registered name.
	Name() string
	// Allocate returns the GPUs of every job of the snapshot. It must not
	// modify snap.
	Allocate(snap *model.Snapshot) (model.Allocation, error)
}

// Prioritizer is implemented by allocators with priority queues. The
// scheduler calls Requeue at the start of every cycle and applies the
// changes before calling Allocate on the updated snapshot. A change is a
// priority-change event.
type Prioritizer interface {
	Requeue(snap *model.Snapshot) []model.QueueChange
}

// Factory builds an allocator from its parameters. It reads what it needs
// from p; the registry rejects parameters no factory read.
type Factory func(p *Params) (Allocator, error)

// ParamDoc documents one algorithm parameter.
type ParamDoc struct {
	Name    string
	Default string
	Help    string
}

// Entry describes one registered algorithm.
type Entry struct {
	// Name is the canonical name, as the original Voda spells it.
	Name string
	// Elastic is true when the algorithm resizes jobs within [min, max].
	Elastic bool
	// Summary is a one-line description with its reference.
	Summary string
	Params  []ParamDoc
	New     Factory
}

// Registry maps case-insensitive names to algorithms.
type Registry struct {
	entries map[string]Entry
	names   []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]Entry{}}
}

// Register adds an algorithm. Registering a name twice (in any case) is an
// error.
func (r *Registry) Register(e Entry) error {
	if e.Name == "" || e.New == nil {
		return fmt.Errorf("register algorithm %q: name and factory are required", e.Name)
	}
	key := strings.ToLower(e.Name)
	if _, ok := r.entries[key]; ok {
		return fmt.Errorf("register algorithm %q: already registered", e.Name)
	}
	r.entries[key] = e
	r.names = append(r.names, e.Name)
	return nil
}

// Names returns the registered names in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Lookup returns the entry for a case-insensitive name.
func (r *Registry) Lookup(name string) (Entry, bool) {
	e, ok := r.entries[strings.ToLower(strings.TrimSpace(name))]
	return e, ok
}

// New builds the named allocator with the given parameters.
func (r *Registry) New(name string, p *Params) (Allocator, error) {
	e, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(r.names, ", "))
	}
	if p == nil {
		p = &Params{}
	}
	a, err := e.New(p)
	if err != nil {
		return nil, fmt.Errorf("algorithm %s: %w", e.Name, err)
	}
	if err := p.CheckUnused(); err != nil {
		return nil, fmt.Errorf("algorithm %s: %w", e.Name, err)
	}
	return a, nil
}

// Params are an algorithm's name=value settings.
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

// NewFromMap builds the named allocator from name -> value parameters, as
// stored settings and API requests carry them.
func (r *Registry) NewFromMap(name string, params map[string]string) (Allocator, error) {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+params[k])
	}
	p, err := ParseParams(pairs)
	if err != nil {
		return nil, err
	}
	return r.New(name, p)
}
