#!/usr/bin/env bash
# Fails when a tracked file is larger than the limit (default 2 MB,
# VODA_MAX_FILE_BYTES to change it), naming each such file and its size.
# Compiled binaries, caches and data sets belong outside the repository:
# .gitignore covers the build outputs, and the Pollux data is read from
# ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${VODA_MAX_FILE_BYTES:-2000000}"
status=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(stat -c %s -- "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over $limit bytes: $f ($size bytes)" >&2
    status=1
  fi
done < <(git ls-files -z)
if [ "$status" -ne 0 ]; then
  echo "remove these from the tree (git rm --cached) and ignore them, or keep them outside the repository" >&2
fi
exit "$status"
