package store

// SetMongoBeforeBulk makes SaveStatus of s, a MongoDB store, call f
// between reading the jobs and writing their statuses, so that a test can
// write in between as another process could.
func SetMongoBeforeBulk(s Store, f func()) { s.(*mongoStore).beforeBulk = f }

// SetIndexBatch makes the embedded store build its index n jobs a
// transaction, until the returned function restores the default.
func SetIndexBatch(n int) (restore func()) {
	old := indexBatch
	indexBatch = n
	return func() { indexBatch = old }
}

// MongoQueries are the filters and sorts the MongoDB store's ListJobs
// sends for opts and its ListFinished sends, for tests that ask the
// server how it runs them.
func MongoQueries(opts ListOptions) (list, listOrder, finished, finishedOrder any) {
	f, _ := listFilter(opts)
	return f, listSort, liveFilter(false), finishedSort
}
