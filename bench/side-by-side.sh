#!/usr/bin/env bash
# size, refs and advise of this build against another build (an earlier
# commit), side by side in one run with farm-bench (A = this build, B = the
# other, in turn; the ratio A/B is taken pair by pair):
#   size    the 100,000-path synthetic store (bench/gen_store.py): the
#           51,707-path one-root closure and all 4,000 roots
#   refs    bench/scan.nix in the local store (4 GiB of Debian binaries)
#   advise  the bundled example's xz cache, and bench/scan.nix locally
# usage: bench/side-by-side.sh OTHER_NIX_HEFT [RUNS]   (default 5). Needs root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
other="${1:?usage: bench/side-by-side.sh OTHER_NIX_HEFT [RUNS]}"
runs="${2:-5}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
command -v farm-bench >/dev/null || { echo "farm-bench is needed" >&2; exit 1; }
(cd "$repo" && cargo build --release --quiet)
heft="${CARGO_TARGET_DIR:-$repo/target}/release/nix-heft"
store="$data/store-100000-s1"
[ -f "$store/roots.txt" ] || python3 "$here/gen_store.py" "$store" --paths 100000 --seed 1 >/dev/null
scan="$(nix-build "$here/scan.nix" --option sandbox false --option substituters '' \
  --out-link "${TMPDIR:-/tmp}/nix-heft-bench-scan")"
example="$repo/examples/rocm-mini/cache"
# The example cache is signed; its key trusted as a user's nix.conf would.
export NIX_CONFIG="trusted-public-keys = $(cat "$repo/examples/rocm-mini/cache.pub")"
example_root="$(cat "$repo/examples/rocm-mini/ROOT")"
pair() { # LABEL TIMEOUT ARGS...: this build against the other on the same arguments
  local label="$1" timeout="$2"; shift 2
  echo "## $label"
  # A fresh local cache each run: a cache's kept reads would skip the work.
  local fresh='export XDG_CACHE_HOME=$(mktemp -d);'
  farm-bench -n "$runs" --timeout "$timeout" \
    --vs "sh -c '$fresh exec $other $* >/dev/null'" -- sh -c "$fresh exec $heft $* >/dev/null"
}
pair "size, one root (51,707 paths)" 300 --store "$store" size --json "$(cat "$store/one-root.txt")"
pair "size, 4,000 roots (100,000 paths)" 300 --store "$store" size --json '$(cat '"$store/roots.txt"')'
pair "refs, 4 GiB local path" 600 --json refs "$scan"
pair "advise, example xz cache" 120 --store "$example" --json advise "$example_root"
pair "advise, 4 GiB local path" 600 --json advise "$scan"
