#!/usr/bin/env bash
# Loading a closure over a slow HTTP cache (issue 25): `size` of the root of
# a synthetic 10,000-narinfo cache (bench/narinfo_cache.py: real narinfo
# format, 20 levels) served by bench/slow_server.py, which answers every
# request after DELAY_MS (default 50), side by side (A and B in turn):
#   A  this build, narinfos as a work queue, --http-connections N
#   B  OTHER_NIX_HEFT (an earlier commit: one level of the graph at a time,
#      16 requests in flight)
# for N = 16 (the queue alone) and N = 128 (the default), then one run of
# `nix path-info -r --store http://…` on the same server. Each run starts
# with an empty $XDG_CACHE_HOME (a cold cache).
# usage: bench/closure-queue.sh OTHER_NIX_HEFT [RUNS] [DELAY_MS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
other="${1:?usage: bench/closure-queue.sh OTHER_NIX_HEFT [RUNS] [DELAY_MS]}"
runs="${2:-3}"
delay="${3:-50}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
heft="${NIX_HEFT:-$repo/target/release/nix-heft}"
[ -x "$heft" ] || (cd "$repo" && cargo build --release --quiet)
cache="$data/narinfo-cache-10000"
[ -f "$cache/root.txt" ] || python3 "$here/narinfo_cache.py" "$cache" >/dev/null
root="$(cat "$cache/root.txt")"
# The synthetic cache is unsigned (narinfo_cache.py writes no Sig lines):
# accepted deliberately, as nix.conf's require-sigs = false would; the
# other build may predate signatures and ignore it.
export NIX_CONFIG="require-sigs = false"
port=$((20000 + RANDOM % 20000))
python3 "$here/slow_server.py" "$port" "$cache" "$delay" &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/nix-cache-info" >/dev/null 2>&1 && break
  sleep 0.1
done
url="http://127.0.0.1:$port"
paths="$(XDG_CACHE_HOME="$(mktemp -d)" "$heft" --store "$url" size --json "$root" \
  | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["paths"]))')"
echo "closure of the root: $paths paths; server delay ${delay} ms"
echo "bound at N in flight: max(depth x delay, $paths x delay / N)"
# One cold run: wall seconds and peak RSS (KiB) from GNU time.
once() {
  XDG_CACHE_HOME="$(mktemp -d)" /usr/bin/time -f "%e %M" "$@" >/dev/null 2>"$data/time.out" || true
  tail -1 "$data/time.out"
}
for n in 16 128; do
  echo "## size: this build --http-connections $n (A) against the other build (B), in turn"
  for i in $(seq "$runs"); do
    echo "A $(once "$heft" --http-connections "$n" --store "$url" size --json "$root")"
    echo "B $(once "$other" --store "$url" size --json "$root")"
  done | tee "$data/pairs-$n.txt"
  python3 - "$data/pairs-$n.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for who in "AB":
    w = [float(r[1]) for r in rows if r[0] == who]
    m = [int(r[2]) // 1024 for r in rows if r[0] == who]
    print(f"{who}: wall median {statistics.median(w):.2f} s (min {min(w):.2f}, max {max(w):.2f}), peak {max(m)} MiB")
a = [float(r[1]) for r in rows if r[0] == "A"]
b = [float(r[1]) for r in rows if r[0] == "B"]
print("ratio A/B per pair:", " ".join(f"{x / y:.3f}" for x, y in zip(a, b)))
PY
done
echo "## nix path-info -r (one run)"
/usr/bin/time -f "%e s wall, %M KiB peak" nix --extra-experimental-features nix-command \
  path-info -r --store "$url" "$root" | wc -l
