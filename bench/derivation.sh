#!/usr/bin/env bash
# `size --derivation` (the build graph) against nix-store -qR and
# nix path-info --derivation -rS on the same derivations:
#   synthetic  bench/gen_drvs.py's Nix file instantiated (N derivations in
#              layers, real .drv files written by nix-instantiate), its two
#              lowest layers built so that part of the graph has sizes
#   real       examples/rocm-mini (the suite's ROCm-shaped example), built
# and, apart, what an installable costs: `nix-instantiate` of the generated
# file (Nix's evaluation) against `nix-heft -f FILE size --derivation top`.
#
# usage: bench/derivation.sh [--drvs N] [--seed S] [--runs R] [--heft BIN]
#   --drvs N    synthetic derivations (default 5000)
#   --seed S    generator seed (default 1)
#   --runs R    timed runs of each command (default 5, after 1 warm-up)
#   --heft BIN  time this nix-heft binary instead of building
#               target/release/nix-heft
#
# Needs root and Nix (the .drv files go into /nix/store). Checks first that
# nix-heft's nodes are nix-store -qR's and that its derivations of unknown
# size are the unbuilt ones; then times each command as a whole process with
# GNU time (median, min – max of wall and user+sys, median peak RSS) and
# prints a markdown table for BENCHMARKS.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
drvs=5000 seed=1 runs=5 heft=""
while [ $# -gt 0 ]; do
    case "$1" in
        --drvs) drvs="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --heft) heft="$(realpath "$2")"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || apt-get install -y time >/dev/null
if [ -z "$heft" ]; then
    (cd "$repo" && cargo build --release --quiet)
    heft="$repo/target/release/nix-heft"
fi
nix=(nix --extra-experimental-features nix-command)
build=(--option sandbox false --option substituters '' --no-out-link)

data="${NIX_HEFT_BENCH_DATA:-$here/.data}/drvs-$drvs-s$seed"
mkdir -p "$data"
file="$data/graph.nix"
if [ ! -s "$file" ] || [ "$here/gen_drvs.py" -nt "$file" ]; then
    python3 "$here/gen_drvs.py" "$file" --drvs "$drvs" --seed "$seed" > "$data/shape.json"
fi
echo "== shape: $(cat "$data/shape.json")" >&2
synthetic="$(nix-instantiate "$file" -A top 2>/dev/null)"
nix-build "$file" -A built "${build[@]}" >/dev/null 2>&1
real="$(nix-instantiate "$repo/examples/rocm-mini/default.nix" 2>/dev/null)"
nix-build "$repo/examples/rocm-mini/default.nix" "${build[@]}" >/dev/null 2>&1

# --- checks: the same graph as Nix's, the unknown ones the unbuilt ones --------
for d in "$synthetic" "$real"; do
    python3 - "$d" "$heft" <<'EOF'
import json, subprocess, sys
drv, heft = sys.argv[1], sys.argv[2]
out = json.loads(subprocess.run([heft, "--json", "size", "--derivation", drv],
                                check=True, capture_output=True).stdout)
got = {p["path"] for p in out["paths"]}
want = set(subprocess.run(["nix-store", "-qR", drv], check=True,
                          capture_output=True, text=True).stdout.split())
assert got == want, (len(got), len(want))
unknown = {u["derivation"] for u in out.get("unknown_outputs", [])}
drvs = sorted(p for p in want if p.endswith(".drv"))
shown = json.loads(subprocess.run(["nix", "--extra-experimental-features", "nix-command",
                                   "show-derivation", "-r", drv], check=True,
                                  capture_output=True).stdout)
outs = {d: [o["path"] for o in shown[d]["outputs"].values()] for d in drvs}
invalid = set(subprocess.run(["nix-store", "--check-validity", "--print-invalid",
                              *[o for os_ in outs.values() for o in os_]],
                             capture_output=True, text=True).stdout.split())
unbuilt = {d for d, os_ in outs.items() if any(o in invalid for o in os_)}
assert unknown == unbuilt, (len(unknown), len(unbuilt))
print(f"== {drv}: {len(got)} nodes ({len(drvs)} derivations, {len(unknown)} unbuilt), "
      f"closure {out['closure_size']} bytes: as nix-store -qR", file=sys.stderr)
EOF
done

# --- timing ----------------------------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# row LABEL CMD...: one table row, median (min – max) of $runs runs
row() {
    local label="$1" i; shift
    "$@" >/dev/null 2>&1 || true
    for ((i = 0; i < runs; i++)); do
        /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null 2>/dev/null
        cat "$work/t"
    done | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip() and l[0].isdigit()]
wall = sorted(float(r[0]) for r in rows)
cpu = sorted(float(r[1]) + float(r[2]) for r in rows)
rss = statistics.median(int(r[3]) for r in rows) / 1024
f = lambda xs: "%.3f s (%.3f – %.3f)" % (statistics.median(xs), xs[0], xs[-1])
print("| %s | %s | %s | %.0f MiB |" % (sys.argv[1], f(wall), f(cpu), rss))
' "$label"
}
nodes() { nix-store -qR "$1" | wc -l; }
echo "| command | wall | user+sys | peak RSS |"
echo "| --- | ---: | ---: | ---: |"
for d in "$synthetic" "$real"; do
    n="$(nodes "$d")"
    row "nix-heft size --derivation --json ($n nodes)" "$heft" --json size --derivation "$d"
    row "nix-store -qR ($n nodes)" nix-store -qR "$d"
    row "nix path-info --derivation -rS ($n nodes)" "${nix[@]}" path-info --derivation -rS "$d"
done
row "evaluation alone: nix-instantiate -A top" nix-instantiate "$file" -A top
row "installable: nix-heft -f FILE size --derivation top" "$heft" -f "$file" --json size --derivation top
