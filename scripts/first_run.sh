#!/usr/bin/env bash
# The first-run figures of README: a fresh clone of this repository, `make demo` (install included, an
# elapsed stamp on every output line), the tour's replay after it and again, and the tour on a cold
# numba cache. Usage: bash scripts/first_run.sh [WORKDIR]  (default /tmp/vigil-first-run)
set -u
d=${1:-/tmp/vigil-first-run}; rm -rf "$d"; mkdir -p "$d"; git clone -q "$(git rev-parse --show-toplevel)" "$d/v"; cd "$d/v"
export XDG_CACHE_HOME=$d/cache
start=$(date +%s.%N)
stamp() { while IFS= read -r l; do printf '%7.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$l"; done; }
echo "commit $(git log --oneline -1 | cut -c1-7); load at start: $(cat /proc/loadavg)"
make demo 2>&1 | stamp > $d/demo.log
echo "demo done at $(echo "$(date +%s.%N) - $start" | bc) s; load $(cat /proc/loadavg)"
grep -m1 "batch 0" $d/demo.log
s=$(date +%s.%N); .venv/bin/vigil gen --out runs/example > /dev/null 2>&1
.venv/bin/vigil replay --stream runs/example/stream.parquet --queries runs/example/queries.jsonl --out runs/example/out.jsonl > $d/tour1.log 2>&1
echo "tour first replay (after demo, incl gen): $(echo "$(date +%s.%N) - $s" | bc) s; load $(cat /proc/loadavg)"
s=$(date +%s.%N)
.venv/bin/vigil replay --stream runs/example/stream.parquet --queries runs/example/queries.jsonl --out runs/example/out2.jsonl > $d/tour2.log 2>&1
echo "tour second replay: $(echo "$(date +%s.%N) - $s" | bc) s"
cmp runs/example/out.jsonl runs/example/out2.jsonl && echo "same outputs"
export XDG_CACHE_HOME=$d/cache2
s=$(date +%s.%N)
.venv/bin/vigil replay --stream runs/example/stream.parquet --queries runs/example/queries.jsonl --out runs/example/out3.jsonl > $d/tour3.log 2>&1
echo "tour replay on a cold cache (no demo before): $(echo "$(date +%s.%N) - $s" | bc) s; load $(cat /proc/loadavg)"
