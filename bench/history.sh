#!/usr/bin/env bash
# `nix-heft bisect` over a generated repository of 10,000 commits whose
# outputs a cache holds at every 100th commit, served with a delay on each
# answer (issue 42), side by side with the bisect a user runs today:
#
#   listed   nix-heft bisect app --good c100 --bad c10000 --max-growth 1MiB
#            --revs-file cached.txt (the binary search over the 100 cached
#            commits, then the 100 commits between the cached pair
#            instantiated);
#   all      the same without --revs-file (every commit probed, uncached
#            ones skipped for their neighbours);
#   build    `git bisect run` of a step that builds app with nix-build in
#            the local store with the cache as substituter (cached commits
#            substitute, the others build; a chroot store cannot run the
#            host's /bin/sh builder), skips (125) a commit that does not
#            instantiate, and compares `nix path-info -S` with the good
#            closure + 1 MiB: what nix-bisect wraps, building each step.
#            What it built or fetched is deleted after each run (the
#            paths are the benchmark's own, salted), so each run is cold.
#
# Each is run RUNS times (one cold XDG_CACHE_HOME and chroot store a run);
# each run's answer is checked against expected.json (exit 1 otherwise).
# Data: bench/gen_history.py, once, into $NIX_HEFT_BENCH_DATA (default
# bench/.data)/history-10000 (a few minutes). Needs root and Nix.
#
# usage: bench/history.sh [RUNS] [DELAY_MS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs="${1:-3}"
delay="${2:-50}"
data="${NIX_HEFT_BENCH_DATA:-$here/.data}/history-10000"
(cd "$repo" && cargo build --release --quiet --bin nix-heft --example cache_server)
heft="${HEFT:-$repo/target/release/nix-heft}"
server_bin="$repo/target/release/examples/cache_server"
[ -s "$data/expected.json" ] || python3 "$here/gen_history.py" "$data"
culprit="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["culprit"])' "$data/expected.json")"
# Good and bad: the first and the last cached commit (c100, c10000), as a
# user bisects between two channel bumps.
good="$(head -1 "$data/cached.txt" | cut -d' ' -f1)"
bad="$(tail -1 "$data/cached.txt" | cut -d' ' -f1)"
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
"$server_bin" "$data/cache" --latency-ms "$delay" > "$work/port" 2>/dev/null &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(head -1 "$work/port")"
# The bench cache is unsigned (nix copy without a key): accepted
# deliberately, as nix.conf's require-sigs = false would.
export NIX_CONFIG="require-sigs = false"
echo "machine: $(nproc) cores, $(uptime)"
echo "repository: $(git -C "$data/repo" rev-list --count HEAD) commits, $(wc -l < "$data/cached.txt") cached; every answer after ${delay} ms"

timed() { # label, command...: "label wall peak-KiB", output in $work/LABEL.out
  local label="$1"
  shift
  if ! /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/$label.out" 2> "$work/$label.err"; then
    echo "FAILED: $*" >&2
    tail -20 "$work/$label.err" >&2
    exit 1
  fi
  echo "$label $(tail -1 "$work/time")"
}
check_heft() { # the JSON names the culprit
  python3 - "$work/$1.out" "$culprit" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
assert v["first_bad"]["commit"] == sys.argv[2], v["first_bad"]
c = v["costs"]
print(f"  evaluations {c['evaluations']}, instantiations {c['instantiations']}, narinfos {c['narinfos']}")
PY
}

cat > "$work/step.sh" <<'STEP'
#!/usr/bin/env bash
# One step of the hand bisect: build app into the chroot store, measure.
set -u
nix-instantiate . -A app > /dev/null 2>&1 || exit 125
out="$(nix-build . -A app --no-out-link --option sandbox false \
  --option build-users-group '' --option substituters "$BISECT_CACHE" \
  --option require-sigs false 2>/dev/null)" || exit 125
echo "$out" >> "$BISECT_LOG"
size="$(nix --extra-experimental-features nix-command path-info -S "$out" | awk '{print $2}')"
[ "$size" -le "$BISECT_LIMIT" ]
STEP
chmod +x "$work/step.sh"
hand() { # one build-per-step bisect in a fresh clone and store
  local d="$work/hand-$1"
  rm -rf "$d"
  git clone -q "$data/repo" "$d/repo"
  export BISECT_CACHE="$url" BISECT_LOG="$d/log"
  : > "$BISECT_LOG"
  # The limit: the good commit's closure + 1 MiB, measured as the step does.
  (cd "$d/repo" && git checkout -q "$good" &&
    out="$(nix-build . -A app --no-out-link --option sandbox false \
      --option build-users-group '' --option substituters "$url" --option require-sigs false 2>/dev/null)" &&
    echo "$out" >> "$BISECT_LOG" &&
    echo $(( $(nix --extra-experimental-features nix-command path-info -S "$out" | awk '{print $2}') + 1048576 ))) > "$d/limit"
  export BISECT_LIMIT="$(cat "$d/limit")"
  (cd "$d/repo" && git bisect start "$bad" "$good" >/dev/null && git bisect run "$work/step.sh" > "$d/bisect.log" 2>&1)
  grep -q "^$culprit is the first bad commit" "$d/bisect.log" || { echo "hand bisect: wrong answer" >&2; tail "$d/bisect.log" >&2; exit 1; }
  echo "  steps that built or fetched app: $(($(wc -l < "$BISECT_LOG") - 1)) (and the limit's)"
  # Cold for the next run: what the steps built or fetched goes (the
  # benchmark's own salted paths; nothing else is in their closure).
  nix-store --delete $(nix-store -qR $(cat "$BISECT_LOG")) > /dev/null 2>&1 || true
}

for r in $(seq "$runs"); do
  XDG_CACHE_HOME="$work/xdg-listed-$r" timed listed "$heft" --store "$url" --json bisect app \
    --repo "$data/repo" --good "$good" --bad "$bad" --max-growth 1MiB --revs-file "$data/cached.txt"
  check_heft listed
  XDG_CACHE_HOME="$work/xdg-all-$r" timed all "$heft" --store "$url" --json bisect app \
    --repo "$data/repo" --good "$good" --bad "$bad" --max-growth 1MiB
  check_heft all
  # A shell function, so timed by the clock around it (GNU time runs
  # programs): wall seconds only.
  t0="$(date +%s.%N)"
  hand "$r"
  echo "build $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
done
