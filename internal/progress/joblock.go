package progress

import (
	"context"
	"fmt"
	"sync"
)

// jobLocks lets one report per job at a time read, change and write the
// job's stored state within a process. Without it, concurrent reports for
// one job (two processes that both believe they are rank 0 after a
// Horovod reset, or a flood) all read the same revision and all but one
// lose the write, again and again. A job's entry exists only while a
// report of it holds or awaits its turn, so the table holds at most the
// jobs with a report in flight, never every job seen; and each job's
// waiters are capped, so a flood for one job neither piles up handlers
// nor keeps its reports waiting long.
//
// The zero value is ready to use.
type jobLocks struct {
	mu   sync.Mutex
	jobs map[string]*jobLock
}

// jobLock is one job's entry: turn holds a token while a report is
// applied; refs counts that report and the ones waiting (under
// jobLocks.mu).
type jobLock struct {
	turn chan struct{}
	refs int
}

// lock waits for job name's turn, unless maxWaiting reports of the job
// already wait (ErrBusy, at once) or ctx ends first (ErrBusy wrapping
// ctx's error). waited is whether another report held the turn when it
// asked: what the caller read of the job before may be stale. The caller
// passes the turn on with unlock(name, turn) once its report is applied.
func (l *jobLocks) lock(ctx context.Context, name string, maxWaiting int) (turn *jobLock, waited bool, err error) {
	l.mu.Lock()
	e := l.jobs[name]
	if e == nil {
		if l.jobs == nil {
			l.jobs = map[string]*jobLock{}
		}
		e = &jobLock{turn: make(chan struct{}, 1)}
		l.jobs[name] = e
	}
	if waiting := e.refs - 1; waiting >= maxWaiting { // besides the holder
		l.mu.Unlock()
		return nil, false, fmt.Errorf("%d of its reports are already waiting: %w", waiting, ErrBusy)
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.turn <- struct{}{}:
		return e, false, nil
	default:
	}
	select {
	case e.turn <- struct{}{}:
		return e, true, nil
	case <-ctx.Done():
		l.release(name, e)
		return nil, true, fmt.Errorf("gave up waiting for its other reports: %w (%w)", ErrBusy, context.Cause(ctx))
	}
}

// unlock ends the turn lock gave for job name.
func (l *jobLocks) unlock(name string, e *jobLock) {
	<-e.turn
	l.release(name, e)
}

// release drops a reference to e, and e itself once nothing refers to it.
func (l *jobLocks) release(name string, e *jobLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.jobs, name)
	}
}

// refs is the number of jobs in the table and the reports holding or
// awaiting job name's turn (for tests).
func (l *jobLocks) refs(name string) (jobs, refs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.jobs[name]; e != nil {
		refs = e.refs
	}
	return len(l.jobs), refs
}
