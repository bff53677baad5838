#!/usr/bin/env bash
# `nix-heft roots` on a store of 500,000 paths and 1,500,000 roots (issue
# 41, "Performance"), side by side in one run with its yardsticks:
#
#   floor      sqlite3 reading every `Refs` row of the database (what any
#              whole-store answer must read; the issue's "read floor");
#   links      `find gcroots profiles -printf '%l %T@'`: every link of the
#              root trees read once with its mtime, one process (the other
#              floor: what finding the roots must read; the indirect links'
#              second links not included);
#   roots      nix-heft --store ROOT roots --top 10: every root's figure,
#              the groups and the dead set (the issue's 5 s / 1 GiB goal);
#   size       nix-heft --store ROOT size --json on roots.txt (the 20,000
#              top-level paths: every path's added size over the whole
#              store, the issue's "whole-store computation", 3x the floor).
# Timed in turn, RUNS times each after one warm-up of each (GNU time: wall,
# user, sys, peak RSS). Then, once each:
#   gc         Nix's collector on the same store, `nix-store --store ROOT
#              --gc --print-dead` (deletes nothing), bounded by GC_TIMEOUT
#              seconds (default 1800; killed then, and said);
#   loop       the loop a user runs today, per root `nix-store --store ROOT
#              -q --roots PATH` and `nix path-info --store ROOT -S PATH`, on
#              LOOP_SAMPLE roots (default 3; each `--roots` walks every
#              root), extrapolated to every root (stated as an estimate).
#
# Data: bench/gen_store.py ROOT --paths 500000 --drvs 0.1 --roots 1500000
# (standard library only; bench/README.md describes it), written once into
# $NIX_HEFT_BENCH_DATA (default bench/.data)/roots-500000-s1; about 20 min
# and 6 GB (the links' blocks). REGENERATE=1 writes it anew (delete the
# directory first).
#
# usage: bench/roots.sh [RUNS]
#   env: PATHS (500000), ROOTS (1500000), GC_TIMEOUT (1800; 0 skips the
#   collector), LOOP_SAMPLE (3; 0 skips the loop), HEFT=BIN (time this binary
#   instead of building target/release's).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-3}"
paths="${PATHS:-500000}"
n_roots="${ROOTS:-1500000}"
gc_timeout="${GC_TIMEOUT:-1800}"
sample="${LOOP_SAMPLE:-3}"
for tool in sqlite3 /usr/bin/time nix-store nix python3 find timeout; do
  command -v "$tool" >/dev/null || { echo "roots.sh: $tool is missing" >&2; exit 1; }
done
heft="${HEFT:-}"
if [ -z "$heft" ]; then
  (cd "$repo" && cargo build --release --quiet --bin nix-heft)
  heft="$repo/target/release/nix-heft"
fi

root="${NIX_HEFT_BENCH_DATA:-$here/.data}/roots-$paths-s1"
if [ ! -s "$root/stats.json" ] || [ "${REGENERATE:-0}" = 1 ]; then
  echo "generating $root (about 20 minutes at 500,000 paths) ..." >&2
  python3 "$here/gen_store.py" "$root" --paths "$paths" --drvs 0.1 --roots "$n_roots" \
    --mkdirs --force >&2
fi
db="$root/nix/var/nix/db/db.sqlite"
state="$root/nix/var/nix"
nixc=(nix --extra-experimental-features nix-command)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mapfile -t tops < "$root/roots.txt"

# One run: "label wall peak-KiB user sys"; its output in $work/LABEL.out.
# A failed run stops the benchmark: its time would mean nothing.
timed() {
  local label="$1"
  shift
  if ! /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > "$work/$label.out" 2> "$work/$label.err"; then
    echo "FAILED: $*" >&2
    tail -20 "$work/$label.err" >&2
    exit 1
  fi
  echo "$label $(tail -1 "$work/time")"
}
floor() { timed floor sqlite3 -readonly "$db" 'SELECT referrer, reference FROM Refs'; }
links() { timed links find "$state/gcroots" "$state/profiles" -printf '%l %T@\n'; }
roots() { timed roots "$heft" --store "$root" roots --top 10; }
size() { timed size "$heft" --store "$root" size --json "${tops[@]}"; }

echo "machine: $(nproc) cores, $(uptime)" >&2
# The warm-ups (the page cache: the database, 6 GB of links), not counted.
floor > /dev/null; links > /dev/null; roots > /dev/null; size > /dev/null
for _ in $(seq "$runs"); do
  floor; links; roots; size
done | tee "$work/runs.txt"
echo "machine after: $(uptime)" >&2

# Checks: what was timed answered the question.
# The database's own count: stats.json counts the generator's graph, and
# the derivations' references are added after it.
refs="$(sqlite3 "$db" 'SELECT count(*) FROM Refs')"
[ "$(wc -l < "$work/floor.out")" = "$refs" ] \
  || { echo "the floor did not read every Refs row" >&2; exit 1; }
# The first line counts the roots: every one made must be there.
head -1 "$work/roots.out" >&2
found="$(head -1 "$work/roots.out" | sed -n 's/.*: \([0-9]*\) root(s) keep.*/\1/p')"
[ -n "$found" ] && [ "$found" -ge "$n_roots" ] \
  || { echo "roots found ${found:-none} of the $n_roots made" >&2; exit 1; }

# Nix's collector, once, bounded.
if [ "$gc_timeout" -gt 0 ]; then
  set +e
  timeout "$gc_timeout" /usr/bin/time -f "%e %M %U %S" -o "$work/time" \
    nix-store --store "$root" --gc --print-dead > "$work/gc.out" 2> "$work/gc.err"
  rc=$?
  set -e
  if [ "$rc" = 124 ]; then
    echo "gc killed after ${gc_timeout}s, $(wc -l < "$work/gc.out") dead paths printed"
  elif [ "$rc" = 0 ]; then
    echo "gc $(tail -1 "$work/time") ($(grep -c '^/' "$work/gc.out") dead paths)"
  else
    echo "gc FAILED ($rc)"; tail -5 "$work/gc.err"
  fi
fi | tee -a "$work/runs.txt"

# The user's loop today on a sample of roots' store paths, extrapolated.
if [ "$sample" -gt 0 ]; then
  python3 - "$root/roots.txt" "$sample" > "$work/sample.txt" <<'PY'
import random, sys
paths = open(sys.argv[1]).read().split()
print("\n".join(random.Random(41).sample(paths, int(sys.argv[2]))))
PY
  cat > "$work/loop.sh" <<'SH'
set -euo pipefail
while read -r p; do
  nix-store --store "$1" -q --roots "$p"
  nix --extra-experimental-features nix-command path-info --store "$1" -S "$p"
done < "$2"
SH
  line="$(timed loop bash "$work/loop.sh" "$root" "$work/sample.txt")"
  echo "$line" | tee -a "$work/runs.txt"
  python3 - "$line" "$sample" "$n_roots" <<'PY'
import sys
f = sys.argv[1].split()
wall, k, n = float(f[1]), int(sys.argv[2]), int(sys.argv[3])
print(f"loop estimate for {n} roots: {wall / k:.1f} s a root x {n} = {wall / k * n / 3600:.0f} h (not run)")
PY
fi

# Medians of the timed runs.
python3 - "$work/runs.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5 and f[0] in ("floor", "links", "roots", "size"):
        rows.setdefault(f[0], []).append(tuple(map(float, f[1:])))
med = {}
print("| run | wall (median, range) | user | sys | peak RSS |")
print("| --- | ---: | ---: | ---: | ---: |")
for k, v in rows.items():
    w = sorted(x[0] for x in v)
    m = statistics.median(w)
    med[k] = m
    print(f"| {k} | {m:.2f} s ({w[0]:.2f} - {w[-1]:.2f}) | {statistics.median(x[2] for x in v):.2f} s "
          f"| {statistics.median(x[3] for x in v):.2f} s | {statistics.median(x[1] for x in v) / 1024:.0f} MiB |")
if "floor" in med:
    for k in ("size", "roots", "links"):
        if k in med:
            print(f"{k} / floor: {med[k] / med['floor']:.1f}x")
PY
