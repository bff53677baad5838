#!/usr/bin/env bash
# What nix-heft's setup hook (nix/setup-hook.sh) adds to the build of a
# 1 GB output (issue 33: "the hook adds under 5% to the build time of a
# 1 GB output").
#
# bench/refused-hook.nix builds one output of real bytes (an even sample
# of /usr/lib and /usr/share: ELF libraries and executables, Python, jars,
# locales, docs; ~1 GB in ~37,000 files, one docs file naming an input)
# three ways, with a fresh salt for every build so that Nix really builds:
#   a  no output check;
#   b  disallowedReferences = [ an input the output does not refer to ]
#      (what Nix's own check costs);
#   c  b with the hook sourced by the builder and run in postFixupHooks
#      (nix-heft refused --in-build --output out, the binary on PATH).
# Each is built RUNS times after one warm-up, in turn (a b c a b c ...),
# by `nix-build --option sandbox false --option substituters ''` timed
# whole by GNU time; the output is deleted after each build (nix-store
# --delete) so the disk holds one at a time. The builder writes to the log
# how long its copy and its fixup hooks took (in c, the hook's own
# time) and when it ended (the rest until nix-build exits is Nix's
# registration: reference scan, NAR hash, metadata).
#
# Checked: the hook finds the reference when there is one to refuse (one
# build with disallowedReferences = [ dep ]: Nix fails it, and the hook's
# text, before Nix's error, names share/doc/refused-hook/README); in c's
# counted builds the hook printed nothing (a clean output leaves no line).
#
# Then where the hook's time goes, on one kept output of b, each command
# RUNS times in turn, page cache warm (as in the build, right after the
# copy): `nix-heft refused --in-build --output out` alone, in the build's
# environment (the derivation's env, NIX_STORE, NIX_BUILD_TOP); the same on
# a one-file output (the fixed cost); `nix-heft refs --dir` with the same
# two candidates (the scan without the in-build discovery of written-out
# paths, then the evidence read of every edge); `nix-store --dump` (Nix's
# NAR serialisation of the same tree); `cat` of every file (the read
# alone); and one `strace -f -e trace=openat` of the in-build command,
# counting the output's files opened (each once: the scan; twice: an
# evidence read too).
#
# usage: bench/refused-hook.sh [RUNS]     (default 5)
#   env: HEFT=BIN (this binary; else cargo build --release here),
#        BYTES (the output's size, default 1000000000; smaller for a smoke test),
#        DIAG_ONLY=1 (one build, then the diagnosis alone)
# Needs root (the sandbox off, builds into /nix/store) and ~2 GB free in
# /nix/store. Prints markdown tables for BENCHMARKS.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-5}"
bytes="${BYTES:-1000000000}"
diag_only="${DIAG_ONLY:-0}"
for tool in nix-build nix-store /usr/bin/time python3 strace; do
  command -v "$tool" >/dev/null || { echo "refused-hook.sh: $tool is missing" >&2; exit 1; }
done
heft="${HEFT:-}"
if [ -z "$heft" ]; then
  (cd "$repo" && cargo build --release --quiet --bin nix-heft)
  heft="$repo/target/release/nix-heft"
fi
heft="$(realpath "$heft")"
heft_dir="$(dirname "$heft")"
nixfile="$here/refused-hook.nix"
work="$(mktemp -d)"
# The builders (nixbld users) read the list of files in it.
chmod 755 "$work"
kept=
cleanup() {
  [ -n "$kept" ] && nix-store --delete "$kept" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

build_args() { # variant salt
  local a=(--option sandbox false --option substituters '' --no-out-link
    --argstr heft "$heft_dir" --argstr salt "$2"
    --argstr fileList "$work/files")
  case "$1" in
    a) ;;
    b) a+=(--arg check true) ;;
    c) a+=(--arg check true --arg hooked true) ;;
    refuse) a+=(--arg hooked true --arg refuseDep true) ;;
  esac
  printf '%s\n' "${a[@]}"
}
# One build: "variant wall user sys peakKiB copy hook postbuild narsize",
# the output deleted afterwards.
build() { # variant label
  local v="$1" salt out t1 end
  salt="$v-$2-$$-$(date +%s%N)"
  mapfile -t args < <(build_args "$v" "$salt")
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" nix-build "$nixfile" "${args[@]}" \
    > "$work/out" 2> "$work/log-$v"; then
    echo "FAILED: build $v" >&2
    tail -20 "$work/log-$v" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  out="$(tail -1 "$work/out")"
  end="$(sed -n 's/^refused-hook: builder end //p' "$work/log-$v")"
  local copy hook size
  copy="$(sed -n 's/^refused-hook: copy \([0-9.]*\) s/\1/p' "$work/log-$v")"
  hook="$(sed -n 's/^refused-hook: fixup hooks \([0-9.]*\) s wall.*/\1/p' "$work/log-$v")"
  size="$(nix-store -q --size "$out")"
  # The hook prints nothing for a clean output (Nix's own lines left out,
  # and its warning while other builds hold the database).
  if [ "$v" = c ] && grep -v '^refused-hook:\|^building\|^these\|^this\|^ *\/nix\/store' "$work/log-$v" |
    grep -v "^warning: error: SQLite database '.*' is busy$" | grep -q .; then
    echo "the hook printed something on a clean output:" >&2
    cat "$work/log-$v" >&2
    exit 1
  fi
  echo "$v $(cat "$work/time") $copy $hook $(python3 -c "print(f'{$t1 - $end:.2f}')") $size"
  if [ "${3:-}" = keep ]; then
    kept="$out"
  else
    nix-store --delete "$out" >/dev/null 2>&1
  fi
  echo "$out" > "$work/last-out"
}

# The files to copy, chosen once (the walk of /usr is no part of a build).
select="$(nix-instantiate --eval --read-write-mode -E "(import $nixfile {}).select" | tr -d '"')"
python3 "$select" list /usr/lib "$((bytes * 7 / 10))" > "$work/files"
python3 "$select" list /usr/share "$((bytes * 3 / 10))" >> "$work/files"
echo "nix-heft: $heft ($("$heft" --version))" >&2
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The warm-up (also builds the two small inputs, once, and fills the page
# cache with the files copied).
if [ "$diag_only" != 1 ]; then
for v in a b c; do build "$v" warmup > /dev/null; done

# The hook finds what there is to refuse.
mapfile -t args < <(build_args refuse "refuse-$$-$(date +%s%N)")
refused_out="$(nix-instantiate "$nixfile" "${args[@]/--no-out-link/--quiet}" 2>/dev/null |
  xargs nix-store -q --outputs)"
if nix-build "$nixfile" "${args[@]}" > /dev/null 2> "$work/refuse.log"; then
  echo "the build with disallowedReferences = [ dep ] succeeded" >&2
  exit 1
fi
# Nix 2.8 leaves a refused output at its store path, unregistered
# (docs/guide/refused.md): remove it, as it is no store path.
if [ -e "$refused_out" ] && ! nix-store --check-validity "$refused_out" 2>/dev/null; then
  rm -rf "$refused_out"
fi
rm -f "$refused_out.lock"
grep -q 'share/doc/refused-hook/README' "$work/refuse.log" \
  || { echo "the hook did not name the README:" >&2; cat "$work/refuse.log" >&2; exit 1; }
grep -q 'disallowed' "$work/refuse.log" \
  || { echo "Nix did not refuse:" >&2; cat "$work/refuse.log" >&2; exit 1; }
echo "checked: with disallowedReferences = [ dep ], the hook named the README, then Nix refused:" >&2
grep -i 'README\|disallowed\|refus' "$work/refuse.log" | head -8 | sed 's/^/  /' >&2

for i in $(seq "$runs"); do
  for v in a b c; do build "$v" "$i"; done
done | tee "$work/builds.txt" >&2
fi

# Where the hook's time goes: one output of b kept.
build b diag keep > /dev/null
out="$kept"
drv="$(nix-store -q --deriver "$out")"
# The inputs' derivations give the paths; their outputs are valid.
dep="$(nix-store -q --outputs "$(nix-store -q --references "$drv" | grep -- '-refused-hook-dep-1.0.drv$')")"
forbidden="$(nix-store -q --outputs "$(nix-store -q --references "$drv" | grep -- '-refused-hook-forbidden-1.0.drv$')")"
small="$dep"
mkdir -p "$work/build-top"
# The build's environment: the derivation's, plus what Nix sets.
env_of() { # drv output-path
  nix --extra-experimental-features nix-command show-derivation "$1" |
    python3 -c '
import json, sys
d = next(iter(json.load(sys.stdin).values()))
env = d["env"]
env["out"] = sys.argv[1]
for k, v in env.items():
    print(f"{k}={v}")
' "$2"
}
mapfile -t envb < <(env_of "$drv" "$out")
mapfile -t envs < <(env_of "$drv" "$small")
common=(NIX_STORE=/nix/store "NIX_BUILD_TOP=$work/build-top" "TMPDIR=$work/build-top" HOME=/homeless-shelter)
files="$(find "$out" -type f | wc -l)"
echo "diagnosis on $out: $(nix-store -q --size "$out") bytes of NAR, $files files" >&2
cat > "$work/cat.sh" <<'SH'
find "$1" -type f -print0 | xargs -0 cat > /dev/null
SH
diag() { # label command...
  local label="$1"
  shift
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/diag.out" 2> "$work/diag.err"; then
    # refs exits 3 on problems it still reports; anything else is a failure.
    if [[ "$label" != refs-* ]] || [ ! -s "$work/diag.out" ]; then
      echo "FAILED: $*" >&2
      tail -20 "$work/diag.err" >&2
      exit 1
    fi
  fi
  echo "$label $(cat "$work/time")"
}
for i in $(seq 0 "$runs"); do
  diag in-build env -i "PATH=$heft_dir:/usr/bin:/bin" "${common[@]}" "${envb[@]}" \
    "$heft" refused --in-build --output out
  diag in-build-small env -i "PATH=$heft_dir:/usr/bin:/bin" "${common[@]}" "${envs[@]}" \
    "$heft" refused --in-build --output out
  diag refs-dir "$heft" refs --dir "$out" --to "$dep" --to "$forbidden"
  diag refs-dir-none "$heft" refs --dir "$out" --to "$forbidden"
  diag refs-valid "$heft" refs "$out"
  # shellcheck disable=SC2016 # expanded by that shell
  diag nix-dump sh -c 'nix-store --dump "$1" > /dev/null' sh "$out"
  # shellcheck disable=SC2016
  diag nix-dump-pipe sh -c 'nix-store --dump "$1" | cat > /dev/null' sh "$out"
  diag cat sh "$work/cat.sh" "$out"
done | { if [ "$runs" -gt 0 ]; then tail -n +9; fi; } | tee "$work/diag.txt" >&2
env -i "PATH=$heft_dir:/usr/bin:/bin" "${common[@]}" "${envb[@]}" \
  strace -f -e trace=openat -o "$work/strace" "$heft" refused --in-build --output out
# Where the kernel time goes: the system calls of the in-build command.
env -i "PATH=$heft_dir:/usr/bin:/bin" "${common[@]}" "${envb[@]}" \
  strace -f -c -o "$work/strace-c" "$heft" refused --in-build --output out
echo "system calls of the in-build command (strace -f -c):" >&2
head -14 "$work/strace-c" >&2
# Regular files opened (directories are opened with O_DIRECTORY to list
# them), and how many of them distinct.
grep "\"$out/" "$work/strace" | grep -v O_DIRECTORY | grep -o "\"$out/[^\"]*\"" > "$work/opened" || true
opens="$(wc -l < "$work/opened")"
distinct="$(sort -u "$work/opened" | wc -l)"
echo "strace: $opens opens of $distinct distinct files under the output ($files files)" >&2

python3 - "$work/builds.txt" "$work/diag.txt" "$opens" "$files" "$distinct" <<'PY'
import os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])] if os.path.exists(sys.argv[1]) else []
diag = [l.split() for l in open(sys.argv[2])]
opens, files, distinct = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
by = {v: [r for r in rows if r[0] == v] for v in "abc"}
med = statistics.median
def col(v, i):
    return [float(r[i]) for r in by[v]]
names = {
    "a": "a: no output check",
    "b": "b: `disallowedReferences = [ forbidden ]` (Nix's check)",
    "c": "c: b with the hook (`nix-heft refused --in-build`)",
}
if rows:
    size = int(rows[0][8])
    print(f"NAR size {size:,} bytes; {len(by['a'])} builds of each, in turn")
    print()
    print("| build | wall (median, min – max) | user+sys | builder's copy | fixup hooks (the hook) | Nix after the builder |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for v in "abc":
        w = col(v, 1)
        cpu = [float(r[2]) + float(r[3]) for r in by[v]]
        print(f"| {names[v]} | **{med(w):.2f} s** ({min(w):.2f} – {max(w):.2f}) | {med(cpu):.2f} s | "
              f"{med(col(v, 5)):.2f} s | {med(col(v, 6)):.2f} s ({min(col(v, 6)):.2f} – {max(col(v, 6)):.2f}) | "
              f"{med(col(v, 7)):.2f} s |")
    print()
    wa, wb, wc = col("a", 1), col("b", 1), col("c", 1)
    pb = [c / b - 1 for b, c in zip(wb, wc)]
    pa = [b / a - 1 for a, b in zip(wa, wb)]
    hook = col("c", 6)
    print(f"- the hook's added wall time, c against b: medians {100 * (med(wc) / med(wb) - 1):+.1f}%; "
          f"pair by pair median {100 * med(pb):+.1f}% (range {100 * min(pb):+.1f}% – {100 * max(pb):+.1f}%)")
    print(f"- the hook's own time (the fixup hooks in c): median {med(hook):.2f} s = "
          f"{100 * med(hook) / med(wb):.1f}% of b's median build; goal under 5%: "
          f"{'met' if med(hook) / med(wb) < 0.05 else 'NOT met'}; {100 * med(hook) / min(wb):.1f}% of b's fastest; "
          f"{100 * med(hook) / med(col('b', 7)):.0f}% of Nix's own work after b's builder ({med(col('b', 7)):.2f} s: "
          f"the output's reference scan, NAR hash, registration)")
    print(f"- Nix's check, b against a: pair by pair median {100 * med(pa):+.1f}% (range {100 * min(pa):+.1f}% – {100 * max(pa):+.1f}%)")
    print()
labels = {
    "in-build": "`nix-heft refused --in-build --output out` alone, on the kept output",
    "in-build-small": "the same on a one-file output (fixed cost)",
    "refs-dir": "`nix-heft refs --dir OUT --to DEP --to FORBIDDEN` (scan, then the evidence of OUT → DEP: a second read)",
    "refs-dir-none": "`nix-heft refs --dir OUT --to FORBIDDEN` (the scan alone: no edge, no discovery)",
    "refs-valid": "`nix-heft refs OUT`, OUT valid (the local store's reader: files in parallel, evidence of OUT → DEP)",
    "nix-dump": "`nix-store --dump OUT > /dev/null` (Nix's NAR serialisation)",
    "nix-dump-pipe": "`nix-store --dump OUT \\| cat > /dev/null` (the same through a pipe)",
    "cat": "`cat` of every file to /dev/null (the read alone)",
}
print(f"| command ({len([d for d in diag if d[0] == 'cat'])} runs each, in turn) | wall (median, min – max) | user | sys | peak RSS |")
print("| --- | ---: | ---: | ---: | ---: |")
for k, what in labels.items():
    rs = [d for d in diag if d[0] == k]
    if not rs:
        continue
    w = [float(r[1]) for r in rs]
    print(f"| {what} | **{med(w):.2f} s** ({min(w):.2f} – {max(w):.2f}) | {med(float(r[2]) for r in rs):.2f} s | "
          f"{med(float(r[3]) for r in rs):.2f} s | {max(int(r[4]) for r in rs) // 1024} MiB |")
print()
print(f"- regular files of the output opened by the in-build command (strace): {opens} opens of {distinct} distinct files, for {files} files")
PY
