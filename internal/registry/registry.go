package registry

import (
	"fmt"
	"sort"
	"strings"
)

// ParamDoc documents one parameter of an entry.
type ParamDoc struct {
	Name    string
	Default string
	Help    string
}

// Entry describes one registered factory of T.
type Entry[T any] struct {
	// Name is the canonical name; lookups ignore case.
	Name string
	// Summary is a one-line description, with its reference if any.
	Summary string
	// Tags are short properties listings show, such as "elastic".
	Tags   []string
	Params []ParamDoc
	// New builds a T, reading the parameters it knows from p.
	New func(p *Params) (T, error)
}

// Has reports whether the entry carries tag.
func (e Entry[T]) Has(tag string) bool {
	for _, t := range e.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Registry maps case-insensitive names to entries.
type Registry[T any] struct {
	kind    string // "algorithm", "placer": how errors name an entry
	entries map[string]Entry[T]
	names   []string
}

// New returns an empty registry whose errors call its entries kind.
func New[T any](kind string) *Registry[T] {
	return &Registry[T]{kind: kind, entries: map[string]Entry[T]{}}
}

// Register adds an entry. A blank name, a missing factory or a name
// registered before (in any case) is an error.
func (r *Registry[T]) Register(e Entry[T]) error {
	if strings.TrimSpace(e.Name) == "" || e.New == nil {
		return fmt.Errorf("register %s %q: name and factory are required", r.kind, e.Name)
	}
	key := strings.ToLower(e.Name)
	if _, ok := r.entries[key]; ok {
		return fmt.Errorf("register %s %q: already registered", r.kind, e.Name)
	}
	r.entries[key] = e
	r.names = append(r.names, e.Name)
	return nil
}

// MustRegister registers entries known at compile time, such as a
// package's built-in ones; a failure is a programming error.
func (r *Registry[T]) MustRegister(entries ...Entry[T]) *Registry[T] {
	for _, e := range entries {
		if err := r.Register(e); err != nil {
			panic(err)
		}
	}
	return r
}

// Names returns the registered names in registration order.
func (r *Registry[T]) Names() []string { return append([]string(nil), r.names...) }

// Lookup returns the entry of a case-insensitive name.
func (r *Registry[T]) Lookup(name string) (Entry[T], bool) {
	e, ok := r.entries[strings.ToLower(strings.TrimSpace(name))]
	return e, ok
}

// New builds the named entry with p (nil means every default). A
// parameter its factory did not read is an error.
func (r *Registry[T]) New(name string, p *Params) (T, error) {
	var zero T
	e, ok := r.Lookup(name)
	if !ok {
		return zero, fmt.Errorf("unknown %s %q (known: %s)", r.kind, name, strings.Join(r.names, ", "))
	}
	if p == nil {
		p = &Params{}
	}
	v, err := e.New(p)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", r.kind, e.Name, err)
	}
	if err := p.CheckUnused(); err != nil {
		return zero, fmt.Errorf("%s %s: %w", r.kind, e.Name, err)
	}
	return v, nil
}

// NewFromMap builds the named entry from name -> value parameters, as
// stored settings and API requests carry them.
func (r *Registry[T]) NewFromMap(name string, params map[string]string) (T, error) {
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
		var zero T
		return zero, err
	}
	return r.New(name, p)
}
