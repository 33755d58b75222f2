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
	// goyaml.v2 is the YAML parser sigs.k8s.io/yaml itself uses, re-exported
	// by that module; its Decoder sees every document, where YAMLToJSON
	// silently drops all but the first.
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

const fieldBody = "body"

// decodeBody turns a YAML or JSON body holding one object into a map whose
// numbers are json.Number.
func decodeBody(data []byte, maxBytes int) (map[string]any, *FieldError) {
	if len(data) > maxBytes {
		return nil, &FieldError{Field: fieldBody, Value: strconv.Itoa(len(data)),
			Reason: fmt.Sprintf("is %d bytes; at most %d are accepted", len(data), maxBytes)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty()
	}
	// Count the documents. Empty documents after the first are harmless
	// (a trailing "---"); any other second document is a second job.
	dec := goyaml.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	nonEmpty := 0
	for i := 0; ; i++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errSyntax(err)
		}
		if v != nil && i > 0 {
			return nil, &FieldError{Field: fieldBody,
				Reason: fmt.Sprintf("holds more than one YAML document (document %d is not empty); submit one job per request", i+1)}
		}
		if v != nil {
			nonEmpty++
		}
	}
	if nonEmpty == 0 {
		return nil, errEmpty()
	}
	// Strict: a duplicate key would otherwise silently replace the first.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, errSyntax(err)
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
	const max = 64
	if r := []rune(s); len(r) > max {
		return strconv.Quote(string(r[:max])) + "..."
	}
	return strconv.Quote(s)
}
