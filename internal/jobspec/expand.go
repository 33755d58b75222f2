package jobspec

import (
	"fmt"

	goyaml "go.yaml.in/yaml/v3"
)

// YAML aliases let a small body stand for a huge manifest: one 100 KB
// value used through 1,000 aliases is a 102 KB body and 100 MB decoded,
// and nested aliases ("billion laughs") grow exponentially. The body limit
// applies to the bytes received, so checkExpansion measures what they
// expand to, walking the parsed nodes before anything is decoded.
//
// The measure is the length of every scalar plus one per node, which is
// at most about the length of the YAML text that writes the document out:
// a body within the limit that uses aliases costs no more to decode than
// one within the limit that does not.

// checkExpansion rejects a document whose aliases expand it beyond
// maxBytes. It is linear in the number of nodes, nested aliases included:
// every anchored node's expanded size is computed once, when the walk
// passes it (an anchor comes before its aliases), and each alias adds
// that size without walking it again.
func checkExpansion(doc *goyaml.Node, maxBytes int) *FieldError {
	e := expansion{limit: maxBytes, sizes: map[*goyaml.Node]int{}}
	return e.walk(doc)
}

type expansion struct {
	limit int
	// total is the measure of the nodes walked so far, aliases expanded.
	// The walk stops as soon as an alias takes it over limit, so it cannot
	// overflow: it grows by at most one earlier total per alias.
	total int
	// sizes holds the expanded measure of each anchored node walked.
	sizes map[*goyaml.Node]int
}

func (e *expansion) walk(n *goyaml.Node) *FieldError {
	if n.Kind == goyaml.AliasNode {
		return e.alias(n)
	}
	start := e.total
	e.total += len(n.Value) + 1
	for _, c := range n.Content {
		if err := e.walk(c); err != nil {
			return err
		}
	}
	if n.Anchor != "" {
		e.sizes[n] = e.total - start
	}
	return nil
}

func (e *expansion) alias(n *goyaml.Node) *FieldError {
	size, ok := e.sizes[n.Alias]
	if !ok {
		// The parser resolves an alias to the latest anchor of that name
		// before it, so an anchored node the walk has not finished is one
		// the alias is inside of.
		return &FieldError{Field: fieldBody, Value: "*" + n.Value,
			Reason: fmt.Sprintf("is not valid YAML or JSON: alias *%s is inside the value of its own anchor &%s, which would make that value infinite", n.Value, n.Value)}
	}
	e.total += size
	if e.total > e.limit {
		return &FieldError{Field: fieldBody, Value: "*" + n.Value,
			Reason: fmt.Sprintf("expands to at least %d bytes through YAML aliases (*%s); at most %d are accepted, counting every alias as a copy of its anchor's value: write the values out or drop the aliases", e.total, n.Value, e.limit)}
	}
	return nil
}
