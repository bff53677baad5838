#!/usr/bin/env bash
# Reading a 1.3 GB ELF library from a NAR (issue 32): wall, peak RSS and the
# temporary disk used, this build against another (an earlier commit), in
# turn (A, B, A, B, ...), each run with a fresh local cache (kept reads
# would skip the work).
#   the library   bench/big-library.nix (1.3 GB of real bytes in a loaded
#                 data section), exported with `nix copy` to a file://
#                 cache (zstd)
#   the command   nix-heft --store file://CACHE --json refs --evidence ROOT
#   peak RSS      GNU time's maximum resident set size
#   temporary     TMPDIR is a tmpfs mounted for the run, its used bytes
#                 (statfs, as df shows them) sampled every 20 ms: a deleted
#                 or O_TMPFILE file (tempfile's) holds its pages there until
#                 closed, and a tmpfs counts only written pages, so a
#                 sparse file counts what it holds. The peak above the
#                 mount's idle use is what the run put on /tmp.
# usage: bench/elf-stream.sh OTHER_NIX_HEFT [RUNS]   (default 3). Needs root
# (the tmpfs; nix-build with --option sandbox false).
# This build is target/release/nix-heft unless NIX_HEFT names a binary.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
other="${1:?usage: bench/elf-stream.sh OTHER_NIX_HEFT [RUNS]}"
runs="${2:-3}"
if [ -z "${NIX_HEFT:-}" ]; then
  (cd "$repo" && cargo build --release --quiet)
  NIX_HEFT="${CARGO_TARGET_DIR:-$repo/target}/release/nix-heft"
fi
work="$(mktemp -d)"
tmp="$work/tmp"
mkdir -p "$tmp"
mount -t tmpfs -o size=4g nix-heft-bench-tmp "$tmp"
trap 'umount "$tmp"; rm -rf "$work"' EXIT
root="$(nix-build "$here/big-library.nix" --option sandbox false --option substituters '' \
  --out-link "$work/root")"
nix --extra-experimental-features nix-command copy --to "file://$work/cache?compression=zstd" "$root"
file="$root/lib/libbig.so.1"
echo "library: $(stat -c %s "$file") bytes; NAR cache: $(du -sb "$work/cache" | cut -f1) bytes"

used() { df --output=used -B1 "$tmp" | tail -1 | tr -d ' '; }
# measure LABEL BIN: one run; appends "wall rss_kib tmp_bytes" to $work/LABEL
measure() {
  local label="$1" bin="$2" xdg
  xdg="$(mktemp -d -p "$work")"
  local base peak u
  base="$(used)"
  peak="$base"
  TMPDIR="$tmp" XDG_CACHE_HOME="$xdg" /usr/bin/time -f '%e %M' -o "$work/time" \
    "$bin" --store "file://$work/cache" --no-require-sigs --json refs --evidence "$root" \
    >"$work/out-$label.json" 2>"$work/err-$label" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    u="$(used)"
    [ "$u" -gt "$peak" ] && peak="$u"
    sleep 0.02
  done
  wait "$pid"
  echo "$(cat "$work/time") $((peak - base))" >>"$work/$label"
  rm -rf "$xdg"
}
for _ in $(seq "$runs"); do
  measure A "$NIX_HEFT"
  measure B "$other"
done
if cmp -s "$work/out-A.json" "$work/out-B.json"; then
  echo "outputs: byte-identical"
else
  echo "outputs: DIFFER"
  diff <(python3 -m json.tool "$work/out-A.json") <(python3 -m json.tool "$work/out-B.json") | head -20 || true
fi
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
range() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo " – " hi}'; }
echo "| run | wall (median, range) | peak RSS (median) | temporary disk (peak, median) |"
echo "| --- | ---: | ---: | ---: |"
for label in A B; do
  name="$([ "$label" = A ] && echo "this build" || echo "$other")"
  w="$(cut -d' ' -f1 "$work/$label" | median)"
  wr="$(cut -d' ' -f1 "$work/$label" | range)"
  r="$(cut -d' ' -f2 "$work/$label" | median)"
  t="$(cut -d' ' -f3 "$work/$label" | median)"
  echo "| $name | $w s ($wr) | $((r / 1024)) MiB | $((t / 1048576)) MiB |"
done
