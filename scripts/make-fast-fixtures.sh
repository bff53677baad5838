#!/usr/bin/env bash
# Make the fast test tier's fixtures (tests/testsuite/fast/, `cargo test --test testsuite fast::`)
# with real Nix, and record Nix's own answers beside them, so that the fast
# tests compare nix-heft with Nix without running Nix.
#
#   bash scripts/make-fast-fixtures.sh        (from any directory, as root;
#                                             needs nix-build, nix, nix-store,
#                                             gcc and cargo)
#
# Then `cargo test --test testsuite fast::` and commit tests/fixtures/fast/. Store paths
# are input-addressed, but the ELF files come from the host's gcc, so a
# rebuild on another machine may change hashes: the tests read every path
# from roots.json and every expected answer from nix/, never hard-code one.
#
# What it makes, under tests/fixtures/fast/ (from fast.nix and src/: a
# program linking a library by RUNPATH, the library's dev output, a manual
# named only in documentation, and the program's next version):
#   roots.json       attribute → store path of each output built, and
#                    attribute.drv → its derivation (`nix-store -q --deriver`)
#   store/           a chroot store, as `nix copy --to DIR` makes it:
#                    store/nix/store/… (every output's closure and every
#                    derivation's build closure: .drv files and sources) and
#                    store/nix/var/nix/db/db.sqlite (nothing else of var/)
#   cache/           a signed file:// binary cache of every output's closure
#                    (`nix copy --to 'file://…?secret-key=…'`, xz NARs)
#   cache-plain/     the same for hello-1.0's closure with uncompressed NARs
#                    (`compression=none`), for tests that damage a NAR itself
#   cache.pub        the public key both caches are signed with (the secret
#                    key is thrown away: the tests never sign)
#   other.pub        a key that signed nothing (the "wrong key")
#   nix/             Nix's answers at creation time:
#     path-info.json       `nix path-info -rsS --json --store store/ ROOTS`
#                          (also the path-info JSON input of the tests)
#     cache-path-info.json the same asked of cache/
#     drv-closure/ATTR     `nix-store --store store/ -qR DRV` of each root's
#                          derivation, one path a line
#     references/ATTR      `nix-store --store store/ -q --references OUT`
#   traces/hello-run.json  `nix-heft trace` (this repository's, built by
#                    cargo) of hello-1.0/bin/hello really run: the library
#                    it loads by RUNPATH, the manual it never touches (an
#                    input of `--trace`, whose format is nix-heft's own)
#
# git keeps what the tests need: symlinks and executable bits. It does not
# keep write permissions (Nix's 0555/0444 become git's 0755/0644 on
# checkout; nix-heft opens stores read-only, so the tests do not care) nor
# empty directories (so the packages make none, and this script checks).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$REPO/tests/fixtures/fast"
NIX=(nix --extra-experimental-features nix-command)
ATTRS=(hello hello-2 libgreet libgreet-dev manual data)

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# 1. Build into the real /nix/store (sandbox off: the builders run the
#    host's /bin/sh and gcc), gc roots in the work directory meanwhile.
declare -A path drv
for a in "${ATTRS[@]}"; do
  path[$a]="$(nix-build "$OUT/fast.nix" -A "$a" \
    --option sandbox false --option substituters '' \
    --out-link "$work/result-$a")"
  drv[$a]="$(nix-store -q --deriver "${path[$a]}")"
done
roots=()
drvs=()
for a in "${ATTRS[@]}"; do roots+=("${path[$a]}"); drvs+=("${drv[$a]}"); done

# 2. Fresh outputs.
chmod -R u+w "$OUT/store" 2>/dev/null || true
rm -rf "$OUT/store" "$OUT/cache" "$OUT/cache-plain" "$OUT/nix" \
  "$OUT/roots.json" "$OUT/cache.pub" "$OUT/other.pub" "$OUT/traces"
mkdir -p "$OUT/nix/drv-closure" "$OUT/nix/references" "$OUT/traces"

# 3. Keys: one signs both caches, the other signs nothing.
nix-store --generate-binary-cache-key nix-heft-fast-1 "$work/secret" "$work/public"
nix-store --generate-binary-cache-key nix-heft-fast-other-1 "$work/other-secret" "$work/other-public"
{ cat "$work/public"; echo; } > "$OUT/cache.pub"
{ cat "$work/other-public"; echo; } > "$OUT/other.pub"

# 4. The caches.
"${NIX[@]}" copy --to "file://$OUT/cache?secret-key=$work/secret" "${roots[@]}"
"${NIX[@]}" copy --to "file://$OUT/cache-plain?compression=none&secret-key=$work/secret" \
  "${path[hello]}"

# 5. The chroot store: the outputs' closures, then the derivations' build
#    closures (.drv files and sources).
"${NIX[@]}" copy --no-check-sigs --to "$OUT/store" "${roots[@]}"
"${NIX[@]}" copy --no-check-sigs --derivation --to "$OUT/store" "${drvs[@]}"
# 6. Nix's answers.
"${NIX[@]}" path-info -rsS --json --store "$OUT/store" "${roots[@]}" \
  > "$OUT/nix/path-info.json"
"${NIX[@]}" path-info -rsS --json --store "file://$OUT/cache" "${roots[@]}" \
  > "$OUT/nix/cache-path-info.json"
for a in "${ATTRS[@]}"; do
  nix-store --store "$OUT/store" -qR "${drv[$a]}" > "$OUT/nix/drv-closure/$a"
  nix-store --store "$OUT/store" -q --references "${path[$a]}" > "$OUT/nix/references/$a"
done
{
  echo "{"
  sep=""
  for a in "${ATTRS[@]}"; do
    printf '%s  "%s": "%s",\n  "%s.drv": "%s"' "$sep" "$a" "${path[$a]}" "$a" "${drv[$a]}"
    sep=$',\n'
  done
  printf '\n}\n'
} > "$OUT/roots.json"

# 7. A real run of hello traced (its environment only PATH).
cargo build --quiet --manifest-path "$REPO/Cargo.toml" --bin nix-heft
heft="${CARGO_TARGET_DIR:-$REPO/target}/debug/nix-heft"
env -i PATH=/usr/bin:/bin "$heft" trace -o "$OUT/traces/hello-run.json" -- \
  "${path[hello]}/bin/hello" fast

# 8. Only what a store is made of: of var/ the database alone (Nix has
#    closed it: no WAL side file), no empty .links directory; of the caches,
#    no empty log/ and realisations/ (git would drop them anyway).
chmod -R u+w "$OUT/store"
db="$OUT/store/nix/var/nix/db"
test ! -e "$db/db.sqlite-wal" && test ! -e "$db/db.sqlite-shm"
mv "$db/db.sqlite" "$work/db.sqlite"
rm -rf "$OUT/store/nix/var"
mkdir -p "$db"
mv "$work/db.sqlite" "$db/db.sqlite"
rmdir "$OUT/store/nix/store/.links" "$OUT"/cache{,-plain}/{log,realisations}

# 9. No empty directory (git would drop it and change a NAR), and the size.
empty="$(find "$OUT/store" "$OUT/cache" "$OUT/cache-plain" -type d -empty)"
if [ -n "$empty" ]; then
  echo "empty directories, which git would not keep:" >&2
  echo "$empty" >&2
  exit 1
fi
echo "fixtures: $(du -sh "$OUT" | cut -f1) in $OUT"
cat "$OUT/roots.json"
