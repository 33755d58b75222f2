// Package retention removes finished jobs from the store so that its size,
// and the cost of everything that reads it, stops growing with every job
// ever run: the jobs that finished (Completed, Failed, Canceled) longer ago
// than a set age, and the oldest beyond a set number.
//
// It is a rule over the store, not state of its own: each pass reads the
// store's counts and its oldest finished jobs (store.ListFinished) and
// removes what the rule says in bounded batches (store.DeleteFinished),
// pausing between them so that the schedulers' and the API's writes are
// never held up for long. A restarted process applies the same rule to
// the same store. Several processes may run it at once: the store removes
// only finished records and skips names already gone, so a pass that
// races another removes less, never more. It removes job records (with
// their progress) only; the applications' histories stay.
package retention
