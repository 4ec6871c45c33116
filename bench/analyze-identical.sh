#!/bin/bash
# `bench/analyze-identical.sh BASE_CLI [CACHE_DIR]`: `analyze --json` of every trace fixture, the
# examples and the bench files (.bench-data/), one thread and automatic, by another checkout's CLI
# (BASE_CLI, e.g. ../main/bin/fleetbench.js) and by this one's, compared byte for byte with the
# exit codes: what a change to the analysis's speed must leave alone (docs/performance.md, issue
# 50). The base's outputs are kept in CACHE_DIR (default /tmp/fleetbench-identical) and reused.
set -u
base=${1:?usage: bench/analyze-identical.sh BASE_CLI [CACHE_DIR]}
cache=${2:-/tmp/fleetbench-identical}
cd "$(dirname "$0")/.."
mkdir -p "$cache/base" "$cache/this"
files="examples/sample-trace.jsonl examples/ao-gh-trace.jsonl $(ls test/fixtures/*/*.trace.jsonl.gz)"
for f in .bench-data/learn-v1-4h.jsonl .bench-data/analyze-v2-200000.jsonl .bench-data/analyze-v2-2000000.jsonl; do
  [ -f "$f" ] && files="$files $f"
done
fail=0
for f in $files; do
  for threads in auto 1; do
    # The 2M file on one thread takes long and says nothing the automatic run does not.
    case "$f" in *2000000*) [ "$threads" = 1 ] && continue ;; esac
    name=$(echo "$f-$threads" | tr / _)
    if [ ! -s "$cache/base/$name.rc" ]; then
      node "$base" analyze --json --threads "$threads" "$f" >"$cache/base/$name.json" 2>/dev/null
      echo $? >"$cache/base/$name.rc"
    fi
    node bin/fleetbench.js analyze --json --threads "$threads" "$f" >"$cache/this/$name.json" 2>/dev/null
    echo $? >"$cache/this/$name.rc"
    if cmp -s "$cache/base/$name.json" "$cache/this/$name.json" && cmp -s "$cache/base/$name.rc" "$cache/this/$name.rc"; then
      echo "same       $f ($threads threads; exit $(cat "$cache/this/$name.rc"))"
    else
      echo "DIFFERENT  $f ($threads threads)"
      fail=1
    fi
  done
done
exit $fail
