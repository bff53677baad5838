#!/usr/bin/env python3
"""Writes the data of the `impact` benchmark (issue 32, bench/impact.sh):
two package sets and a binary cache for each, in the real formats.

    gen_impact.py DIR [--attrs 1000] [--union 20000] [--changed 300] [--seed 1]

DIR/before/default.nix and DIR/after/default.nix are functions `{ ... }:`
of ATTRS attributes, each a trivial `derivation` (builder /bin/sh, never
built; one in twenty has outputs out and dev), so both evaluate in a second
or two. AFTER differs from BEFORE in about CHANGED attributes: their
derivation changes (an extra `rev` attribute), so their out paths change.
The generator evaluates both sets itself (`nix-env -qaP --out-path --json
-f DIR/SIDE --readonly-mode`, as nix-heft's nix-env evaluator does) and
makes each output path the root of a closure drawn from a pool of synthetic
dependency paths:

  * a base of ~2,000 paths in 9 layers (glibc-like paths at the bottom,
    referenced by nearly everything), which most attributes' closures share
    a large part of;
  * ~2,000 shared libraries, each referring to a few nearby libraries of
    lower index and to base paths;
  * per attribute, a private tail (4 to 26 paths, referring to lower paths
    of the same tail, to libraries near the attribute and to base paths).

References only go to paths of lower index (a DAG), every pool path has a
referrer, and the tails are sized so that the union of all closures of
BEFORE is UNION paths (roots included).

AFTER shares every unchanged path (same store path, same narinfo, same NAR).
Its changes: three shared libraries get a new version (one of them with a
new 2 MiB dependency), and every path above them is rebuilt (a new store
path), as in nixpkgs; the remaining changed attributes change in their own
tail: a new dependency (growth), a dropped reference (shrinking) or a
rebuild of other size.

Each cache, DIR/cache-before and DIR/cache-after, holds nix-cache-info, a
narinfo per path (StorePath, URL, Compression: none, FileHash, FileSize,
NarHash, NarSize, References; no signatures: the benchmark passes
--no-require-sigs) and a NAR per path (nar/<FileHash>.nar, valid: a
directory with `nix-support/propagated-build-inputs` naming every
reference, `share/doc/README` naming the first, and a payload file of
log-normal size, median ~2 KB, so that NarSize is the real size).

Also written: DIR/attrs.txt (every attribute, one a line), DIR/expected.json
(per attribute and side: outputs and closure size, the union of the
closures of all outputs, computed here from the graph, for checking
nix-heft), DIR/before-narinfos.txt (the narinfo file name of every path of
the union of BEFORE's closures, for fetching them all), DIR/stats.json.

Python standard library only; deterministic for given options.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys

NIX_BASE32 = "0123456789abcdfghijklmnpqrsvwxyz"


def nix32(digest):
    """Nix's base-32 of a hash (printHash32): last byte first."""
    n = (len(digest) * 8 - 1) // 5 + 1
    out = []
    for i in range(n - 1, -1, -1):
        bit = i * 5
        byte, j = divmod(bit, 8)
        c = digest[byte] >> j
        if byte + 1 < len(digest):
            c |= digest[byte + 1] << (8 - j)
        out.append(NIX_BASE32[c & 0x1F])
    return "".join(out)


def nar_str(b):
    if isinstance(b, str):
        b = b.encode()
    pad = (8 - len(b) % 8) % 8
    return len(b).to_bytes(8, "little") + b + b"\0" * pad


def nar_node(node):
    """A NAR node: bytes for a regular file, a dict for a directory."""
    if isinstance(node, bytes):
        return b"".join(map(nar_str, ["(", "type", "regular", "contents"])) + nar_str(node) + nar_str(")")
    out = [nar_str("("), nar_str("type"), nar_str("directory")]
    for name in sorted(node):
        out += [nar_str("entry"), nar_str("("), nar_str("name"), nar_str(name), nar_str("node")]
        out.append(nar_node(node[name]))
        out.append(nar_str(")"))
    out.append(nar_str(")"))
    return b"".join(out)


def nar(tree):
    return nar_str("nix-archive-1") + nar_node(tree)


class Pool:
    """Store paths: name, references (indices of lower paths), payload size."""

    def __init__(self, rng):
        self.rng = rng
        self.names = []
        self.refs = []
        self.payload = []

    def add(self, name, refs, payload=None):
        h = "".join(self.rng.choice(NIX_BASE32) for _ in range(32))
        self.names.append(f"{h}-{name}")
        self.refs.append(sorted(set(refs)))
        self.payload.append(payload if payload is not None else min(int(self.rng.lognormvariate(7.6, 1.0)), 1 << 17))
        return len(self.names) - 1


def closure(roots, refs):
    seen = set()
    stack = list(roots)
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        stack.extend(refs[p])
    return seen


def evaluate(side_dir):
    out = subprocess.run(
        ["nix-env", "-qaP", "--out-path", "--json", "-f", side_dir, "--readonly-mode"],
        check=True, capture_output=True, text=True,
    ).stdout
    return {a: r["outputs"] for a, r in json.loads(out).items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--attrs", type=int, default=1000)
    ap.add_argument("--union", type=int, default=20000)
    ap.add_argument("--changed", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    if os.path.exists(a.dir):
        shutil.rmtree(a.dir)
    os.makedirs(a.dir)
    n = a.attrs
    scale = n / 1000
    pool = Pool(rng)

    # The base: layer 0 is glibc-like, layers 1..8 on a circle each.
    base_layers = [[pool.add(f"base0-lib{i}-2.38", []) for i in range(20)]]
    for i in base_layers[0][1:]:
        pool.refs[i] = [base_layers[0][0]]
    per_layer = max(10, int(2000 * scale - 20) // 8)
    for lv in range(1, 9):
        below = base_layers[lv - 1]
        layer = []
        for i in range(per_layer):
            pos = i / per_layer
            refs = [base_layers[0][0]] if rng.random() < 0.95 else []
            k = len(below)
            centre = int(pos * k)
            for _ in range(rng.randint(1, 3)):
                refs.append(below[(centre + rng.randint(-4, 4)) % k])
            if lv > 1 and rng.random() < 0.3:
                refs.append(rng.choice(base_layers[rng.randrange(lv - 1)]))
            layer.append(pool.add(f"base{lv}-p{i}-1.{lv}", refs))
        base_layers.append(layer)
    base = [p for layer in base_layers for p in layer]
    top_base = base_layers[-1] + base_layers[-2]

    # Shared libraries: each near a position, referring to lower libraries
    # nearby and to base paths.
    n_libs = int(2000 * scale)
    libs = []
    for i in range(n_libs):
        refs = [rng.choice(top_base) for _ in range(rng.randint(1, 4))]
        if i > 0:
            for _ in range(rng.randint(0, 3)):
                refs.append(libs[max(0, i - rng.randint(1, 40))])
        libs.append(pool.add(f"lib{i}-{rng.randint(1, 9)}.{rng.randint(0, 20)}", refs))

    # Attributes: names, outputs, tails sized so the union is UNION paths.
    attrs = [f"pkg{i:04d}" for i in range(n)]
    multi = {at for at in attrs if rng.random() < 0.05}
    n_roots = n + len(multi)
    tail_total = a.union - len(base) - n_libs - n_roots
    if tail_total < n * 4:
        sys.exit(f"--union {a.union} too small for {n} attributes")
    sizes = [rng.randint(4, 26) for _ in range(n)]
    f = tail_total / sum(sizes)
    sizes = [max(1, round(s * f)) for s in sizes]
    sizes[-1] += tail_total - sum(sizes)
    tails = {}
    near_libs = {}
    for j, at in enumerate(attrs):
        centre = int(j / n * n_libs)
        near = [libs[(centre + d) % n_libs] for d in range(-30, 31)]
        near_libs[at] = near
        tail = []
        for t in range(sizes[j]):
            refs = [rng.choice(top_base) for _ in range(rng.randint(1, 3))]
            refs += [rng.choice(near) for _ in range(rng.randint(0, 2))]
            if tail:
                refs += rng.sample(tail, min(len(tail), rng.randint(1, 2)))
            tail.append(pool.add(f"{at}-part{t}-1.0", refs))
        tails[at] = tail

    # Root references (pool indices), per attribute and output.
    root_refs = {}
    for at in attrs:
        tail = tails[at]
        referenced = {r for p in tail for r in pool.refs[p]}
        tops = [p for p in tail if p not in referenced]
        refs = tops + rng.sample(near_libs[at], rng.randint(1, 4)) + [rng.choice(top_base) for _ in range(2)]
        root_refs[at] = {"out": refs}
        if at in multi:
            root_refs[at]["dev"] = [rng.choice(base) for _ in range(3)]  # plus out itself
    # Every pool path gets a referrer: an orphan library goes to a root
    # near it, an orphan base path to a random library.
    referenced = {r for rs in pool.refs for r in rs} | {
        r for at in attrs for rs in root_refs[at].values() for r in rs}
    for j, lib in enumerate(libs):
        if lib not in referenced:
            root_refs[attrs[min(n - 1, int(j / n_libs * n))]]["out"].append(lib)
            referenced.add(lib)
    for p in base:
        if p not in referenced:
            pool.refs[rng.choice(libs)].append(p)
            referenced.add(p)
    n_before_pool = len(pool.names)

    # AFTER: which attributes change and how. A pool path changes when it
    # is modified or one of its references changes (a rebuild: new store
    # path); an attribute changes when a root reference changes.
    bumped_libs = []
    dependents = {}
    attr_closures = [closure(root_refs[at]["out"], pool.refs) for at in attrs]
    for lib in rng.sample(libs, min(len(libs), 200)):
        c = sum(1 for cl in attr_closures if lib in cl)
        dependents[lib] = c
        if 20 <= c <= 60 * scale + 20:
            bumped_libs.append(lib)
        if len(bumped_libs) == 3:
            break
    bloat = pool.add("libbloat-0.9", [base_layers[0][0]], payload=2 << 20)
    modify = {}  # pool index -> (extra refs, dropped refs, payload factor)
    for k, lib in enumerate(bumped_libs):
        modify[lib] = ([bloat] if k == 0 else [], [], 1.0 + 0.1 * k)
    after_refs_of = {}

    def after_changed(pool_refs):
        changed = set()
        for p in range(len(pool.names)):
            if p in modify or any(r in changed for r in pool_refs(p)):
                changed.add(p)
        return changed

    def pool_after_refs(p):
        extra, dropped, _ = modify.get(p, ([], [], 1))
        return [r for r in pool.refs[p] if r not in dropped] + extra

    def changed_attrs():
        ch = after_changed(pool_after_refs)
        return ch, {at for at in attrs
                    if any(r in ch for rs in root_refs[at].values() for r in rs)}

    ch, by_libs = changed_attrs()
    own = [at for at in attrs if at not in by_libs]
    rng.shuffle(own)
    own_changes = own[: max(0, a.changed - len(by_libs))]
    kinds = {}
    for i, at in enumerate(own_changes):
        tail = tails[at]
        p = rng.choice(tail)
        kind = ("grow", "shrink", "rebuild")[i % 3]
        if kind == "grow":
            new = pool.add(f"{at}-newdep-2.0", [rng.choice(top_base)],
                           payload=int(rng.lognormvariate(11, 1.5)) + 64)
            modify[p] = ([new], [], 1.0)
        elif kind == "shrink" and pool.refs[p]:
            modify[p] = ([], [rng.choice(pool.refs[p])], 1.0)
        else:
            modify[p] = ([], [], rng.choice((0.5, 0.8, 1.25, 2.0)))
        kinds[at] = kind
    ch, changed = changed_attrs()

    # The package sets. A changed attribute gets `rev = "2"`.
    mk = ('  mk = name: outputs: extra: derivation ({ inherit name outputs; '
          'system = "x86_64-linux"; builder = "/bin/sh"; '
          'args = [ "-c" "echo never built; exit 1" ]; } // extra);\n')
    for side in ("before", "after"):
        d = os.path.join(a.dir, side)
        os.makedirs(d)
        with open(os.path.join(d, "default.nix"), "w") as fh:
            fh.write("# Written by bench/gen_impact.py: never built, evaluated only.\n{ ... }:\nlet\n")
            fh.write(mk + "in\n{\n")
            for at in attrs:
                outs = '[ "out" "dev" ]' if at in multi else '[ "out" ]'
                extra = '{ rev = "2"; }' if side == "after" and at in changed else "{ }"
                fh.write(f'  {at} = mk "{at}-1.0" {outs} {extra};\n')
            fh.write("}\n")
    outputs = {side: evaluate(os.path.join(a.dir, side)) for side in ("before", "after")}
    for side in outputs:
        if set(outputs[side]) != set(attrs):
            sys.exit(f"nix-env listed other attributes than written for {side}")

    # Each side's graph as store path basename -> (refs, payload).
    def side_graph(side):
        g = {}
        if side == "before":
            name = list(pool.names)
            refs_of = lambda p: pool.refs[p]
            pay = list(pool.payload)
        else:
            name = list(pool.names)
            pay = list(pool.payload)
            srng = random.Random(a.seed + 7)
            for p in sorted(ch):
                h = "".join(srng.choice(NIX_BASE32) for _ in range(32))
                base_name = pool.names[p][33:]
                if p in bumped_libs:
                    base_name = base_name + ".1"  # a new version
                name[p] = f"{h}-{base_name}"
                pay[p] = int(pay[p] * modify.get(p, ([], [], 1.0))[2])
            refs_of = pool_after_refs
        for at in attrs:
            outs = outputs[side][at]
            for o, path in outs.items():
                bn = path[len("/nix/store/"):]
                rr = [name[r] for r in root_refs[at].get(o, [])]
                if o == "dev":
                    rr.append(outs["out"][len("/nix/store/"):])
                g[bn] = (rr, 256 + len(at) * 16)
        idx = {}
        stack = [r for at in attrs for o in root_refs[at] for r in root_refs[at][o]]
        while stack:
            p = stack.pop()
            if p in idx:
                continue
            idx[p] = True
            stack.extend(refs_of(p))
        for p in idx:
            g[name[p]] = ([name[r] for r in refs_of(p)], pay[p])
        return g

    graphs = {side: side_graph(side) for side in ("before", "after")}

    # The caches.
    infos = {}
    for side, g in graphs.items():
        cache = os.path.join(a.dir, f"cache-{side}")
        os.makedirs(os.path.join(cache, "nar"))
        with open(os.path.join(cache, "nix-cache-info"), "w") as fh:
            fh.write("StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 40\n")
        sizes_of = {}
        for bn, (refs, payload) in g.items():
            rs = sorted(set(refs))
            tree = {
                "nix-support": {"propagated-build-inputs": " ".join(f"/nix/store/{r}" for r in rs).encode() + b"\n"},
                "share": {
                    "doc": {"README": (f"{bn[33:]}: built with /nix/store/{rs[0]}\n" if rs else f"{bn[33:]}\n").encode()},
                    "data": (b"synthetic payload line\n" * (payload // 23 + 1))[:payload],
                },
            }
            data = nar(tree)
            file_hash = nix32(hashlib.sha256(data).digest())
            nar_path = os.path.join(cache, "nar", file_hash + ".nar")
            if not os.path.exists(nar_path):
                with open(nar_path, "wb") as fh:
                    fh.write(data)
            sizes_of[bn] = len(data)
            with open(os.path.join(cache, bn[:32] + ".narinfo"), "w") as fh:
                fh.write(
                    f"StorePath: /nix/store/{bn}\n"
                    f"URL: nar/{file_hash}.nar\n"
                    "Compression: none\n"
                    f"FileHash: sha256:{file_hash}\n"
                    f"FileSize: {len(data)}\n"
                    f"NarHash: sha256:{file_hash}\n"
                    f"NarSize: {len(data)}\n"
                    f"References: {' '.join(rs)}\n"
                )
        infos[side] = sizes_of

    # Expected closure sizes, and the figures of the shape.
    expected = {}
    closure_paths = {"before": [], "after": []}
    union = {"before": set(), "after": set()}
    for at in attrs:
        e = {}
        for side, g in graphs.items():
            roots = [p[len("/nix/store/"):] for p in outputs[side][at].values()]
            seen = set()
            stack = list(roots)
            while stack:
                p = stack.pop()
                if p in seen:
                    continue
                seen.add(p)
                stack.extend(g[p][0])
            union[side] |= seen
            closure_paths[side].append(len(seen))
            e[side] = {"outputs": outputs[side][at], "closure_size": sum(infos[side][p] for p in seen),
                       "closure_paths": len(seen)}
        e["changed"] = outputs["before"][at] != outputs["after"][at]
        e["kind"] = kinds.get(at, "shared-library" if at in by_libs else None)
        expected[at] = e
    with open(os.path.join(a.dir, "expected.json"), "w") as fh:
        json.dump(expected, fh, indent=1, sort_keys=True)
    with open(os.path.join(a.dir, "attrs.txt"), "w") as fh:
        fh.write("".join(at + "\n" for at in attrs))
    with open(os.path.join(a.dir, "before-narinfos.txt"), "w") as fh:
        fh.write("".join(p[:32] + ".narinfo\n" for p in sorted(union["before"])))
    n_changed = sum(1 for e in expected.values() if e["changed"])
    grown = sum(1 for e in expected.values() if e["after"]["closure_size"] > e["before"]["closure_size"])
    shrunk = sum(1 for e in expected.values() if e["after"]["closure_size"] < e["before"]["closure_size"])
    stats = {
        "attributes": n,
        "multi_output": len(multi),
        "changed": n_changed,
        "changed_by_shared_libraries": len(by_libs),
        "bumped_library_dependents": [dependents[lib] for lib in bumped_libs],
        "grown": grown,
        "shrunk": shrunk,
        "union_before": len(union["before"]),
        "union_after": len(union["after"]),
        "union_both": len(union["before"] | union["after"]),
        "paths_only_after": len(union["after"] - union["before"]),
        "closure_paths_median": {s: statistics.median(v) for s, v in closure_paths.items()},
        "closure_paths_max": {s: max(v) for s, v in closure_paths.items()},
        "closure_paths_sum": {s: sum(v) for s, v in closure_paths.items()},
        "pool_paths": n_before_pool,
    }
    with open(os.path.join(a.dir, "stats.json"), "w") as fh:
        json.dump(stats, fh, indent=1)
    print(json.dumps(stats))


main()
