package strictjson

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// tokens is what walker reads JSON through: a json.Decoder (with
// UseNumber), or validTokens.
type tokens interface {
	Token() (json.Token, error)
	More() bool
}

var _ tokens = (*json.Decoder)(nil)

// validTokens gives the tokens of data, which json.Valid has accepted,
// as json.Decoder.Token gives them with UseNumber (numbers as
// json.Number), at a fraction of its cost: Token decodes every scalar
// through encoding/json's reflection, this slices it out of data.
// Input that is not valid JSON must go to a json.Decoder, whose errors
// the callers report.
type validTokens struct {
	data []byte
	pos  int
}

// skip passes whitespace and the separators ':' and ',', which Token
// does not return.
func (v *validTokens) skip() {
	for v.pos < len(v.data) {
		switch v.data[v.pos] {
		case ' ', '\t', '\n', '\r', ':', ',':
			v.pos++
		default:
			return
		}
	}
}

// More reports whether another element of the current list or object
// follows.
func (v *validTokens) More() bool {
	v.skip()
	return v.pos < len(v.data) && v.data[v.pos] != ']' && v.data[v.pos] != '}'
}

// Token returns the next token, io.EOF after the last.
func (v *validTokens) Token() (json.Token, error) {
	v.skip()
	if v.pos >= len(v.data) {
		return nil, io.EOF
	}
	start := v.pos
	switch c := v.data[start]; c {
	case '{', '}', '[', ']':
		v.pos++
		return json.Delim(c), nil
	case '"':
		return v.str()
	case 't':
		v.pos += len("true")
		return true, nil
	case 'f':
		v.pos += len("false")
		return false, nil
	case 'n':
		v.pos += len("null")
		return nil, nil
	}
	for v.pos < len(v.data) && isNumberByte(v.data[v.pos]) {
		v.pos++
	}
	return json.Number(v.data[start:v.pos]), nil
}

// str returns the string starting at pos. One without escapes and in
// valid UTF-8 is its bytes; any other is left to encoding/json, which
// decodes escapes and replaces invalid UTF-8 as Token does.
func (v *validTokens) str() (json.Token, error) {
	start, plain := v.pos, true
	for v.pos++; v.pos < len(v.data) && v.data[v.pos] != '"'; v.pos++ {
		if c := v.data[v.pos]; c == '\\' {
			plain = false
			v.pos++ // the escaped byte, which may be '"'
		} else if c >= utf8.RuneSelf {
			plain = false
		}
	}
	v.pos++ // the closing quote
	raw := v.data[start:v.pos]
	if plain {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("string %s: %w", raw, err)
	}
	return s, nil
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || slices.Contains([]byte("-+.eE"), c)
}
