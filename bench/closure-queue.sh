#!/usr/bin/env bash
# Loading a closure over a slow HTTP cache (issue 25): `size` of the root of
# a synthetic 10,000-narinfo cache (bench/narinfo_cache.py: real narinfo
# format, 20 levels) served on 127.0.0.1 by examples/cache_server.rs (the
# tests' CDN-like server: hyper, TLS with ALPN, every answer after
# DELAY_MS, default 50), cold (an empty $XDG_CACHE_HOME each run), in turn:
#   h1   http://, HTTP/1.1: one request per keep-alive connection,
#        --http-connections 128 (the default was 128 until issue 38; it is
#        Nix's 25 now, and these runs keep 128)
#   h2   https://, HTTP/2 offered as a CDN offers it (100 streams per
#        connection), --http-connections 128
#   h2+  https://, HTTP/2, a server allowing 256 streams, --http-connections 256
# then `nix path-info -r` over the same https:// server (curl, HTTP/2) once,
# unless NO_NIX=1 (it takes minutes: Nix asks one narinfo at a time).
# usage: bench/closure-queue.sh [RUNS] [DELAY_MS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-3}"
delay="${2:-50}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
(cd "$repo" && cargo build --release --quiet --bin nix-heft --example cache_server)
heft="$repo/target/release/nix-heft"
server_bin="$repo/target/release/examples/cache_server"
cache="$data/narinfo-cache-10000"
[ -f "$cache/root.txt" ] || python3 "$here/narinfo_cache.py" "$cache" >/dev/null
root="$(cat "$cache/root.txt")"
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
# A CA and a certificate for 127.0.0.1, trusted as Nix trusts one.
(cd "$work" && {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout srv.key -out srv.csr -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext
  openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext
} 2>/dev/null)
export NIX_SSL_CERT_FILE="$work/ca.pem"
# The synthetic cache is unsigned (narinfo_cache.py writes no Sig lines):
# accepted deliberately, as nix.conf's require-sigs = false would.
export NIX_CONFIG="require-sigs = false"
start_server() { # name, extra options...; the port in $work/NAME.port
  "$server_bin" "$cache" --latency-ms "$delay" "${@:2}" > "$work/$1.port" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$work/$1.port" ] && break; sleep 0.1; done
}
start_server h1
start_server h2 --tls "$work/srv.pem" "$work/srv.key" --max-streams 100
start_server h2p --tls "$work/srv.pem" "$work/srv.key" --max-streams 256
h1="http://127.0.0.1:$(head -1 "$work/h1.port")"
h2="https://127.0.0.1:$(head -1 "$work/h2.port")"
h2p="https://127.0.0.1:$(head -1 "$work/h2p.port")"
paths="$(XDG_CACHE_HOME="$(mktemp -d -p "$work")" "$heft" --store "$h1" size --json "$root" \
  | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["paths"]))')"
echo "closure of the root: $paths paths; every answer after ${delay} ms"
echo "bound at N in flight: max(depth x delay, $paths x delay / N)"
# One cold run: wall seconds and peak RSS (KiB) from GNU time.
# A failed run stops the benchmark: its time would mean nothing.
once() {
  if ! XDG_CACHE_HOME="$(mktemp -d -p "$work")" /usr/bin/time -f "%e %M" "$@" >/dev/null 2>"$work/time.out"; then
    echo "FAILED: $*" >&2
    cat "$work/time.out" >&2
    exit 1
  fi
  tail -1 "$work/time.out"
}
for i in $(seq "$runs"); do
  echo "h1 $(once "$heft" --http-connections 128 --store "$h1" size --json "$root")"
  echo "h2 $(once "$heft" --http-connections 128 --store "$h2" size --json "$root")"
  echo "h2+ $(once "$heft" --http-connections 256 --store "$h2p" size --json "$root")"
done | tee "$work/runs.txt"
python3 - "$work/runs.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for who in ("h1", "h2", "h2+"):
    w = [float(r[1]) for r in rows if r[0] == who]
    m = [int(r[2]) // 1024 for r in rows if r[0] == who]
    print(f"{who}: wall median {statistics.median(w):.2f} s (min {min(w):.2f}, max {max(w):.2f}), peak {max(m)} MiB")
PY
if [ "${NO_NIX:-0}" != 1 ]; then
  echo "## nix path-info -r over $h2 (one run)"
  XDG_CACHE_HOME="$(mktemp -d -p "$work")" /usr/bin/time -f "%e s wall, %M KiB peak" \
    nix --extra-experimental-features nix-command path-info -r --store "$h2" "$root" | wc -l
fi
