#!/usr/bin/env bash
# `nix-heft impact` of 1,000 attributes over a slow cache (issue 32,
# "Performance"): 1,000 attributes whose closures union to 20,000 paths, the
# base's cache served with every answer after 50 ms. Goals: the impact of all
# of them within 2x the time of fetching the union's narinfos 128 at a time,
# under 256 MiB peak; compared with the loop a user would write today
# (`nix path-info -S` per attribute on each side), in one run.
#
# Data: bench/gen_impact.py (standard library only) writes two package sets
# (before/ and after/, a default.nix of 1,000 trivial derivations each, 300
# changed) and a binary cache per side in the real formats (narinfos, valid
# NARs, no signatures), once, into $NIX_HEFT_BENCH_DATA (default bench/.data)/
# impact-1000 (regenerated when gen_impact.py changes; ~450 MB). The base's cache is
# served on 127.0.0.1 by examples/cache_server.rs (HTTP/1.1 keep-alive, every
# answer after DELAY_MS); the head's cache is read as file:// (the head is
# what was just built, at hand). The caches are unsigned: nix-heft gets
# --no-require-sigs (Nix's path-info checks no signatures).
#
# Timed, alternating, RUNS times each after one warm-up (GNU time: wall, peak
# RSS):
#   fetch   the union of the base's closures, every narinfo once, 128 at a
#           time: one `curl --parallel --parallel-max 128` (128 keep-alive
#           connections), the goal's yardstick;
#   impact  nix-heft impact --before before/ --after after/ --attr-file
#           attrs.txt --before-store http://... --after-store file://...
#           --json, cold (an empty $XDG_CACHE_HOME each run): both
#           evaluations (nix-env), every closure, the report with its
#           evidence (the head's NARs of the added paths' referrers; the
#           base's are read only with --removed-evidence, below);
#   impact-ne  the same with --no-evidence (narinfos only).
# Then REMOVED_EVIDENCE_RUNS (default 1) runs of impact with
# --removed-evidence (the base's evidence too: the NARs of the removed
# paths' referrers, from the slow cache), for comparison.
# Then the user's loop today, `nix path-info -S --store URL OUTPUTS` for each
# attribute on each side, once, on a sample of LOOP_SAMPLE attributes (default
# 20; all 1,000 take about half an hour): Nix asks one narinfo at a time, and
# its narinfo disk cache ($XDG_CACHE_HOME/nix, fresh for the loop, shared by
# its commands as a user's would be) makes each path cost one request in the
# whole loop. The loop over the sample is run cold, then again warm (every
# narinfo in the disk cache), and the whole loop is estimated as
#   warm time x 1000 / sample + union's narinfos x (cold - warm) / requests
# (per-command cost plus per-request cost; both measured), stated as such.
#
# Checked (exit 1 on any mismatch): every attribute's outputs and closure size
# on each side in nix-heft's JSON against the generator's own figures
# (expected.json), its status against the sign of the change, and for the
# sample, nix-heft's closure_size against `nix path-info -S` (one output) or
# the union of `nix path-info -r --json` (several outputs); the generator's
# figures against Nix's too (also with SKIP_HEFT=1).
#
# usage: bench/impact.sh [RUNS]
#   env: DELAY_MS (50), LOOP_SAMPLE (20; 0 skips the loop), REMOVED_EVIDENCE_RUNS (1), ATTRS (1,000;
#   fewer for a smoke test: the union is 20 x ATTRS), SKIP_HEFT=1 (all
#   but nix-heft, e.g. to test the rest), HEFT=BIN and CACHE_SERVER=BIN (use
#   these instead of building target/release's).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-3}"
delay="${DELAY_MS:-50}"
sample="${LOOP_SAMPLE:-20}"
skip_heft="${SKIP_HEFT:-0}"
n_attrs="${ATTRS:-1000}"
re_runs="${REMOVED_EVIDENCE_RUNS:-1}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}/impact-$n_attrs"
nixc=(nix --extra-experimental-features nix-command --option narinfo-cache-negative-ttl 0)
for tool in curl /usr/bin/time nix-env python3; do
  command -v "$tool" >/dev/null || { echo "impact.sh: $tool is missing" >&2; exit 1; }
done

heft="${HEFT:-}"
server_bin="${CACHE_SERVER:-}"
if { [ -z "$heft" ] && [ "$skip_heft" != 1 ]; } || [ -z "$server_bin" ]; then
  # Both in one build: the server's dev-dependencies change features of
  # crates nix-heft shares, and two builds would rebuild each other's.
  (cd "$repo" && cargo build --release --quiet --bin nix-heft --example cache_server)
  heft="${heft:-$repo/target/release/nix-heft}"
  server_bin="${server_bin:-$repo/target/release/examples/cache_server}"
fi

stamp="$(sha256sum "$here/gen_impact.py" | cut -c1-16) $n_attrs"
if [ "$(cat "$data/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "generating $data ..." >&2
  python3 "$here/gen_impact.py" "$data" --attrs "$n_attrs" --union $((n_attrs * 20)) \
    --changed $((n_attrs * 3 / 10)) >/dev/null
  echo "$stamp" > "$data/.stamp"
fi

work="$(mktemp -d)"
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
"$server_bin" "$data/cache-before" --latency-ms "$delay" --log "$work/server.log" \
  > "$work/port" 2>/dev/null &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "impact.sh: the cache server did not start" >&2; exit 1; }
touch "$work/server.log"
base="http://127.0.0.1:$(head -1 "$work/port")"
head_store="file://$data/cache-after"

# The narinfos of the union, as one curl's list of transfers.
sed "s|.*|url = \"$base/&\"\noutput = \"/dev/null\"|" "$data/before-narinfos.txt" > "$work/curl.cfg"
union="$(wc -l < "$data/before-narinfos.txt")"
python3 - "$data/stats.json" "$delay" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = float(sys.argv[2]) / 1000
print(f"{s['attributes']} attributes ({s['multi_output']} with two outputs), {s['changed']} changed "
      f"({s['changed_by_shared_libraries']} through 3 shared libraries), {s['grown']} grown, {s['shrunk']} shrunk")
print(f"union of the base's closures: {s['union_before']} paths; of the head's: {s['union_after']} "
      f"({s['paths_only_after']} only in the head); closures of {s['closure_paths_median']['before']:.0f} "
      f"paths (median; max {s['closure_paths_max']['before']}), {s['closure_paths_sum']['before']} in all")
print(f"every answer of the base's cache after {d * 1000:.0f} ms: the union 128 at a time is at least "
      f"{s['union_before'] / 128 * d:.1f} s, one at a time {s['union_before'] * d:.0f} s")
PY

lines() { wc -l < "$work/server.log"; }
# One run: "label wall peak-KiB user sys requests NAR-requests", its output
# in $work/LABEL.out.
# A failed run stops the benchmark: its time would mean nothing.
timed() {
  local label="$1" l0
  shift
  l0=$(lines)
  if ! /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > "$work/$label.out" 2> "$work/$label.err"; then
    echo "FAILED: $*" >&2
    tail -20 "$work/$label.err" >&2
    exit 1
  fi
  echo "$label $(tail -1 "$work/time") $(($(lines) - l0)) $(tail -n +$((l0 + 1)) "$work/server.log" | grep -c '^/nar/')"
}
fetch() {
  timed fetch curl --no-progress-meter --fail --parallel --parallel-immediate --parallel-max 128 -K "$work/curl.cfg"
}
impact() { # label, extra options
  # 128 in flight as when BENCHMARKS.md was written (the default is Nix's
  # 25 since issue 38), so the figures stay comparable.
  XDG_CACHE_HOME="$(mktemp -d -p "$work")" timed "$1" "$heft" --no-require-sigs --http-connections 128 impact \
    --before "$data/before" --after "$data/after" --attr-file "$data/attrs.txt" \
    --before-store "$base" --after-store "$head_store" --json "${@:2}"
}
# The evaluations alone (what nix-heft runs first, with nix-env).
timed eval-before nix-env -qaP --out-path --json -f "$data/before" --readonly-mode > "$work/runs.txt"
timed eval-after nix-env -qaP --out-path --json -f "$data/after" --readonly-mode >> "$work/runs.txt"
# One warm-up of each, not counted (the server's first reading of each
# file, the page cache), as a benchmark harness does.
fetch > /dev/null
[ "$skip_heft" = 1 ] || impact impact > /dev/null
for i in $(seq "$runs"); do
  fetch
  if [ "$skip_heft" != 1 ]; then
    impact impact
    cp "$work/impact.out" "$work/impact-$i.json"
    impact impact-ne --no-evidence
    cp "$work/impact-ne.out" "$work/impact-ne-$i.json"
  fi
done | tee -a "$work/runs.txt"
# The base's evidence too (--removed-evidence: the NARs of the removed
# paths' referrers from the slow cache), REMOVED_EVIDENCE_RUNS times.
if [ "$skip_heft" != 1 ]; then
  for i in $(seq "$re_runs"); do
    impact impact-re --removed-evidence
    cp "$work/impact-re.out" "$work/impact-re-$i.json"
  done | tee -a "$work/runs.txt"
fi
[ "$(awk '$1 == "fetch" {print $6; exit}' "$work/runs.txt")" = "$union" ] \
  || { echo "the fetch did not ask every narinfo once" >&2; exit 1; }

# The user's loop on a sample: half changed attributes, half not, and
# some with two outputs.
python3 - "$data/expected.json" "$sample" > "$work/sample.txt" <<'PY'
import json, random, sys
e = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
rng = random.Random(32)
multi = sorted(a for a in e if len(e[a]["before"]["outputs"]) > 1)
pick = set(rng.sample(multi, min(len(multi), 2, n)))
changed = sorted(a for a in e if e[a]["changed"] and a not in pick)
same = sorted(a for a in e if not e[a]["changed"] and a not in pick)
k = (n - len(pick)) // 2
pick |= set(rng.sample(changed, k)) | set(rng.sample(same, n - len(pick) - k))
for a in sorted(pick):
    print(a, " ".join(e[a]["before"]["outputs"].values()), " ".join(e[a]["after"]["outputs"].values()), sep="\t")
PY
# The loop as a user would write it, one `nix path-info -S` per attribute
# and side. Arguments: base store, head store, the sample (attr TAB base
# outputs TAB head outputs).
cat > "$work/loop.sh" <<'SH'
set -euo pipefail
nix=(nix --extra-experimental-features nix-command --option narinfo-cache-negative-ttl 0)
while IFS=$'\t' read -r attr before after; do
  # shellcheck disable=SC2086 # the outputs, one word each
  "${nix[@]}" path-info -S --store "$1" $before | sed "s|^|$attr before |"
  # shellcheck disable=SC2086
  "${nix[@]}" path-info -S --store "$2" $after | sed "s|^|$attr after |"
done < "$3"
SH
loop_xdg="$work/loop-xdg"
if [ "$sample" -gt 0 ]; then
  echo "the user's loop on $sample attributes (cold, then warm) ..." >&2
  for t in cold warm; do
    XDG_CACHE_HOME="$loop_xdg" timed "loop-$t" bash "$work/loop.sh" "$base" "$head_store" "$work/sample.txt"
  done | tee -a "$work/runs.txt"
  # Several outputs: the size of their closures together, as nix-heft
  # reports it (warm: every narinfo is in the loop's disk cache).
  while IFS=$'\t' read -r attr before after; do
    for side in before after; do
      if [ "$side" = before ]; then outs="$before" store="$base"; else outs="$after" store="$head_store"; fi
      # shellcheck disable=SC2086
      [ "$(echo $outs | wc -w)" -gt 1 ] || continue
      # shellcheck disable=SC2086
      XDG_CACHE_HOME="$loop_xdg" "${nixc[@]}" path-info -r --json --store "$store" $outs |
        python3 -c 'import json,sys; print(sys.argv[1], sys.argv[2], "union", sum(p["narSize"] for p in json.load(sys.stdin)))' "$attr" "$side"
    done
  done < "$work/sample.txt" > "$work/nix-union.txt"
else
  : > "$work/loop-cold.out"
  : > "$work/nix-union.txt"
fi

# Checks and the table.
python3 - "$work" "$data" "$skip_heft" "$sample" "$union" <<'PY'
import json, os, statistics, sys
work, data, skip_heft, sample, union = sys.argv[1:]
sample, union = int(sample), int(union)
expected = json.load(open(os.path.join(data, "expected.json")))
bad = []
# Nix's figures for the sample: single outputs from the loop's
# `nix path-info -S`, several outputs from the union of `-r --json`.
nix = {}
for line in open(os.path.join(work, "loop-cold.out")):
    attr, side, path, size = line.split()
    if len(expected[attr][side]["outputs"]) == 1:
        nix[(attr, side)] = int(size)
for line in open(os.path.join(work, "nix-union.txt")):
    attr, side, _, size = line.split()
    nix[(attr, side)] = int(size)
for (attr, side), size in sorted(nix.items()):
    if size != expected[attr][side]["closure_size"]:
        bad.append(f"{attr} {side}: nix {size}, generator {expected[attr][side]['closure_size']}")
if sample and len(nix) != 2 * sample:
    bad.append(f"nix gave {len(nix)} closure sizes for {sample} attributes on two sides")
runs = [l.split() for l in open(os.path.join(work, "runs.txt"))]
if skip_heft != "1":
    for label in ("impact", "impact-ne", "impact-re"):
        for i in range(1, sum(1 for r in runs if r[0] == label) + 1):
            run = f"{label} run {i}"
            out = json.load(open(os.path.join(work, f"{label}-{i}.json")))
            got = {a["attr"]: a for a in out["attributes"]}
            if set(got) != set(expected):
                bad.append(f"{run}: attributes {len(got)}, expected {len(expected)}")
            for attr, e in sorted(expected.items()):
                g = got.get(attr)
                if g is None:
                    continue
                for side in ("before", "after"):
                    gs = g.get(side) or {}
                    if gs.get("outputs") != e[side]["outputs"] or gs.get("closure_size") != e[side]["closure_size"]:
                        bad.append(f"{run}: {attr} {side}: nix-heft {gs.get('outputs')} {gs.get('closure_size')}, "
                                   f"expected {e[side]['outputs']} {e[side]['closure_size']}")
                    if (attr, side) in nix and gs.get("closure_size") != nix[(attr, side)]:
                        bad.append(f"{run}: {attr} {side}: nix-heft {gs.get('closure_size')}, "
                                   f"nix path-info {nix[(attr, side)]}")
                d = e["after"]["closure_size"] - e["before"]["closure_size"]
                want = "grown" if d > 0 else "shrunk" if d < 0 else "unchanged"
                if g.get("delta") != d or g.get("status") != want:
                    bad.append(f"{run}: {attr}: status {g.get('status')} delta {g.get('delta')}, expected {want} {d}")
            if out.get("problems"):
                bad.append(f"{run}: problems: {out['problems'][:3]}")
for b in bad[:40]:
    print("MISMATCH", b)
if len(bad) > 40:
    print(f"... {len(bad) - 40} more mismatches")

def rows(label):
    """(wall s, peak MiB, requests, cpu s, NAR requests) of each run."""
    return [(float(r[1]), int(r[2]) // 1024, int(r[5]), float(r[3]) + float(r[4]), int(r[6]))
            for r in runs if r[0] == label]

def row(what, rs):
    w = [r[0] for r in rs]
    cpu = statistics.median(r[3] for r in rs)
    req = statistics.median(r[2] for r in rs)
    nars = statistics.median(r[4] for r in rs)
    wall = f"**{statistics.median(w):.2f} s** ({min(w):.2f} – {max(w):.2f})" if len(rs) > 1 else f"{w[0]:.1f} s"
    print(f"| {what} | {wall} | {cpu:.2f} s | {max(r[1] for r in rs)} MiB | {req:.0f} ({nars:.0f} NARs) |")

print()
print(f"| run | wall (median of {len(rows('fetch'))}, range) | user+sys | peak RSS | requests to the base's cache |")
print("| --- | ---: | ---: | ---: | ---: |")
ev = rows("eval-before") + rows("eval-after")
print(f"| evaluation alone: `nix-env -qaP --out-path --json`, both sides | {sum(r[0] for r in ev):.2f} s | "
      f"{sum(r[3] for r in ev):.2f} s | {max(r[1] for r in ev)} MiB | 0 |")
f = rows("fetch")
row(f"fetch the union's {union} narinfos, 128 at a time (`curl --parallel`)", f)
im, ne = rows("impact"), rows("impact-ne")
if im:
    row(f"`nix-heft impact`, {len(expected):,} attributes, cold", im)
    row("the same with `--no-evidence` (no NAR read)", ne)
    re = rows("impact-re")
    if re:
        row("the same with `--removed-evidence` (the base's NARs too)", re)
lc, lw = rows("loop-cold"), rows("loop-warm")
est = None
if lc:
    tc, tw = lc[0][0], lw[0][0]
    per_cmd = tw / sample
    per_req = (tc - tw) / max(lc[0][2], 1)
    est = per_cmd * len(expected) + per_req * union
    row(f"the user's loop, `nix path-info -S` per attribute and side, {sample} attributes, cold", lc)
    row("the same loop again, warm (Nix's narinfo disk cache full)", lw)
    print(f"| the user's loop over all {len(expected)} attributes, **estimated**: {tw:.1f} s x {len(expected)}/{sample} "
          f"+ {union} narinfos x {per_req * 1000:.1f} ms | ~{est:.0f} s | | | ~{union} |")
print()
if im:
    for what, rs in (("nix-heft", im), ("nix-heft --no-evidence", ne), ("nix-heft --removed-evidence", re)):
        if not rs:
            continue
        pairs = [b[0] / a[0] for a, b in zip(f, rs)]
        med = statistics.median(pairs)
        peak = max(r[1] for r in rs)
        print(f"{what} / fetch, pair by pair: median {med:.2f} (range {min(pairs):.2f} – {max(pairs):.2f}); "
              f"goal at most 2: {'met' if med <= 2 else 'NOT met'}; peak RSS {peak} MiB, goal under 256 MiB: "
              f"{'met' if peak < 256 else 'NOT met'}")
    if est:
        print(f"the user's loop (estimated) / nix-heft: {est / statistics.median(r[0] for r in im):.0f}x")
if bad:
    sys.exit(1)
print(f"checked: {'nix-heft against the generator (every attribute, both sides, every run) and against Nix (the sample); ' if im else ''}"
      f"the generator against Nix on {len(nix)} closures")
PY
