#!/usr/bin/env bash
# Time to first screen: nix-tree-rs against `nix-heft browse --no-evidence`,
# same store, same roots, tmux at 80x24, polled every 10 ms until a pane
# border is drawn.
#
# usage: bench/vs-nix-tree.sh STORE_DIR SET [RUNS]
#   SET is roots or one-root (STORE_DIR/SET.txt from bench/gen_store.py)
#   NIX_TREE=path to nix-tree-rs's binary (default /tmp/ntrs/target/release/nix-tree)
#   HEFT=path to nix-heft (default target/release/nix-heft)
#
# nix-tree-rs loads through `nix path-info --json`; Nix 2.8 prints an array,
# which bench/nix-path-info-object.sh (put first on PATH as `nix`) turns
# into the object keyed by path that nix-tree-rs expects.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
store=$1; set=$2; runs=${3:-3}
nix_tree=${NIX_TREE:-/tmp/ntrs/target/release/nix-tree}
heft=${HEFT:-${CARGO_TARGET_DIR:-$here/../target}/release/nix-heft}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
mkdir -p "$out/bin"; cp "$here/nix-path-info-object.sh" "$out/bin/nix"; chmod +x "$out/bin/nix"
for tool in nix-tree nix-heft; do
    times=()
    for i in $(seq 1 "$runs"); do
        sock="vs-nix-tree-$$"
        if [ "$tool" = nix-tree ]; then
            printf '#!/bin/sh\nPATH=%s:$PATH exec %s --store %s $(cat %s)\n' "$out/bin" "$nix_tree" "$store" "$store/$set.txt" > "$out/run.sh"
        else
            printf '#!/bin/sh\nexec %s --store %s browse --no-evidence $(cat %s)\n' "$heft" "$store" "$store/$set.txt" > "$out/run.sh"
        fi
        chmod +x "$out/run.sh"
        start=$(date +%s%N)
        tmux -L "$sock" new-session -d -x 80 -y 24 "$out/run.sh; sleep 60"
        until tmux -L "$sock" capture-pane -p 2>/dev/null | grep -q '[┌╭]'; do sleep 0.01; done
        end=$(date +%s%N)
        tmux -L "$sock" send-keys q; sleep 0.3
        tmux -L "$sock" kill-server 2>/dev/null || true
        times+=("$(( (end - start) / 1000000 ))")
    done
    echo "$tool $set: ${times[*]} ms"
done
