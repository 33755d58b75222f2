package jobspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The accessors below read one field of a decoded object. A missing field
// and a null one are the same: absent. A present field of the wrong type
// is a *FieldError at path.

// objectAt returns parent[key] as an object; nil if absent.
func objectAt(parent map[string]any, key, path string) (map[string]any, *FieldError) {
	v := parent[key]
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &FieldError{Field: path, Value: scalarText(v), Reason: "must be an object, not " + typeName(v)}
	}
	return m, nil
}

// requiredObjectAt is objectAt for a field that must be present.
func requiredObjectAt(parent map[string]any, key, path, why string) (map[string]any, *FieldError) {
	m, err := objectAt(parent, key, path)
	if err == nil && m == nil {
		err = &FieldError{Field: path, Reason: "required" + why}
	}
	return m, err
}

// listAt returns parent[key] as a list; nil if absent.
func listAt(parent map[string]any, key, path string) ([]any, *FieldError) {
	v := parent[key]
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, &FieldError{Field: path, Value: scalarText(v), Reason: "must be a list, not " + typeName(v)}
	}
	return l, nil
}

// stringAt returns parent[key] as a string and whether it is present.
func stringAt(parent map[string]any, key, path string) (string, bool, *FieldError) {
	v := parent[key]
	if v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, &FieldError{Field: path, Value: scalarText(v), Reason: "must be a string, not " + typeName(v) + quoteHint(v)}
	}
	return s, true, nil
}

// quoteHint tells YAML users how to turn a number or boolean into the
// string Kubernetes wants.
func quoteHint(v any) string {
	if t := scalarText(v); t != "" {
		return fmt.Sprintf(" (quote it: %s)", quote(t))
	}
	return ""
}

// stringMapAt returns parent[key] as an object of strings (annotations, a
// nodeSelector); nil if absent. Keys are checked in sorted order.
func stringMapAt(parent map[string]any, key, path string) (map[string]string, *FieldError) {
	m, err := objectAt(parent, key, path)
	if err != nil || m == nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		v := m[k]
		s, ok := v.(string)
		if !ok {
			return nil, &FieldError{Field: index(path, k), Value: scalarText(v),
				Reason: "must be a string, not " + typeName(v) + quoteHint(v)}
		}
		out[k] = s
	}
	return out, nil
}

// index is path[key], the notation for map keys and names that are not
// plain identifiers (annotation keys, env var names) and list indexes.
func index(path, key string) string {
	return path + "[" + key + "]"
}

// child is path.key.
func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// joinList renders a list for a reason: "a, b, c".
func joinList(items []string) string {
	return strings.Join(items, ", ")
}
