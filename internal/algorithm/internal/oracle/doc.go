// Package oracle is a frozen copy of package algorithm as of commit
// 87715a2, before the issue-28 speed work (incremental ordering, no
// per-job name map). Only package algorithm's differential test imports
// it: the new code must answer every snapshot exactly as this one does.
// goodput.go is Goodput's policy of issue 28 (the look-ahead, size and
// settle), on the mechanics of 87715a2 (no tracker).
// Do not change it, except to follow a deliberate policy change of an
// algorithm (then change both and say so in the commit).
package oracle
