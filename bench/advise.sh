#!/usr/bin/env bash
# Advise benchmark (one-read-per-path issue): `advise` from binary caches,
# a build of nix-heft against another (an earlier commit), side by side in
# one run, and the number of NAR opens of each (strace -f -e trace=openat).
#   1. the bundled example's xz cache (17 paths)
#   2. the scan benchmark's 4 GiB store path (bench/scan.nix) and its
#      dependencies, exported with `nix copy --to file://...?compression=zstd`
# usage: bench/advise.sh OTHER_NIX_HEFT [RUNS]   (default 5). Needs root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
other="${1:?usage: bench/advise.sh OTHER_NIX_HEFT [RUNS]}"
runs="${2:-5}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
for tool in hyperfine strace; do
  command -v "$tool" >/dev/null || apt-get install -y "$tool" >/dev/null
done
(cd "$repo" && cargo build --release --quiet)
heft="$repo/target/release/nix-heft"
root="$(nix-build "$here/scan.nix" --option sandbox false --option substituters '' \
  --out-link "${TMPDIR:-/tmp}/nix-heft-bench-scan")"
# Signed, as nix-heft refuses unsigned narinfos; the example's and this
# cache's keys are trusted through NIX_CONFIG (which an older build ignores).
cache="$data/scan-cache-zstd-signed"
key="$data/bench-key"
mkdir -p "$data"
[ -f "$key.sec" ] || nix-store --generate-binary-cache-key nix-heft-bench-1 "$key.sec" "$key.pub"
if [ ! -f "$cache/nix-cache-info" ]; then
  nix --extra-experimental-features nix-command copy \
    --to "file://$cache?compression=zstd&secret-key=$key.sec" "$root"
fi
export NIX_CONFIG="trusted-public-keys = $(cat "$key.pub") $(cat "$repo/examples/rocm-mini/cache.pub")"
echo "cache: $(du -sb "$cache" | cut -f1) bytes of zstd NARs for $(nix-store -qR "$root" | wc -l) paths"
example="$repo/examples/rocm-mini/cache"
example_root="$(cat "$repo/examples/rocm-mini/ROOT")"
opens() { # BIN STORE ROOT: NAR opens, distinct NARs
  local log; log="$(mktemp)"
  strace -f -e trace=openat -o "$log" "$1" --store "$2" --json advise "$3" >/dev/null
  grep -o '"[^"]*/nar/[^"]*"' "$log" | sort | uniq -c | awk '{n+=$1; d++} END {print n" opens of "d" NARs"}'
  rm -f "$log"
}
file_opens() { # BIN ROOT: opens of regular files under the store path, distinct files
  local log; log="$(mktemp)"
  strace -f -e trace=openat -o "$log" "$1" --json advise "$2" >/dev/null
  grep -v O_DIRECTORY "$log" | grep -v '= -1' | grep -o "\"$2/[^\"]*\"" | sort | uniq -c \
    | awk '{n+=$1; d++; if ($1>m) m=$1} END {print n" opens of "d" files (most for one file: "m")"}'
  rm -f "$log"
}
echo "## scan, local store"
echo "this build:  $(file_opens "$heft" "$root")"
echo "other build: $(file_opens "$other" "$root")"
hyperfine -N -r "$runs" "$heft --json advise $root" "$other --json advise $root"
for case in "example $example $example_root" "scan $cache $root"; do
  set -- $case
  echo "## $1"
  echo "this build:  $(opens "$heft" "$2" "$3")"
  echo "other build: $(opens "$other" "$2" "$3")"
  hyperfine -N -r "$runs" "$heft --store $2 --json advise $3" "$other --store $2 --json advise $3"
done
