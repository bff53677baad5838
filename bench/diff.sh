#!/usr/bin/env bash
# Diff benchmark: `nix-heft diff` against `nix store diff-closures` on two
# large closures that share most of their paths, in the synthetic store of
# bench/gen_store.py (metadata only: no file contents, so no evidence is read
# there; see BENCHMARKS.md for the evidence part on real files).
#
# usage: [DIFF_EVIDENCE=1] bench/diff.sh [--paths N] [--seed S] [--heft BIN]
#
# AFTER is made from BEFORE (the store's biggest system path, one-root.txt)
# in a copy of the store's database: a new top-level path that keeps BEFORE's
# references except about 2% of them, adds about 2% other top-layer paths,
# and replaces about 1% by rebuilt copies (same name, new hash, same
# references). Prints the pair and the two commands to time side by side
# (BENCHMARKS.md quotes whole-process medians of both; /usr/bin/time -v or
# any harness that times whole processes will do).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
paths=100000; seed=1; heft=""
while [ $# -gt 0 ]; do
    case "$1" in
        --paths) paths="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --heft) heft="$(realpath "$2")"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
if [ -z "$heft" ]; then
    (cd "$repo" && cargo build --release --quiet)
    heft="$repo/target/release/nix-heft"
fi
data="${NIX_HEFT_BENCH_DATA:-$here/.data}"
src="$data/store-$paths-s$seed"
if [ ! -s "$src/stats.json" ]; then
    python3 "$here/gen_store.py" "$src" --paths "$paths" --seed "$seed" --force >&2
fi
root="$data/diff-$paths-s$seed"
if [ ! -s "$root/pair.txt" ] || [ "$src/stats.json" -nt "$root/pair.txt" ]; then
    rm -rf "$root"
    mkdir -p "$root/nix/var/nix/db" "$root/nix/store"
    cp "$src/nix/var/nix/db/db.sqlite" "$root/nix/var/nix/db/"
    python3 - "$root" "$(head -n1 "$src/one-root.txt")" "$seed" <<'PY'
import random, sqlite3, sys, time
root, before, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
B32 = "0123456789abcdfghijklmnpqrsvwxyz"
def new_path(name):
    return "/nix/store/" + "".join(rng.choice(B32) for _ in range(32)) + "-" + name
db = sqlite3.connect(root + "/nix/var/nix/db/db.sqlite")
c = db.cursor()
(bid,) = c.execute("select id from ValidPaths where path = ?", (before,)).fetchone()
refs = [r for (r,) in c.execute("select reference from Refs where referrer = ? and reference != ?", (bid, bid))]
top = [i for (i,) in c.execute(
    "select id from ValidPaths v where not exists (select 1 from Refs r where r.reference = v.id)")]
rng.shuffle(refs)
drop = len(refs) // 50
rebuild = len(refs) // 100
kept = refs[drop:]
extra = rng.sample([t for t in top if t != bid], min(len(refs) // 50, len(top) - 1))
def insert(path, nar, rs):
    c.execute("insert into ValidPaths (path, hash, registrationTime, narSize) values (?, ?, ?, ?)",
              (path, "sha256:" + "0" * 52, int(time.time()), nar))
    i = c.lastrowid
    c.executemany("insert or ignore into Refs (referrer, reference) values (?, ?)", [(i, r) for r in rs])
    return i
new_refs = []
for j, r in enumerate(kept):
    if j < rebuild:
        path, nar = c.execute("select path, narSize from ValidPaths where id = ?", (r,)).fetchone()
        sub = [x for (x,) in c.execute("select reference from Refs where referrer = ? and reference != ?", (r, r))]
        new_refs.append(insert(new_path(path[44:]), nar, sub))
    else:
        new_refs.append(r)
name = before[44:]
after = new_path(name)
insert(after, c.execute("select narSize from ValidPaths where id = ?", (bid,)).fetchone()[0], new_refs + extra)
db.commit()
db.close()
open(root + "/pair.txt", "w").write(before + "\n" + after + "\n")
print(f"BEFORE {before}: {len(refs)} references; AFTER: {drop} dropped, {rebuild} rebuilt, {len(extra)} added", file=sys.stderr)
PY
fi
before="$(sed -n 1p "$root/pair.txt")"
after="$(sed -n 2p "$root/pair.txt")"
nix=(nix --extra-experimental-features nix-command)
echo "closure sizes (paths): before $("${nix[@]}" path-info --store "$root" -r "$before" | wc -l), after $("${nix[@]}" path-info --store "$root" -r "$after" | wc -l)" >&2
# Exit 3: a metadata-only store has no files for the evidence (partial).
rc=0; "$heft" --store "$root" --json diff "$before" "$after" > "$root/diff.json" 2>/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "nix-heft diff failed ($rc)" >&2; exit 1; }
python3 - "$root/diff.json" <<'PY' >&2
import json, sys
j = json.load(open(sys.argv[1]))
print("nix-heft: %d added, %d removed, %d packages changed" % (len(j["added"]), len(j["removed"]), len(j["packages"])))
PY
echo "BEFORE=$before"
echo "AFTER=$after"
echo "STORE=$root"
echo "time with: <harness> $heft --store $root --json diff $before $after"
echo "     vs:   ${nix[*]} store diff-closures --store $root $before $after"

# The evidence part, on real files: BEFORE is one small dependency of the
# scan benchmark's 4.2 GiB path (bench/scan.nix), AFTER that path itself, so
# its two other dependencies appear through edges whose referrer is the big
# path: diff reads it once, looking for both hashes.
if [ "${DIFF_EVIDENCE:-0}" = 1 ]; then
    scan="$(nix-build "$here/scan.nix" --option sandbox false --option substituters '' --no-out-link)"
    dep="$(nix-store -q --references "$scan" | grep -- -bench-dep-data-)"
    sh_dep="$(nix-store -q --references "$scan" | grep -- -bench-dep-sh-)"
    echo "evidence: $heft --json diff $dep $scan"
    echo "     vs:  ${nix[*]} why-depends --precise $scan $sh_dep   (one pair's evidence)"
    echo "     vs:  ${nix[*]} store diff-closures $dep $scan         (no evidence)"
fi
