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
(cd "$repo" && cargo build --release --quiet)
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
port=$((20000 + RANDOM % 20000))
# Python's stock `http.server` has a listen backlog of 5: 16 parallel
# connects overflow it and wait for a SYN retransmission (1 s). This one
# has a deep backlog and keep-alive (HTTP/1.1), as real caches do.
cat > "$work/server.py" <<'PY'
import functools, http.server, sys
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True
class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
Server(("127.0.0.1", int(sys.argv[1])), functools.partial(Handler, directory=sys.argv[2])).serve_forever()
PY
python3 "$work/server.py" "$port" "$cache" 2> "$work/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/nix-cache-info" > /dev/null 2>&1 && break
  sleep 0.1
done
url="http://127.0.0.1:$port"

# Bytes the server sent since line $1 of its log: the files of 200 answers.
sent_since() {
  tail -n +"$1" "$work/server.log" | sed -n 's/.*"GET \([^ ]*\) HTTP[^"]*" 200 .*/\1/p' |
    while read -r p; do stat -c %s "$cache$p"; done | awk '{s += $1} END {print s + 0}'
}
lines() { wc -l < "$work/server.log"; }
total_xz="$("${nixc[@]}" path-info -r --store "file://$cache" "$root" |
  while read -r p; do b="$(basename "$p" | cut -c1-32)"; sed -n 's/^FileSize: //p' "$cache/$b.narinfo"; done |
  awk '{s += $1} END {print s + 0}')"
paths="$("${nixc[@]}" path-info -r --store "file://$cache" "$root" | wc -l)"
nar_total="$("${nixc[@]}" path-info -S --store "file://$cache" "$root" | awk '{print $2}')"

timed() { # label, command...
  local start end
  start=$(date +%s.%N)
  "${@:2}" > "$work/$1.out"
  end=$(date +%s.%N)
  echo "$1 $(echo "$end - $start" | bc)"
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
t_copy=$(timed nix-copy "${nixc[@]}" copy --no-check-sigs --from "$url" --to "$work/chroot" "$root")
b_copy=$(sent_since $((l2 + 1)))

echo "closure: $root, $paths paths, NAR total $nar_total bytes, compressed (xz) $total_xz bytes"
echo "| run | wall (s) | bytes downloaded | of the compressed closure |"
echo "| --- | ---: | ---: | ---: |"
for r in "advise-cold:$t_cold:$b_cold" "advise-warm:$t_warm:$b_warm" "advise-min-saving-0:$t_all:$b_all" "nix-copy:$t_copy:$b_copy"; do
  IFS=: read -r name t b <<< "$r"
  echo "| $name | ${t#* } | $b | $(echo "scale=1; 100 * $b / $total_xz" | bc)% |"
done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("advise: %d action(s), %d referrer(s) not examined, min_saving %d" % (len(d["actions"]), len(d["not_examined"]), d["min_saving"]))' "$work/advise-cold.out"
cmp -s "$work/advise-cold.out" "$work/advise-warm.out" && echo "warm rerun: same output"
