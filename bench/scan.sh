#!/usr/bin/env bash
# Scan benchmark (issue: evidence). Builds bench/scan.nix (a multi-GB store
# path of real Debian and Rust-toolchain binaries) once, warms the page cache,
# then times side by side with farm-bench, in one run:
#   1. nix-heft refs ROOT            vs  cat of every file to /dev/null (I/O ceiling)
#   2. nix-heft refs ROOT            vs  rg -a -F -c -f <the hashes> ROOT
#   3. nix-heft refs ROOT (all edges) vs nix why-depends --precise --all ROOT DEP (one pair)
# usage: bench/scan.sh [RUNS]   (default 5). Prints farm-bench's tables.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-5}"
command -v rg >/dev/null || apt-get install -y ripgrep >/dev/null
(cd "$repo" && cargo build --release --quiet)
heft="$repo/target/release/nix-heft"
root="$(nix-build "$here/scan.nix" --option sandbox false --option substituters '' \
  --out-link "${TMPDIR:-/tmp}/nix-heft-bench-scan")"
dep="$(nix-store -q --references "$root" | grep bench-dep-lib)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nix-store -q --references "$root" | sed 's|.*/||; s|-.*||' > "$work/hashes"
bytes=$(du -sb --apparent-size "$root" | cut -f1)
files=$(find "$root" -type f | wc -l)
echo "closure root: $root"
echo "scanned: $bytes bytes in $files files; hashes looked for: $(wc -l < "$work/hashes")"
# Warm the page cache so every tool reads from memory.
find "$root" -type f -print0 | xargs -0 cat > /dev/null
fb=(farm-bench -n "$runs" --timeout 1800)
echo; echo "== 1. nix-heft refs vs cat (I/O ceiling)"
"${fb[@]}" --vs "sh -c 'find $root -type f -print0 | xargs -0 cat > /dev/null'" \
  -- sh -c "exec $heft --json refs $root > /dev/null"
echo; echo "== 2. nix-heft refs vs ripgrep"
"${fb[@]}" --vs "sh -c 'rg -a -F -c -f $work/hashes $root > /dev/null; true'" \
  -- sh -c "exec $heft --json refs $root > /dev/null"
echo; echo "== 3. nix-heft refs (every edge) vs nix why-depends --precise --all (one pair)"
"${fb[@]}" --vs "sh -c 'nix --extra-experimental-features nix-command why-depends --precise --all $root $dep > /dev/null'" \
  -- sh -c "exec $heft --json refs $root > /dev/null"
