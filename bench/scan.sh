#!/usr/bin/env bash
# Scan benchmark (evidence issue). Builds bench/scan.nix (a 4 GiB store path
# of real Debian binaries) once, warms the page cache, then times side by
# side with hyperfine, in one run:
#   1. nix-heft refs ROOT  vs  cat of every file to /dev/null (the I/O ceiling)
#   2. nix-heft refs ROOT  vs  rg -a -F -c -f <the hashes> ROOT
#   3. nix-heft refs ROOT (every edge)  vs  nix why-depends --precise --all ROOT DEP (one pair)
# usage: bench/scan.sh [RUNS]   (default 5). Needs root (nix-build into /nix/store).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-5}"
for tool in rg:ripgrep hyperfine:hyperfine; do
  command -v "${tool%%:*}" >/dev/null || apt-get install -y "${tool#*:}" >/dev/null
done
(cd "$repo" && cargo build --release --quiet)
heft="$repo/target/release/nix-heft"
root="$(nix-build "$here/scan.nix" --option sandbox false --option substituters '' \
  --out-link "${TMPDIR:-/tmp}/nix-heft-bench-scan")"
dep="$(nix-store -q --references "$root" | grep bench-dep-lib)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nix-store -q --references "$root" | sed 's|.*/||; s|-.*||' > "$work/hashes"
echo "closure root: $root"
echo "scanned: $(du -sb --apparent-size "$root" | cut -f1) bytes in $(find "$root" -type f | wc -l) files"
# Warm the page cache so every tool reads from memory.
find "$root" -type f -print0 | xargs -0 cat > /dev/null
hf=(hyperfine --warmup 1 --runs "$runs" -N --style basic)
"${hf[@]}" -n nix-heft-refs "$heft --json refs $root" \
  -n cat "sh -c 'find $root -type f -print0 | xargs -0 cat > /dev/null'" \
  -n ripgrep "sh -c 'rg -a -F -c -f $work/hashes $root > /dev/null; true'" \
  -n nix-why-depends-one-pair "nix --extra-experimental-features nix-command why-depends --precise --all $root $dep"
