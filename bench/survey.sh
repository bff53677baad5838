#!/usr/bin/env bash
# Survey benchmark (nix-heft-survey issue): the map step's throughput over
# a file:// binary cache, side by side in one run:
#   A. `nix-heft-survey run --all`, embedded (DataFusion in this process);
#   B. `nix-heft refs PATH` run path by path over the same paths, what a
#      shell loop does today;
#   C. `nix-heft-survey run --cluster` on a Ballista scheduler with ONE
#      executor on 127.0.0.1, and D. with TWO (both on this machine).
# Every run starts with an empty local cache (XDG_CACHE_HOME) and output
# directory, so each one reads every NAR.
#
# usage: bench/survey.sh [CACHE_DIR] [RUNS]
#   CACHE_DIR defaults to the scan benchmark's zstd cache
#   (bench/.data/scan-cache-zstd, made by bench/advise.sh); the 2 GiB xz
#   cache of bench/http-large.nix (bench/http.sh exports it) is the other
#   one measured in BENCHMARKS.md. RUNS defaults to 3.
# Prints hyperfine's table for A-D, the paths and NAR bytes of the cache
# (for paths/s and GB/s), and single-core decompression rates of its NARs
# (for the per-core figures the channel estimate uses).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cache="$(cd "${1:-$here/.data/scan-cache-zstd}" && pwd)"
runs="${2:-3}"
for tool in hyperfine:hyperfine zstd:zstd xz:xz-utils; do
  command -v "${tool%%:*}" >/dev/null || apt-get install -y "${tool#*:}" >/dev/null
done
[ -f "$cache/nix-cache-info" ] || { echo "no binary cache at $cache" >&2; exit 2; }
(cd "$repo" && cargo build --release --quiet)
# The survey's dev build: its dependencies, the nix-heft library among
# them, are built at opt-level 2 (survey/Cargo.toml), and a second, release
# build of DataFusion and Ballista would cost as long again. The comparison
# is therefore, if anything, unfair to the survey.
(cd "$repo/survey" && cargo build --quiet)
heft="$repo/target/release/nix-heft"
survey="$repo/survey/target/debug/nix-heft-survey"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

grep -h '^StorePath: ' "$cache"/*.narinfo | cut -d' ' -f2 | sort > "$work/paths"
npaths=$(wc -l < "$work/paths")
# (mawk's integers stop at 2^31: python sums.)
sum() { grep -h "^$1: " "$cache"/*.narinfo | python3 -c 'import sys; print(sum(int(l.split()[1]) for l in sys.stdin))'; }
narbytes=$(sum NarSize)
filebytes=$(sum FileSize)
echo "cache: $cache"
echo "paths: $npaths; NAR bytes: $narbytes; compressed: $filebytes"

# Ballista on 127.0.0.1: one scheduler, two executors; the run with one
# executor uses a scheduler of its own.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "nothing on $1" >&2; exit 1; }
start_cluster() { # EXECUTORS -> sets $url to df://127.0.0.1:PORT
  local s; s=$(port)
  "$survey" scheduler --bind "127.0.0.1:$s" >> "$work/cluster.log" 2>&1 &
  pids+=($!)
  wait_port "$s"
  for _ in $(seq "$1"); do
    local e g; e=$(port); g=$(port)
    XDG_CACHE_HOME="$work/xdg-executor" "$survey" executor --scheduler "127.0.0.1:$s" \
      --bind "127.0.0.1:$e" --grpc-port "$g" >> "$work/cluster.log" 2>&1 &
    pids+=($!)
    wait_port "$e"
  done
  sleep 2 # registration
  url="df://127.0.0.1:$s"
}
start_cluster 1; one=$url
start_cluster 2; two=$url

reset="rm -rf $work/out $work/xdg $work/xdg-executor"
embedded="env XDG_CACHE_HOME=$work/xdg $survey run --json --store file://$cache -o $work/out --all"
bypath="sh -c 'for p in \$(cat $work/paths); do XDG_CACHE_HOME=$work/xdg $heft --store file://$cache --json refs \$p >/dev/null; done'"
cluster1="env XDG_CACHE_HOME=$work/xdg $survey run --json --cluster $one --store file://$cache -o $work/out --all"
cluster2="env XDG_CACHE_HOME=$work/xdg $survey run --json --cluster $two --store file://$cache -o $work/out --all"
hyperfine -N -r "$runs" --prepare "$reset" \
  -n embedded "$embedded" -n refs-path-by-path "$bypath" \
  -n ballista-1-executor "$cluster1" -n ballista-2-executors "$cluster2" \
  --export-json "$work/times.json"
python3 - "$work/times.json" "$npaths" "$narbytes" <<'PY'
import json, statistics, sys
times, n, nar = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
# user: the mean over the runs, of the timed process only (for the
# Ballista runs that is the coordinator; the executors are other processes).
print(f"{'command':24} {'median s':>9} {'user s':>8} {'paths/s':>9} {'GB/s (NAR)':>11}")
for r in times["results"]:
    m = statistics.median(r["times"])
    print(f"{r['command']:24} {m:9.2f} {r['user']:8.2f} {n / m:9.1f} {nar / m / 1e9:11.2f}")
PY

# Single-core decompression of the cache's NARs, for the per-core figures.
comp=$(grep -h '^Compression: ' "$cache"/*.narinfo | head -1 | cut -d' ' -f2)
case "$comp" in
  xz) dec="xz -dc -T1" ;;
  zstd) dec="zstd -dc" ;;
  *) dec="" ;;
esac
if [ -n "$dec" ]; then
  start=$(date +%s.%N)
  cat "$cache"/nar/* | $dec | wc -c > /dev/null
  end=$(date +%s.%N)
  python3 -c "s=$end-$start; print(f'$comp -d, one core: {s:.2f} s, {$narbytes/s/1e6:.0f} MB/s of NAR out, {$filebytes/s/1e6:.0f} MB/s in')"
fi
