package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
	// go-yaml v3 (the YAML team's module, which sigs.k8s.io/yaml also
	// builds on) parses YAML into nodes
	// and keeps an alias as a node pointing at its anchor's value, so that
	// a document can be measured before anything is expanded.
	goyaml "go.yaml.in/yaml/v3"
)

const fieldBody = "body"

// decodeBody turns a YAML or JSON body holding one object into a map whose
// numbers are json.Number. Nothing is expanded or converted before the
// body is known to stay within maxBytes once its aliases are expanded.
func decodeBody(data []byte, maxBytes int) (map[string]any, *FieldError) {
	if len(data) > maxBytes {
		return nil, &FieldError{Field: fieldBody, Value: strconv.Itoa(len(data)),
			Reason: fmt.Sprintf("is %d bytes; at most %d are accepted", len(data), maxBytes)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty()
	}
	doc, err := onlyDocument(data)
	if err != nil {
		return nil, err
	}
	if err := checkExpansion(doc, maxBytes); err != nil {
		return nil, err
	}
	// Strict: a duplicate key would otherwise silently replace the first.
	j, jerr := yaml.YAMLToJSONStrict(data)
	if jerr != nil {
		return nil, errSyntax(jerr)
	}
	// The JSON is what Spec.JSON stores (the same encoder, sorted keys),
	// and escaping can make it up to six times the YAML: "\0" or a "<"
	// becomes "\u0000" or "\u003c".
	if len(j) > maxBytes {
		return nil, &FieldError{Field: fieldBody, Value: strconv.Itoa(len(j)),
			Reason: fmt.Sprintf("is %d bytes as JSON, which is how the job is stored; at most %d are accepted (JSON writes control characters, <, > and & as 6 bytes each)", len(j), maxBytes)}
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, errSyntax(err)
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, &FieldError{Field: fieldBody,
			Reason: "must be an object (a Kubernetes manifest), not " + typeName(root)}
	}
	return obj, nil
}

// onlyDocument parses every YAML document of data into nodes and returns
// the first, which must be the only one that is not empty. Empty
// documents after the first are harmless (a trailing "---"); any other
// second document is a second job.
func onlyDocument(data []byte) (*goyaml.Node, *FieldError) {
	dec := goyaml.NewDecoder(bytes.NewReader(data))
	var first *goyaml.Node
	for i := 0; ; i++ {
		var doc goyaml.Node
		err := recoverParser(func() error { return dec.Decode(&doc) })
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errSyntax(err)
		}
		if isEmptyDocument(&doc) {
			continue
		}
		if i > 0 {
			return nil, &FieldError{Field: fieldBody,
				Reason: fmt.Sprintf("holds more than one YAML document (document %d is not empty); submit one job per request", i+1)}
		}
		first = &doc
	}
	if first == nil {
		return nil, errEmpty()
	}
	return first, nil
}

// recoverParser runs parse and turns a panic into an error. goyaml.v3
// panics with "internal error ... (please report)" on some malformed
// input, which it does not turn into an error itself (reported against
// go.yaml.in/yaml/v3 v3.0.4 in 2025, and v3.0.5 keeps those panics); a
// bad body must get a FieldError, not take down the caller.
func recoverParser(parse func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return parse()
}

// isEmptyDocument reports whether doc holds nothing but null ("", "~",
// "null"), as a YAML decoder would decode it.
func isEmptyDocument(doc *goyaml.Node) bool {
	return len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null"
}

func errEmpty() *FieldError {
	return &FieldError{Field: fieldBody, Reason: "is empty; expected one MPIJob or PyTorchJob manifest in YAML or JSON"}
}

func errSyntax(err error) *FieldError {
	return &FieldError{Field: fieldBody, Reason: "is not valid YAML or JSON: " + strings.Join(strings.Fields(err.Error()), " ")}
}

// typeName describes a decoded JSON value for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// scalarText renders a scalar for FieldError.Value; "" for the rest.
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// quote quotes user text for a reason, cut short so that a huge value
// does not make a huge message.
func quote(s string) string {
	return quoteCut(s, 64)
}

// quoteCut quotes s, cut after max runes and marked with "..." if longer.
func quoteCut(s string, max int) string {
	if r := []rune(s); len(r) > max {
		return strconv.Quote(string(r[:max])) + "..."
	}
	return strconv.Quote(s)
}
