#!/usr/bin/env bash
# Trace overhead: each workload untraced, under `strace -f -e trace=%file
# -o /dev/null` and under `nix-heft trace`, RUNS times each, in turn
# (A B C A B C ...), timed as whole processes with /usr/bin/time.
#
#   bench/trace.sh [RUNS]        (default 5)
#
# Workloads:
#   python   /usr/bin/python3 -c 'import email, json, asyncio, ...' (Debian's
#            python3: about a thousand stat/open calls)
#   findcat  find DIR -type f -exec cat {} + >/dev/null over DIR (default
#            /usr/lib/python3.11, ~54 MiB; set TRACE_BENCH_DIR), like a build
#            reading its sources
# Prints the median wall time of each and the ratios to untraced.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
DIR=${TRACE_BENCH_DIR:-/usr/lib/python3.11}
cargo build --release --quiet
HEFT=$PWD/target/release/nix-heft
command -v strace >/dev/null || { echo "bench/trace.sh: strace is missing (apt-get install strace)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

py=(/usr/bin/python3 -c 'import email, json, asyncio, http.client, xml.dom.minidom, decimal, logging')
fc=(sh -c "find $DIR -type f -exec cat {} + >/dev/null")

wall() { # prints wall seconds of "$@"
  /usr/bin/time -f '%e' -o "$TMP/t" "$@" >/dev/null 2>&1
  cat "$TMP/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for w in python findcat; do
  if [ $w = python ]; then cmd=("${py[@]}"); else cmd=("${fc[@]}"); fi
  "${cmd[@]}" >/dev/null 2>&1 # warm the page cache
  : > "$TMP/plain"; : > "$TMP/strace"; : > "$TMP/heft"
  for _ in $(seq "$RUNS"); do
    wall "${cmd[@]}" >> "$TMP/plain"
    wall strace -f -e trace=%file -o /dev/null "${cmd[@]}" >> "$TMP/strace"
    wall "$HEFT" trace -o "$TMP/trace.json" -- "${cmd[@]}" >> "$TMP/heft"
  done
  p=$(median < "$TMP/plain"); s=$(median < "$TMP/strace"); h=$(median < "$TMP/heft")
  awk -v w=$w -v p="$p" -v s="$s" -v h="$h" 'BEGIN {
    printf "%-8s untraced %6.3f s   strace %6.3f s (%.2fx)   nix-heft trace %6.3f s (%.2fx)\n", w, p, s, s / p, h, h / p }'
done
