#!/usr/bin/env bash
# What nix-heft's setup hook costs a build with two outputs and no output
# check, before and after issue 39 ("each output's call reads every output
# today (two outputs, no checks: 0.6 s where one output costs nothing).
# Read each output once per build."), side by side in one run.
#
# bench/refused-hook.nix builds, with a fresh salt every time so that Nix
# really builds:
#   one  one output of BYTES of real files (an even sample of /usr/lib:
#        ELF libraries and executables, Python, jars), no check, this
#        tree's hook and binary: the reference (one output and no check,
#        nothing to explain: the hook returns at once);
#   old  two outputs, out and lib, about BYTES each (a sample twice as
#        large dealt to the two by bytes: out gets exactly one's files), no
#        check, the hook of OLD_REV (`git show OLD_REV:nix/setup-hook.sh`:
#        before issue 39 it registered in fixupOutputHooks and ran
#        `nix-heft refused --in-build --output NAME` once per output) with
#        OLD_NIX_HEFT, a build of OLD_REV;
#   new  the same two outputs with this tree's hook (postFixupHooks: one
#        `nix-heft refused --in-build` for the build) and binary.
# Each RUNS times after one warm-up, in turn (one old new one old new ...),
# by `nix-build --option sandbox false --option substituters ''` timed
# whole by GNU time; the outputs are deleted after each build. The builder
# (no stdenv) runs every output's fixupOutputHooks with $prefix set to it,
# then postFixupHooks once, as stdenv's fixup phase does, and writes to
# the log how long its copy and its fixup hooks took (the hook's own time:
# no other hook is registered) and the bytes the hooks read (rchar of
# /proc/PID/io, which counts the children the builder reaped: nix-heft).
#
# Checked: in old and new the hooks read at least the outputs' bytes (else
# the hook did not run, and the run measured nothing) and printed nothing
# (no check, no cycle: nothing to say).
#
# Then the hook's command alone, without the copy's noise: on one kept
# two-output build (no hook), page cache warm, in the build's environment
# (the derivation's variables, each output's path, NIX_STORE,
# NIX_BUILD_TOP), ALONE_RUNS times in turn (new old new old ...) after one
# warm-up, each timed by GNU time: new = this binary's `nix-heft --color
# never refused --in-build` once, as the hook runs it; old = OLD_NIX_HEFT's
# `nix-heft refused --in-build --output NAME` for out, then for lib, as
# the old hook ran it. Both must print nothing and exit 0.
#
# usage: bench/refused-hook-outputs.sh OLD_NIX_HEFT OLD_REV [RUNS]   (default 5)
#   OLD_REV: a commit of this repository before issue 39 (a38a32c)
#   env: HEFT=BIN (this tree's binary; else cargo build --release here),
#        BYTES (each output's size, default 250000000; smaller for a smoke test),
#        ALONE_RUNS (default 10), ALONE_ONLY=1 (the command alone, no timed builds)
# Needs root (the sandbox off, builds into /nix/store) and ~1 GB free in
# /nix/store. Prints markdown tables for BENCHMARKS.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
usage="usage: bench/refused-hook-outputs.sh OLD_NIX_HEFT OLD_REV [RUNS]"
old_heft="${1:?$usage}"
old_rev="${2:?$usage}"
runs="${3:-5}"
bytes="${BYTES:-250000000}"
alone_runs="${ALONE_RUNS:-10}"
alone_only="${ALONE_ONLY:-0}"
for tool in nix-build nix-store /usr/bin/time python3 git; do
  command -v "$tool" >/dev/null || { echo "refused-hook-outputs.sh: $tool is missing" >&2; exit 1; }
done
heft="${HEFT:-}"
if [ -z "$heft" ]; then
  (cd "$repo" && cargo build --release --quiet --bin nix-heft)
  heft="$repo/target/release/nix-heft"
fi
heft="$(realpath "$heft")"
old_heft="$(realpath "$old_heft")"
# The builder finds `nix-heft` on PATH: each binary's directory must hold
# it under that name.
for b in "$heft" "$old_heft"; do
  if [ "$(basename "$b")" != nix-heft ] || [ ! -x "$b" ]; then
    echo "refused-hook-outputs.sh: $b is not an executable named nix-heft" >&2
    exit 1
  fi
done
nixfile="$here/refused-hook.nix"
work="$(mktemp -d)"
# The builders (nixbld users) read the lists of files and the old hook.
chmod 755 "$work"
kept=()
cleanup() {
  if [ "${#kept[@]}" -gt 0 ]; then nix-store --delete "${kept[@]}" >/dev/null 2>&1; fi
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$repo" show "$old_rev:nix/setup-hook.sh" > "$work/old-setup-hook.sh"
if ! grep -q '^fixupOutputHooks+=' "$work/old-setup-hook.sh"; then
  echo "refused-hook-outputs.sh: $old_rev's hook does not register in fixupOutputHooks: not the hook before issue 39" >&2
  exit 1
fi
two='[ "out" "lib" ]'

build_args() { # variant salt
  local a=(--option sandbox false --option substituters '' --no-out-link
    --argstr salt "$2")
  case "$1" in
    one) a+=(--arg hooked true --argstr heft "$(dirname "$heft")" --argstr fileList "$work/files-one") ;;
    old) a+=(--arg hooked true --argstr heft "$(dirname "$old_heft")" --arg hook "$work/old-setup-hook.sh"
      --argstr fileList "$work/files-two" --arg outputNames "$two") ;;
    new) a+=(--arg hooked true --argstr heft "$(dirname "$heft")"
      --argstr fileList "$work/files-two" --arg outputNames "$two") ;;
    keep) a+=(--argstr fileList "$work/files-two" --arg outputNames "$two") ;;
  esac
  printf '%s\n' "${a[@]}"
}
# One build: "variant wall user sys peakKiB copy hook hookRead postbuild
# narsize fileBytes", the outputs deleted afterwards.
build() { # variant label
  local v="$1" salt t1 end log="$work/log-$1"
  salt="$v-$2-$$-$(date +%s%N)"
  mapfile -t args < <(build_args "$v" "$salt")
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" nix-build "$nixfile" "${args[@]}" \
    > "$work/out" 2> "$log"; then
    echo "FAILED: build $v" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  # nix-build prints the first output; the build made every one.
  mapfile -t outs < <(nix-store -q --outputs "$(nix-store -q --deriver "$(tail -1 "$work/out")")")
  end="$(sed -n 's/^refused-hook: builder end //p' "$log")"
  local copy hook rd files size=0 o
  copy="$(sed -n 's/^refused-hook: copy \([0-9.]*\) s/\1/p' "$log")"
  hook="$(sed -n 's/^refused-hook: fixup hooks \([0-9.]*\) s wall.*/\1/p' "$log")"
  rd="$(sed -n 's/^refused-hook: fixup hooks read \([0-9]*\) bytes/\1/p' "$log")"
  files="$(sed -n 's/^refused-hook: copied [0-9]* files, \([0-9]*\) bytes/\1/p' "$log")"
  for o in "${outs[@]}"; do size=$((size + $(nix-store -q --size "$o"))); done
  nix-store --delete "${outs[@]}" >/dev/null 2>&1
  if [ -z "$hook" ] || [ -z "$rd" ] || [ -z "$files" ]; then
    echo "build $v: the log lacks the builder's figures:" >&2
    cat "$log" >&2
    exit 1
  fi
  # No check and no cycle: the hook has nothing to say. (Nix's own lines
  # left out, and its warning while other builds hold the database.)
  if grep -v '^refused-hook:\|^building\|^these\|^this\|^ *\/nix\/store' "$log" |
    grep -v "^warning: error: SQLite database '.*' is busy$" | grep -q .; then
    echo "build $v: the hook printed something:" >&2
    cat "$log" >&2
    exit 1
  fi
  if [ "$v" != one ] && [ "$rd" -lt "$files" ]; then
    echo "build $v: the hooks read $rd bytes, less than the outputs' $files: the hook did not run" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "$v $(cat "$work/time") $copy $hook $rd $(python3 -c "print(f'{$t1 - $end:.2f}')") $size $files"
}

# The files, chosen once (the walk of /usr/lib is no part of a build): two
# outputs' worth; one output gets the lines the two-output build gives out.
select="$(nix-instantiate --eval --read-write-mode -E "(import $nixfile {}).select" | tr -d '"')"
python3 "$select" list /usr/lib "$((bytes * 2))" > "$work/files-two"
python3 "$select" deal "$work/files-two" 2 0 > "$work/files-one"
echo "nix-heft: $heft ($("$heft" --version)); old: $old_heft ($("$old_heft" --version)), hook of $old_rev" >&2
echo "start $(date -u '+%F %T') UTC; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ "$alone_only" != 1 ]; then
# The warm-up: builds the small inputs once and fills the page cache with
# the files copied.
for v in one old new; do build "$v" warmup > /dev/null; done
for i in $(seq "$runs"); do
  for v in one old new; do build "$v" "$i"; done
done | tee "$work/builds.txt" >&2
echo "end of the builds $(date -u '+%F %T') UTC; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$work/builds.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r[0], []).append(r)
med = statistics.median
def col(v, i):
    return [float(r[i]) for r in by[v]]
label = {
    "one": "one output, no check, this hook",
    "old": "two outputs, no check, the hook before issue 39 (once per output)",
    "new": "two outputs, no check, this hook (once per build)",
}
print(f"one output: {int(col('one', 10)[0]):,} bytes of files ({int(col('one', 9)[0]):,} bytes of NAR); "
      f"two outputs: {int(col('new', 10)[0]):,} bytes of files ({int(col('new', 9)[0]):,} bytes of NAR); "
      f"{len(by['old'])} builds of each, in turn")
print()
print("| build | wall (median, min – max) | builder's copy | fixup hooks: the hook (median, min – max) | bytes the hook read / the outputs' bytes | Nix after the builder |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for v in ("one", "old", "new"):
    w, h = col(v, 1), col(v, 6)
    ratio = [float(r[7]) / float(r[10]) for r in by[v]]
    print(f"| {v}: {label[v]} | **{med(w):.2f} s** ({min(w):.2f} – {max(w):.2f}) | {med(col(v, 5)):.2f} s "
          f"| **{med(h):.2f} s** ({min(h):.2f} – {max(h):.2f}) | {med(ratio):.2f} | {med(col(v, 8)):.2f} s |")
print()
ho, hn = col("old", 6), col("new", 6)
pairs = [o / n for o, n in zip(ho, hn) if n > 0]
print(f"- the hook's own time, old against new: medians {med(ho):.2f} s / {med(hn):.2f} s = "
      f"**{med(ho) / med(hn):.2f}x**; pair by pair median {med(pairs):.2f}x (range {min(pairs):.2f}x – {max(pairs):.2f}x)")
print(f"- bytes read by the hook: old {med([float(r[7]) for r in by['old']]) / 1e6:,.0f} MB, "
      f"new {med([float(r[7]) for r in by['new']]) / 1e6:,.0f} MB, for {med(col('new', 10)) / 1e6:,.0f} MB of files in the two outputs")
print(f"- the hook's share of the two-output build (new): {100 * med(hn) / med(col('new', 1)):.1f}% of its median wall; "
      f"before (old): {100 * med(ho) / med(col('old', 1)):.1f}%")
print(f"- one output: {med(col('one', 6)):.3f} s in the hook, {med([float(r[7]) for r in by['one']]):,.0f} bytes read")
PY
fi

# The hook's command alone, on one kept two-output build.
mapfile -t args < <(build_args keep "keep-$$-$(date +%s%N)")
if ! nix-build "$nixfile" "${args[@]}" > "$work/out" 2> "$work/log-keep"; then
  echo "FAILED: the kept build" >&2
  tail -20 "$work/log-keep" >&2
  exit 1
fi
drv="$(nix-store -q --deriver "$(tail -1 "$work/out")")"
mapfile -t kept < <(nix-store -q --outputs "$drv")
mkdir -p "$work/build-top"
# The build's environment, NUL-separated (the builder's script, a
# variable, spans lines).
nix --extra-experimental-features nix-command show-derivation "$drv" |
  python3 -c '
import json, sys
d = next(iter(json.load(sys.stdin).values()))
env = dict(d["env"])
for name, o in d["outputs"].items():
    env[name] = o["path"]
env.update(NIX_STORE="/nix/store", NIX_BUILD_TOP=sys.argv[1], TMPDIR=sys.argv[1],
           HOME="/homeless-shelter", PATH="/usr/bin:/bin")
sys.stdout.write("".join(f"{k}={v}\0" for k, v in env.items()))
' "$work/build-top" > "$work/env"
cat > "$work/new.sh" <<SH
#!/usr/bin/env bash
mapfile -d '' -t e < "$work/env"
exec env -i "\${e[@]}" "$heft" --color never refused --in-build
SH
cat > "$work/old.sh" <<SH
#!/usr/bin/env bash
mapfile -d '' -t e < "$work/env"
for o in out lib; do env -i "\${e[@]}" "$old_heft" refused --in-build --output "\$o" || exit; done
SH
chmod +x "$work/new.sh" "$work/old.sh"
echo "the command alone, on $(du -sb "${kept[@]}" | awk '{s += $1} END {print s}') bytes in two outputs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
alone() { # variant
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$work/$1.sh" > "$work/alone.out" 2>&1; then
    echo "FAILED: $1 alone" >&2
    cat "$work/alone.out" >&2
    exit 1
  fi
  if [ -s "$work/alone.out" ]; then
    echo "$1 alone printed something:" >&2
    cat "$work/alone.out" >&2
    exit 1
  fi
  echo "$1 $(cat "$work/time")"
}
for i in $(seq 0 "$alone_runs"); do
  for v in new old; do
    if [ "$i" = 0 ]; then alone "$v" > /dev/null; else alone "$v"; fi
  done
done | tee "$work/alone.txt" >&2
echo "end $(date -u '+%F %T') UTC; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$work/alone.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
print()
print(f"| the hook's command alone ({len(col('new', 1))} runs each, in turn) | wall (median, min – max) | user | sys | peak RSS |")
print("| --- | ---: | ---: | ---: | ---: |")
label = {
    "old": "before issue 39: `nix-heft refused --in-build --output out`, then `--output lib`",
    "new": "this tree: `nix-heft --color never refused --in-build`, once",
}
for v in ("old", "new"):
    w = col(v, 1)
    print(f"| {label[v]} | **{med(w):.2f} s** ({min(w):.2f} – {max(w):.2f}) | {med(col(v, 2)):.2f} s "
          f"| {med(col(v, 3)):.2f} s | {med(col(v, 4)) / 1024:.0f} MiB |")
print()
o, n = col("old", 1), col("new", 1)
pairs = [a / b for a, b in zip(o, n) if b > 0]
print(f"- old against new: medians **{med(o) / med(n):.2f}x**; pair by pair median {med(pairs):.2f}x "
      f"(range {min(pairs):.2f}x – {max(pairs):.2f}x)")
PY
