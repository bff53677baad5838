#!/usr/bin/env python3
"""Writes a synthetic binary cache of narinfos, in the real narinfo format,
for the closure-loading benchmark (issue 25): `narinfo_cache.py DIR
[--paths 10000] [--levels 20] [--seed 1]`.

The paths form a layered graph: one root, then LEVELS-1 layers of about
equal size; each path refers to 1 to 5 paths of the next layer and, with
probability 0.2, to one path further down, so the root's closure is most
of the cache and as deep as the layers. Only narinfos and nix-cache-info
are written (no NARs): `nix-heft size` and `nix path-info -r` read nothing
else. Prints the root's store path; DIR/root.txt holds it too.
"""
import argparse
import hashlib
import os
import random

ALPHABET = "0123456789abcdfghijklmnpqrsvwxyz"  # nix-base32


def b32(n_chars, rng):
    return "".join(rng.choice(ALPHABET) for _ in range(n_chars))


def sha256_b32(rng):
    """A random SHA-256 in nix-base32: 52 digits hold 260 bits, so the
    first (highest) digit must leave the top 4 bits zero, or Nix refuses
    the narinfo as corrupt."""
    return rng.choice("01") + b32(51, rng)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--paths", type=int, default=10000)
    ap.add_argument("--levels", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    with open(os.path.join(a.dir, "nix-cache-info"), "w") as f:
        f.write("StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 40\n")
    names = [f"{b32(32, rng)}-pkg{i}-1.0" for i in range(a.paths)]
    per = (a.paths - 1) // (a.levels - 1)
    layers = [[0]]
    start = 1
    for lv in range(1, a.levels):
        end = a.paths if lv == a.levels - 1 else start + per
        layers.append(list(range(start, end)))
        start = end
    refs = {i: set() for i in range(a.paths)}
    # The root refers to half its next layer; the others to a few each.
    refs[0] = set(rng.sample(layers[1], len(layers[1]) // 2))
    for lv in range(1, a.levels - 1):
        for i in layers[lv]:
            refs[i].update(rng.sample(layers[lv + 1], rng.randint(1, 5)))
            if lv + 2 < a.levels and rng.random() < 0.2:
                refs[i].add(rng.choice(layers[rng.randint(lv + 2, a.levels - 1)]))
    for i, name in enumerate(names):
        nar_size = int(rng.lognormvariate(11, 2)) + 120
        digest = hashlib.sha256(name.encode()).hexdigest()
        ref_names = " ".join(sorted(names[r] for r in refs[i]))
        with open(os.path.join(a.dir, name[:32] + ".narinfo"), "w") as f:
            f.write(
                f"StorePath: /nix/store/{name}\n"
                f"URL: nar/{digest}.nar.xz\n"
                "Compression: xz\n"
                f"FileHash: sha256:{sha256_b32(rng)}\n"
                f"FileSize: {nar_size // 3 + 1}\n"
                f"NarHash: sha256:{sha256_b32(rng)}\n"
                f"NarSize: {nar_size}\n"
                f"References: {ref_names}\n"
            )
    root = f"/nix/store/{names[0]}"
    with open(os.path.join(a.dir, "root.txt"), "w") as f:
        f.write(root + "\n")
    print(root)


main()
