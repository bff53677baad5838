#!/usr/bin/env bash
# Rebuild the rocm-mini closure and re-export it for nix-heft's tests.
#
#   bash examples/rocm-mini/rebuild.sh        (from any directory)
#
# 1. nix-build default.nix (llama-cpp-rocm-0.0.0) into the real /nix/store,
#    sandbox off, no substituters (there is no nixpkgs, no binary cache);
#    a gc root is kept at ./result (git-ignored).
# 2. Replace ./cache with a fresh xz file:// binary cache of the closure,
#    signed with a new key made for it (the secret key is thrown away; the
#    public key is written to ./cache.pub, for --trusted-public-keys).
# 3. Write ./path-info.json  (`nix path-info -rsS --json`, array form in Nix 2.8)
#    and ./ROOT (the top-level store path, one line).
# 4. Smoke-test: run result/bin/llama-server and bin/llama-convert.
#
# Store paths are input-addressed, so re-running on another machine yields the
# same paths as long as default.nix and src/ are unchanged (file contents of
# glibc-2.36 come from the host and may differ; see README.md).
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NIX=(nix --extra-experimental-features nix-command)

root="$(nix-build "$DIR/default.nix" \
  --option sandbox false --option substituters '' \
  --out-link "$DIR/result")"

rm -rf "$DIR/cache" "$DIR/path-info.json" "$DIR/ROOT"
keys="$(mktemp -d)"
trap 'rm -rf "$keys"' EXIT
nix-store --generate-binary-cache-key rocm-mini-example-1 "$keys/secret" "$keys/public"
"${NIX[@]}" copy --to "file://$DIR/cache?secret-key=$keys/secret" "$root"
{ cat "$keys/public"; echo; } > "$DIR/cache.pub"
"${NIX[@]}" path-info -rsS --json "$root" > "$DIR/path-info.json"
printf '%s\n' "$root" > "$DIR/ROOT"

"$root/bin/llama-server"
ROCBLAS_GPU_TARGET=gfx90a "$root/bin/llama-server"
"$root/bin/llama-convert" model.safetensors

echo "root:  $root"
echo "cache: $(du -sh "$DIR/cache" | cut -f1) ($(ls "$DIR/cache"/*.narinfo | wc -l) narinfo files)"
"${NIX[@]}" path-info -rsSh "$root"
