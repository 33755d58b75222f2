// Package ui is Voda's web dashboard: static pages, a script and a style
// sheet embedded in the binary and served by `voda server` at /ui/. No
// build step: the assets are plain HTML, CSS and JavaScript modules that
// browsers run as they are.
//
// The dashboard reads everything from the public API, as any client could:
// GET /api/v1/events (a server-sent event stream: a snapshot of the live
// jobs, nodes and schedulers the viewer may see, then every change), GET
// /api/v1/jobs page by page for the finished jobs when a view shows them,
// and the settings routes to change an algorithm or a rate limit, which
// the API refuses to those not allowed. A viewer with a bearer token pastes it
// once; it stays in the tab's sessionStorage.
package ui
