// Package store keeps Voda's jobs and per-GPU-type scheduler records
// durably, so a restarted server resumes where it stopped.
//
// Store is the interface; Open picks an implementation from a URL. The
// embedded default (a bbolt file under the data directory) needs no
// server; the MongoDB implementation (official Go driver) is for the
// production deployment. One contract suite (storetest) runs against both.
package store
