#!/usr/bin/env bash
# Benchmarks of `report` and `browse` on a synthetic store (sizes only: the
# generated store has a database and no files, so `--no-evidence`).
#
# usage: bench/view.sh [STORE_DIR] [--paths N] [--runs R] [--heft BIN]
#
# Generates the store with bench/gen_store.py when STORE_DIR lacks it, then:
#   - `report --no-evidence` over roots.txt (the whole store) and
#     one-root.txt: wall (median of R), peak RSS, the page's size;
#   - headless chromium on each page: the page's own time from navigation
#     start to its first drawing (`data-painted-ms`), and the whole process;
#   - `browse --no-evidence` and `browse` (background read) in tmux at
#     80x24: time from launch to the first screen (status line drawn),
#     polled every 10 ms, median of R.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
store=""
paths=100000
runs=5
heft=""
while [ $# -gt 0 ]; do
    case "$1" in
        --paths) paths="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --heft) heft="$2"; shift 2 ;;
        *) store="$1"; shift ;;
    esac
done
store="${store:-${NIX_HEFT_BENCH_DATA:-$repo/bench/.data}/store-$paths-s1}"
if [ ! -f "$store/roots.txt" ]; then
    python3 "$here/gen_store.py" "$store" --paths "$paths" --force >/dev/null
fi
if [ -z "$heft" ]; then
    (cd "$repo" && cargo build --release -q)
    heft="${CARGO_TARGET_DIR:-$repo/target}/release/nix-heft"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "| what | roots | median wall | peak RSS | page size |"
echo "| --- | ---: | ---: | ---: | ---: |"
for set in roots one-root; do
    walls=(); rss=0
    for i in $(seq 0 "$runs"); do
        /usr/bin/time -f "%e %M" -o "$out/t" "$heft" --store "$store" report --no-evidence \
            -o "$out/$set.html" $(cat "$store/$set.txt") >/dev/null
        read -r w m < "$out/t"
        [ "$i" -gt 0 ] && walls+=("$w") && rss=$m
    done
    size=$(stat -c %s "$out/$set.html")
    echo "| report --no-evidence $set.txt | $(grep -c . "$store/$set.txt") roots | $(printf '%s\n' "${walls[@]}" | median) s | $((rss / 1024)) MiB | $size B |"
done

echo
echo "| page | chromium: page's time to first drawing | chromium process wall |"
echo "| --- | ---: | ---: |"
for set in roots one-root; do
    prof="$(mktemp -d)"
    start=$(date +%s.%N)
    chromium --no-sandbox --headless --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$prof" \
        --window-size=1400,1000 --virtual-time-budget=30000 --dump-dom "file://$out/$set.html" \
        2>/dev/null > "$out/dom"
    end=$(date +%s.%N)
    rm -rf "$prof"
    painted=$(grep -o 'data-painted-ms="[0-9]*"' "$out/dom" | grep -o '[0-9]*' || echo "?")
    echo "| $set.html | $painted ms | $(echo "$end - $start" | bc) s |"
done

echo
echo "| browse | roots | median time to first screen (80x24) |"
echo "| --- | ---: | ---: |"
for mode in --no-evidence ""; do
    for set in one-root roots; do
        times=()
        for i in $(seq 1 "$runs"); do
            sock="heft-bench-$$"
            printf '#!/bin/sh\nexec %s --store %s browse %s $(cat %s)\n' "$heft" "$store" "$mode" "$store/$set.txt" > "$out/run.sh"
            chmod +x "$out/run.sh"
            start=$(date +%s%N)
            tmux -L "$sock" new-session -d -x 80 -y 24 "$out/run.sh"
            until tmux -L "$sock" capture-pane -p 2>/dev/null | grep -q ' sort: '; do sleep 0.01; done
            end=$(date +%s%N)
            tmux -L "$sock" send-keys q
            sleep 0.2
            tmux -L "$sock" kill-server 2>/dev/null || true
            times+=("$(( (end - start) / 1000000 ))")
        done
        echo "| browse ${mode:-(evidence in background)} $set.txt | $(grep -c . "$store/$set.txt") roots | $(printf '%s\n' "${times[@]}" | median) ms |"
    done
done
