// Package eventhub finds what changed in the store for the API's event
// stream (GET /api/v1/events, docs/api.md) and hands each change to every
// open stream: one poll of the store per API replica however many streams
// are open, each change encoded once.
//
// It owns the polling (when to read the jobs, when a cheap read says
// nothing changed), the state the streams start from (a Snapshot), the
// fan-out and the limits on streams. What a job, a GPU type's nodes or a
// scheduler looks like on the wire is the API's: it hands the hub a
// Renderer. Who may see what is the API's too: a Frame carries the Scope
// (namespace and kind) the API filters on.
package eventhub
