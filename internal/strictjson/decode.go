package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// Decode decodes one JSON object into v, a pointer to a struct.
// Unlike encoding/json alone it rejects a key given twice (at any depth)
// and a key that is not exactly a field's JSON name: encoding/json would
// take the last of duplicates and match {"PRIORITY": 1} to "priority".
//
// It checks the body's syntax with json.Valid, then reads it once,
// checking each token and storing it into v as encoding/json would (see
// walker); only a type it does not store itself (an interface, a
// json.Unmarshaler, an embedded struct) makes it decode the body a second
// time with encoding/json. A body that is not valid JSON is read with
// json.Decoder instead, whose errors say where and why.
func Decode(data []byte, v any) *jobspec.FieldError {
	if len(bytes.TrimSpace(data)) == 0 {
		return &jobspec.FieldError{Field: "body", Reason: "is empty; expected a JSON object"}
	}
	var dec tokens = &validTokens{data: data}
	if !json.Valid(data) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		dec = d
	}
	rv := reflect.ValueOf(v).Elem()
	w := &walker{dec: dec, store: isAssignable(rv.Type())}
	target := rv
	if !w.store {
		target = reflect.Value{}
	}
	if err := w.object(target, rv.Type()); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &jobspec.FieldError{Field: "body", Reason: "trailing data after the JSON object"}
	}
	if w.store {
		return w.typeErr
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" { // e.g. a number too large for its field
			return &jobspec.FieldError{Field: te.Field, Reason: fmt.Sprintf("cannot hold the JSON %s", te.Value)}
		}
		return &jobspec.FieldError{Field: "body", Reason: fmt.Sprintf("not the expected JSON object: %v", err)}
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// assignables caches assignable by type.
var assignables sync.Map // reflect.Type → bool

// isAssignable is assignable, remembered.
func isAssignable(t reflect.Type) bool {
	if ok, found := assignables.Load(t); found {
		return ok.(bool)
	}
	ok := assignable(t)
	assignables.Store(t, ok)
	return ok
}

// assignable reports whether walker.value stores every value of type t
// exactly as encoding/json would: booleans, numbers, strings, pointers,
// lists, maps with string keys, and structs of plain tagged fields.
func assignable(t reflect.Type) bool {
	if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Pointer:
		return assignable(t.Elem())
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && assignable(t.Elem()) // []byte is base64 to encoding/json
	case reflect.Map:
		return t.Key().Kind() == reflect.String && t.Key().PkgPath() == "" && assignable(t.Elem())
	case reflect.Struct:
		for f := range t.Fields() {
			_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous || strings.Contains(opts, "string") || f.IsExported() && !assignable(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// walker reads one JSON value token by token, checking it against the
// type it decodes into and, when store is set, storing it there.
type walker struct {
	dec   tokens
	store bool
	// typeErr is the first value the target cannot hold (a number out of
	// its field's range), reported as encoding/json would, but only once
	// the whole body has passed the checks.
	typeErr *jobspec.FieldError
}

// object checks that the body is one JSON object whose keys are t's
// fields, each once, and stores it in v unless v is the zero Value.
func (w *walker) object(v reflect.Value, t reflect.Type) *jobspec.FieldError {
	tok, err := w.dec.Token()
	if err != nil {
		return syntaxError("", err)
	}
	if tok != json.Delim('{') {
		return &jobspec.FieldError{Field: "body", Reason: "must be a JSON object, not " + tokenKind(tok)}
	}
	return w.members(v, t, "", "")
}

// value checks the value that comes next against t (nil when any value
// goes), at path, and stores it in v unless v is the zero Value. field is
// the path of struct fields only, which encoding/json names in a type
// error.
func (w *walker) value(v reflect.Value, t reflect.Type, path, field string) *jobspec.FieldError {
	tok, err := w.dec.Token()
	if err != nil {
		return syntaxError(path, err)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if tok == nil { // null leaves the field unset, or clears a pointer, list or map
		if v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice || v.Kind() == reflect.Map) {
			v.SetZero()
		}
		return nil
	}
	if want := jsonKind(t); want != "" && want != tokenKind(tok) && !(want == "an integer" && isInteger(tok)) {
		return &jobspec.FieldError{Field: path, Reason: fmt.Sprintf("must be %s, not %s", want, tokenText(tok))}
	}
	for v.IsValid() && v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	switch tok {
	case json.Delim('{'):
		return w.members(v, t, path, field)
	case json.Delim('['):
		return w.list(v, t, path, field)
	}
	if v.IsValid() {
		w.scalar(v, tok, field)
	}
	return nil
}

// list checks a list's elements after its '[' and stores them in v
// unless v is the zero Value.
func (w *walker) list(v reflect.Value, t reflect.Type, path, field string) *jobspec.FieldError {
	var elem reflect.Type
	if t != nil {
		elem = t.Elem()
	}
	if v.IsValid() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	for i := 0; w.dec.More(); i++ {
		var ev reflect.Value
		if v.IsValid() {
			ev = reflect.New(elem).Elem()
		}
		if err := w.value(ev, elem, path+"["+strconv.Itoa(i)+"]", field); err != nil {
			return err
		}
		if v.IsValid() {
			v.Set(reflect.Append(v, ev))
		}
	}
	if _, err := w.dec.Token(); err != nil { // ']'
		return syntaxError(path, err)
	}
	return nil
}

// members checks an object's members after its '{' and stores them in v
// unless v is the zero Value. A struct takes its fields' exact JSON
// names; a map any key, each once.
func (w *walker) members(v reflect.Value, t reflect.Type, path, field string) *jobspec.FieldError {
	fields := jsonFields(t)
	if v.IsValid() && v.Kind() == reflect.Map && v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return syntaxError(path, err)
		}
		key, _ := tok.(string)
		at := fieldPath(path, key)
		if seen[key] {
			return &jobspec.FieldError{Field: at, Reason: "is given twice; give it once"}
		}
		seen[key] = true
		var ft reflect.Type
		var fv reflect.Value
		sub := field
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			f, ok := fields[key]
			if !ok {
				return &jobspec.FieldError{Field: at, Reason: unknownField(key, fields)}
			}
			ft, sub = f.Type, fieldPath(field, key)
			if v.IsValid() {
				fv = v.FieldByIndex(f.Index)
			}
		case t != nil && t.Kind() == reflect.Map:
			ft = t.Elem()
			if v.IsValid() {
				fv = reflect.New(ft).Elem()
			}
		}
		if err := w.value(fv, ft, at, sub); err != nil {
			return err
		}
		if v.IsValid() && v.Kind() == reflect.Map {
			v.SetMapIndex(reflect.ValueOf(key), fv)
		}
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return syntaxError(path, err)
	}
	return nil
}

// scalar stores a string, boolean or number token in v, whose kind the
// checks have matched to the token, as encoding/json would: a number v
// cannot hold is left out and kept as the type error.
func (w *walker) scalar(v reflect.Value, tok json.Token, field string) {
	switch x := tok.(type) {
	case string:
		v.SetString(x)
	case bool:
		v.SetBool(x)
	case json.Number:
		s := string(x)
		var ok bool
		switch v.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n, err := strconv.ParseInt(s, 10, 64)
			if ok = err == nil && !v.OverflowInt(n); ok {
				v.SetInt(n)
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n, err := strconv.ParseUint(s, 10, 64)
			if ok = err == nil && !v.OverflowUint(n); ok {
				v.SetUint(n)
			}
		case reflect.Float32, reflect.Float64:
			n, err := strconv.ParseFloat(s, v.Type().Bits())
			if ok = err == nil && !v.OverflowFloat(n); ok {
				v.SetFloat(n)
			}
		}
		if !ok && w.typeErr == nil {
			w.typeErr = &jobspec.FieldError{Field: field, Reason: "cannot hold the JSON number " + s}
		}
	}
}

func syntaxError(path string, err error) *jobspec.FieldError {
	return &jobspec.FieldError{Field: fieldPath(path, ""), Reason: "not valid JSON: " + jsonErrorText(err)}
}

// isInteger reports whether a token is a number without a fraction that
// fits an int.
func isInteger(tok json.Token) bool {
	n, ok := tok.(json.Number)
	if !ok {
		return false
	}
	_, err := strconv.ParseInt(string(n), 10, 0)
	return err == nil
}

// fieldsByType caches jsonFields by type.
var fieldsByType sync.Map // reflect.Type → map[string]reflect.StructField

// jsonFields maps a struct's JSON field names to its fields; the map is
// shared and must not be changed.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := structFields(t)
	fieldsByType.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func unknownField(key string, fields map[string]reflect.StructField) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		if strings.EqualFold(n, key) {
			return fmt.Sprintf("unknown field; did you mean %q? (names are case-sensitive)", n)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return "unknown field; known: " + strings.Join(names, ", ")
}

func fieldPath(path, key string) string {
	switch {
	case path == "":
		if key == "" {
			return "body"
		}
		return key
	case key == "":
		return path
	}
	return path + "." + key
}

// tokenKind describes a JSON token for error messages.
func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case json.Delim:
		if tok == json.Delim('{') {
			return "an object"
		}
		return "a list"
	}
	return fmt.Sprintf("%T", tok)
}

// tokenText is tokenKind with a scalar's value, for messages.
func tokenText(tok json.Token) string {
	switch v := tok.(type) {
	case json.Number:
		return "the number " + v.String()
	case string:
		return "a string"
	case bool:
		return "the boolean " + strconv.FormatBool(v)
	}
	return tokenKind(tok)
}

// jsonKind names the JSON a Go type decodes from, as tokenKind does;
// empty for any JSON (nil or an interface).
func jsonKind(t reflect.Type) string {
	if t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return ""
}

func jsonErrorText(err error) string {
	if errors.Is(err, io.EOF) {
		return "the body ends early"
	}
	return err.Error()
}
