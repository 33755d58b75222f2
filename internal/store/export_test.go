package store

// SetMongoBeforeBulk makes SaveStatus of s, a MongoDB store, call f
// between reading the jobs and writing their statuses, so that a test can
// write in between as another process could.
func SetMongoBeforeBulk(s Store, f func()) { s.(*mongoStore).beforeBulk = f }
