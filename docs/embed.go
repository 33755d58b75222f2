// Package docs embeds the documents the server serves itself.
package docs

import _ "embed"

// OpenAPI is the REST API's OpenAPI 3 description.
//
//go:embed openapi.yaml
var OpenAPI []byte
