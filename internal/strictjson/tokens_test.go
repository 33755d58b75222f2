package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allTokens reads every token of dec, and the error that ends them
// (nil at the end of the input).
func allTokens(dec tokens) ([]json.Token, error) {
	var out []json.Token
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, tok)
		// More at every step, as walker calls it between elements.
		out = append(out, dec.More())
	}
}

// FuzzValidTokens: for valid JSON, validTokens gives the tokens
// json.Decoder gives with UseNumber, and More agrees at each of them.
func FuzzValidTokens(f *testing.F) {
	for _, s := range []string{
		`{"generation": "g", "workers": 2, "epoch": 1.5e-3, "metrics": {"loss": -0.5}, "final": true}`,
		`[1, -2, 3.5E+7, "a\"b\\c", "\u00e9\ud83d\ude00", "é", null, false, {}, []]`,
		"\"\xff\xfe\"", `"\ud800"`, `  {"a" : [ ]  , "b":{ } } `, `0`, `"x" "y"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		want, wantErr := allTokens(dec)
		got, err := allTokens(&validTokens{data: data})
		if err != nil || wantErr != nil {
			t.Fatalf("%q: errors %v, json.Decoder %v", data, err, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: tokens (-json.Decoder,+validTokens):\n%s", data, diff)
		}
	})
}
