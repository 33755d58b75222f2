// Package strictjson decodes a JSON request body into a struct as
// strictly as jobspec reads a manifest: a key given twice (at any depth)
// and a key that is not exactly a field's JSON name are errors, where
// encoding/json would take the last duplicate and match keys
// case-insensitively. Errors are jobspec.FieldErrors naming the field, so
// that the API answers them as it answers a manifest's.
//
// It lives apart from the API's handlers because it is a parser of
// outside input with its own fuzz tests, and knows nothing of HTTP.
package strictjson
