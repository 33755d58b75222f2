//go:build unix

package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// TestBoltDamagedFile damages a store's file as a full disk, a bad copy or
// a stray write could, and checks Open fails with an error that names the
// file, says it is damaged and what to do, rather than crashing the
// process (it runs in the test binary, which a fault would kill) or
// silently losing data. Each case also checks that the failed Open left
// the file unlocked, and that moving the file away, as the error advises,
// gives an empty store.
func TestBoltDamagedFile(t *testing.T) {
	pageSize := int64(os.Getpagesize())
	garbage := bytes.Repeat([]byte{0xA5, 0x5A, 0xFF, 0x00, 0x13}, 1<<20)
	cases := []struct {
		name   string
		damage func(f *os.File, size int64) error
		want   string // in the error, besides the path and "damaged"
	}{
		{"truncated to half", func(f *os.File, size int64) error { return f.Truncate(size / 2) }, "truncated"},
		{"truncated inside the meta pages", func(f *os.File, size int64) error { return f.Truncate(pageSize + 100) }, "truncated"},
		{"truncated inside the first page", func(f *os.File, size int64) error { return f.Truncate(100) }, "truncated"},
		{"meta page 0 zeroed", func(f *os.File, size int64) error {
			_, err := f.WriteAt(make([]byte, 4096), 0)
			return err
		}, "meta page 0 is invalid"},
		{"meta page 0 garbage", func(f *os.File, size int64) error {
			_, err := f.WriteAt(garbage[:4096], 0)
			return err
		}, "meta page 0 is invalid"},
		{"meta page 1 zeroed", func(f *os.File, size int64) error {
			_, err := f.WriteAt(make([]byte, pageSize), pageSize)
			return err
		}, "meta page 1 is invalid"},
		{"both meta pages zeroed", func(f *os.File, size int64) error {
			_, err := f.WriteAt(make([]byte, 2*pageSize), 0)
			return err
		}, "no valid meta page"},
		{"data pages garbage", func(f *os.File, size int64) error {
			_, err := f.WriteAt(garbage[:size-2*pageSize], 2*pageSize)
			return err
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dir := t.TempDir()
			path := filepath.Join(dir, "voda.db")
			fillStore(t, dir, 300)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			info, err := f.Stat()
			if err == nil {
				err = c.damage(f, info.Size())
			}
			if err := errors.Join(err, f.Close()); err != nil {
				t.Fatalf("damage the file: %v", err)
			}

			s, err := store.Open(ctx, "", dir)
			if err == nil {
				_ = s.Close(ctx)
				t.Fatal("Open of a damaged file succeeded")
			}
			t.Logf("Open: %v", err)
			if !errors.Is(err, store.ErrDamaged) {
				t.Errorf("Open error %q does not wrap ErrDamaged", err)
			}
			msg := err.Error()
			for _, want := range []string{path, "damaged", c.want, "restore it from a backup", "move it away"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Open error %q does not mention %q", msg, want)
				}
			}
			checkUnlocked(t, path)

			if err := os.Rename(path, path+".damaged"); err != nil {
				t.Fatal(err)
			}
			s, err = store.Open(ctx, "", dir)
			if err != nil {
				t.Fatalf("Open after moving the damaged file away: %v", err)
			}
			defer func() { _ = s.Close(ctx) }()
			if jobs, err := s.ListJobs(ctx, store.ListOptions{}); err != nil || len(jobs) != 0 {
				t.Errorf("ListJobs of the new store = %d jobs, %v; want none", len(jobs), err)
			}
		})
	}
}

// TestBoltSoundFileOpens checks the checks at Open accept what the store
// writes, empty files included (what a crash right after creating the
// file leaves).
func TestBoltSoundFileOpens(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	fillStore(t, dir, 300)
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if jobs, err := s.ListJobs(ctx, store.ListOptions{}); err != nil || len(jobs) != 300 {
		t.Errorf("ListJobs = %d jobs, %v; want 300", len(jobs), err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "voda.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, "", empty)
	if err != nil {
		t.Fatalf("Open of an empty file: %v", err)
	}
	_ = s.Close(ctx)
}

// fillStore writes n jobs with 2 KiB manifests into a store in dir, so
// the file spans many pages, and closes it.
func fillStore(t *testing.T, dir string, n int) {
	t.Helper()
	ctx := t.Context()
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	manifest := bytes.Repeat([]byte("m"), 2048)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { // concurrent creates share commits
			name := fmt.Sprintf("job-%04d", i)
			errs[i] = s.CreateJob(ctx, store.Job{Name: name, Kind: "MPIJob", Manifest: manifest,
				Spec: model.JobSpec{Name: name, GPUType: "v100", SubmitTime: time.Unix(int64(i), 0)}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// checkUnlocked fails if some open file in this process still holds the
// lock bbolt takes on path: a failed Open must release the file.
func checkUnlocked(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the damaged file is still locked after the failed Open: %v", err)
	}
}
