#!/usr/bin/env bash
# HTTP benchmark (HTTP cache issue): `advise` on a closure served over HTTP
# on 127.0.0.1 with xz NARs, as cache.nixos.org serves them, against
# `nix copy --from http://… ROOT` into an empty chroot store (the download a
# user needs before any other tool can answer), and a warm rerun.
#
# usage: bench/http.sh [ROOT]
#   ROOT defaults to bench/http.nix's 300 MiB closure (built if missing);
#   bench/http-large.nix builds the 2 GiB ROCm-shaped one (exporting it with
#   xz takes about 35 minutes on 2 busy cores); bench/scan.nix's 4 GiB path
#   also works (one referrer, so advise must read all of it). The cache is exported once with
#   `nix copy --to file://…?compression=xz&write-nar-listing=1` into
#   $NIX_HEFT_BENCH_DATA (default bench/.data)/http-<hash of ROOT>.
# Prints: bytes downloaded by nix-heft (sum of the files the server sent,
# from its log) vs the closure's total compressed NAR size (the narinfos'
# FileSize), and wall times of the three runs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
nixc=(nix --extra-experimental-features nix-command)
for tool in curl:curl bc:bc; do
  command -v "${tool%%:*}" >/dev/null || apt-get install -y "${tool#*:}" >/dev/null
done
# Both in one build: the server's dev-dependencies change features of
# crates nix-heft shares, and two builds would rebuild each other's.
(cd "$repo" && cargo build --release --quiet --bin nix-heft --example cache_server)
heft="$repo/target/release/nix-heft"
root="${1:-}"
if [ -z "$root" ]; then
  root="$(nix-build "$here/http.nix" --option sandbox false --option substituters '' \
    --option build-users-group "" --out-link "${TMPDIR:-/tmp}/nix-heft-bench-http")"
fi
h="$(basename "$root" | cut -c1-32)"
cache="$data/http-$h"
if [ ! -f "$cache/nix-cache-info" ]; then
  mkdir -p "$data"
  echo "exporting $root to $cache (xz, listings) ..." >&2
  "${nixc[@]}" copy --to "file://$cache?compression=xz&parallel-compression=true&write-nar-listing=1" "$root"
fi
work="$(mktemp -d)"
# The tests' CDN-like server (examples/cache_server.rs): every answer after
# DELAY_MS (default 50: a distant cache), each body at MBPS megabytes a
# second when set (a distant server's TCP flow), HTTP/1.1 keep-alive over
# http:// (`nix copy` gets the same server).
delay="${DELAY_MS:-50}"
"$repo/target/release/examples/cache_server" "$cache" --latency-ms "$delay" \
  ${MBPS:+--mbps "$MBPS"} --log "$work/server.log" > "$work/port" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
touch "$work/server.log"
url="http://127.0.0.1:$(head -1 "$work/port")"

# Bytes the server sent since line $1 of its log (path status protocol
# connection bytes): the bodies of 200 answers.
sent_since() {
  tail -n +"$1" "$work/server.log" | awk '$2 == 200 {s += $5} END {print s + 0}'
}
lines() { wc -l < "$work/server.log"; }
total_xz="$("${nixc[@]}" path-info -r --store "file://$cache" "$root" |
  while read -r p; do b="$(basename "$p" | cut -c1-32)"; sed -n 's/^FileSize: //p' "$cache/$b.narinfo"; done |
  awk '{s += $1} END {print s + 0}')"
paths="$("${nixc[@]}" path-info -r --store "file://$cache" "$root" | wc -l)"
nar_total="$("${nixc[@]}" path-info -S --store "file://$cache" "$root" | awk '{print $2}')"

timed() { # label, command...: "label wall-seconds peak-RSS-KiB"
  /usr/bin/time -f "%e %M" -o "$work/$1.time" "${@:2}" > "$work/$1.out"
  echo "$1 $(cat "$work/$1.time")"
}

export XDG_CACHE_HOME="$work/xdg"
# The exported cache is not signed (exporting it again takes half an hour):
# its narinfos are accepted deliberately, as nix-heft would refuse them.
export NIX_CONFIG="require-sigs = false"
l0=$(lines)
t_cold=$(timed advise-cold "$heft" --store "$url" --json advise "$root")
b_cold=$(sent_since $((l0 + 1)))
l1=$(lines)
t_warm=$(timed advise-warm "$heft" --store "$url" --json advise "$root")
b_warm=$(sent_since $((l1 + 1)))
l2=$(lines)
t_all=$(XDG_CACHE_HOME="$work/xdg-all" timed advise-all "$heft" --store "$url" --json advise --min-saving 0 "$root")
b_all=$(sent_since $((l2 + 1)))
l2=$(lines)
t_refs=$(XDG_CACHE_HOME="$work/xdg-refs" timed refs-cold "$heft" --store "$url" --json refs "$root")
b_refs=$(sent_since $((l2 + 1)))
l2=$(lines)
t_copy=$(timed nix-copy "${nixc[@]}" copy --no-check-sigs --from "$url" --to "$work/chroot" "$root")
b_copy=$(sent_since $((l2 + 1)))

echo "closure: $root, $paths paths, NAR total $nar_total bytes, compressed (xz) $total_xz bytes"
echo "| run | wall (s) | peak RSS | bytes downloaded | of the compressed closure |"
echo "| --- | ---: | ---: | ---: | ---: |"
for r in "advise-cold:$t_cold:$b_cold" "advise-warm:$t_warm:$b_warm" "advise-min-saving-0:$t_all:$b_all" \
  "refs-cold:$t_refs:$b_refs" "nix-copy:$t_copy:$b_copy"; do
  IFS=: read -r name t b <<< "$r"
  read -r _ wall rss <<< "$t"
  echo "| $name | $wall | $((rss / 1024)) MiB | $b | $(echo "scale=2; 100 * $b / $total_xz" | bc)% |"
done
# Memory with the closure in the local store (no download, every file
# read where it lies): peak RSS must not follow the largest file.
for cmd in refs advise; do
  read -r _ wall rss <<< "$(timed "local-$cmd" "$heft" --json "$cmd" "$root")"
  echo "| local $cmd | $wall | $((rss / 1024)) MiB | - | - |"
done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("advise: %d action(s), %d referrer(s) not examined, min_saving %d" % (len(d["actions"]), len(d["not_examined"]), d["min_saving"]))' "$work/advise-cold.out"
cmp -s "$work/advise-cold.out" "$work/advise-warm.out" && echo "warm rerun: same output"
