#!/usr/bin/env python3
"""Generate a large synthetic chroot Nix store for benchmarking nix-heft.

The store at ROOT uses Nix's real SQLite schema (ROOT/nix/var/nix/db/db.sqlite,
schema version 10), so that both

    nix --extra-experimental-features nix-command path-info --store ROOT -rS PATH
    nix-heft --store ROOT size --json PATH

work on it. Only the database is written: no ROOT/nix/store/<path> entries
are created (nix path-info reads the database only; pass --mkdirs to create
empty directories anyway).

Shape (roughly like a nixpkgs-derived store):
  * a base layer (glibc, gcc-lib, zlib, bash, coreutils, ...) that nearly
    every path references;
  * a layered DAG (--depth layers; a path only references lower layers, and
    each path above the base references the layer just below it, so the
    longest reference chain is about --depth);
  * references are "local": every path has a position on a circle (its
    ecosystem / neighbourhood) and mostly references paths close to it,
    plus some references to popular libraries, so typical closures have a few
    hundred to a few thousand paths rather than the whole store;
  * heavy-tailed out-degree (median ~4, env-like aggregates with hundreds of
    references, a few system-path-like roots with thousands);
  * log-normal NAR sizes from ~100 bytes to a few GB (multiples of 8, as
    real NARs are).

Every path below the top layer has at least one referrer, so the top layer
(written to ROOT/roots.txt) covers the whole store. ROOT/one-root.txt holds
the biggest system path. ROOT/stats.json records parameters and statistics.

Deterministic for a given (--seed, --paths, --refs, --depth).
Uses only the Python standard library.
"""

import argparse
import bisect
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import deque

NIX_BASE32 = "0123456789abcdfghijklmnpqrsvwxyz"

# The schema Nix 2.8 writes (`nix-store --store ROOT --init`, schema version
# 10). Used only when nix-store is not on PATH (or with --no-nix-init).
FALLBACK_SCHEMA = """
CREATE TABLE IF NOT EXISTS ValidPaths (
    id               integer primary key autoincrement not null,
    path             text unique not null,
    hash             text not null,
    registrationTime integer not null,
    deriver          text,
    narSize          integer,
    ultimate         integer, -- null implies "false"
    sigs             text, -- space-separated
    ca               text -- if not null, an assertion that the path is content-addressed; see ValidPathInfo
);
CREATE TABLE IF NOT EXISTS Refs (
    referrer  integer not null,
    reference integer not null,
    primary key (referrer, reference),
    foreign key (referrer) references ValidPaths(id) on delete cascade,
    foreign key (reference) references ValidPaths(id) on delete restrict
);
CREATE INDEX IF NOT EXISTS IndexReferrer on Refs(referrer);
CREATE INDEX IF NOT EXISTS IndexReference on Refs(reference);
CREATE TRIGGER IF NOT EXISTS DeleteSelfRefs before delete on ValidPaths
  begin
    delete from Refs where referrer = old.id and reference = old.id;
  end;
CREATE TABLE IF NOT EXISTS DerivationOutputs (
    drv  integer not null,
    id   text not null, -- symbolic output id, usually "out"
    path text not null,
    primary key (drv, id),
    foreign key (drv) references ValidPaths(id) on delete cascade
);
CREATE INDEX IF NOT EXISTS IndexDerivationOutputs on DerivationOutputs(path);
"""

BASE_NAMES = [
    "glibc-2.38-44", "gcc-13.2.0-lib", "libgcc-13.2.0", "zlib-1.3", "bash-5.2-p21",
    "coreutils-9.4", "xgcc-13.2.0-libgcc", "libidn2-2.3.4", "libunistring-1.1",
    "gnugrep-3.11", "gnused-4.9", "gawk-5.2.2", "findutils-4.9.0", "diffutils-3.10",
    "gnutar-1.35", "gzip-1.13", "bzip2-1.0.8", "xz-5.4.5", "attr-2.5.1", "acl-2.3.1",
    "gmp-with-cxx-6.3.0", "openssl-3.0.12", "ncurses-6.4", "readline-8.2p7",
    "libffi-3.4.4", "expat-2.5.0", "pcre2-10.42", "sqlite-3.44.2", "libxml2-2.11.5",
    "util-linux-minimal-2.39.2-lib", "systemd-minimal-libs-254.6", "libcap-2.69-lib",
    "tzdata-2023c", "iana-etc-20231117", "mailcap-2.1.53", "bash-interactive-5.2-p21",
    "perl-5.38.2", "python3-3.11.7", "gnumake-4.4.1", "which-2.21",
]

ECOSYSTEMS = [
    # (prefix, weight, output suffixes)
    ("", 30, ["", "", "", "-lib", "-bin", "-dev", "-man", "-doc", "-out"]),
    ("python3.11-", 14, ["", "", "", "-dist"]),
    ("haskell-", 6, ["", "", "-doc", "-data"]),
    ("perl5.38.2-", 6, ["", "", "-devdoc"]),
    ("node-", 6, [""]),
    ("rust-", 4, [""]),
    ("go-", 4, [""]),
    ("emacs-", 3, [""]),
    ("vim-plugin-", 2, [""]),
    ("ocaml5.1.0-", 2, [""]),
    ("texlive-", 5, ["", "-tex", "-doc"]),
    ("gst-plugins-", 1, [""]),
    ("kde-", 3, ["", "-dev", "-bin"]),
    ("gnome-", 3, ["", "-dev", "-devdoc"]),
    ("xorg-", 3, ["", "-dev"]),
    ("R-", 2, [""]),
    ("lua5.4-", 1, [""]),
    ("ruby3.1-", 2, [""]),
    ("php-ext-", 1, [""]),
    ("qt6-", 2, ["", "-dev", "-bin"]),
]

SYLLABLES = ["lib", "py", "gtk", "x", "net", "core", "util", "foo", "zen", "qt",
             "kit", "io", "ssl", "http", "json", "yaml", "sql", "mark", "crypt",
             "audio", "video", "img", "font", "term", "web", "data", "parse",
             "math", "sci", "geo", "cli", "fs", "dbus", "gl", "sdl", "vk", "mq",
             "log", "test", "doc", "async", "rpc", "cache", "sync", "time"]


def nix_hash_part(rng):
    return "".join(NIX_BASE32[rng.getrandbits(5)] for _ in range(32))


def version(rng):
    k = rng.choice([2, 3, 3, 3, 4])
    parts = [str(rng.choice([0, 0, 1, 1, 2, 3, 4, 5, 9, 12, 23])) if i == 0
             else str(rng.randrange(0, 40)) for i in range(k)]
    if rng.random() < 0.08:
        return "unstable-2023-%02d-%02d" % (rng.randrange(1, 13), rng.randrange(1, 29))
    return ".".join(parts)


def pkg_name(rng, eco):
    prefix, _w, suffixes = eco
    n = rng.choice([1, 1, 2, 2, 2, 3])
    word = "".join(rng.choice(SYLLABLES) for _ in range(n))
    if rng.random() < 0.3:
        word += "-" + rng.choice(SYLLABLES)
    return prefix + word + "-" + version(rng) + rng.choice(suffixes)


def nar_size(rng, median, sigma):
    s = int(rng.lognormvariate(math.log(median), sigma))
    s = max(96, min(s, 4 * 1024 ** 3))
    return (s + 7) // 8 * 8


def init_db(root, use_nix):
    db_dir = os.path.join(root, "nix", "var", "nix", "db")
    db_path = os.path.join(db_dir, "db.sqlite")
    if use_nix and shutil.which("nix-store"):
        # Let Nix create the database itself: the real schema, pragmas
        # (WAL) and the schema version file.
        subprocess.run(["nix-store", "--store", root, "--init"], check=True)
        how = "nix-store --init"
    else:
        os.makedirs(db_dir, exist_ok=True)
        os.makedirs(os.path.join(root, "nix", "store"), exist_ok=True)
        conn = sqlite3.connect(db_path)
        conn.execute("pragma journal_mode = wal")
        conn.executescript(FALLBACK_SCHEMA)
        conn.commit()
        conn.close()
        with open(os.path.join(db_dir, "schema"), "w") as f:
            f.write("10")
        how = "built-in copy of the Nix 2.8 schema"
    if not os.path.exists(db_path):
        sys.exit("error: %s was not created" % db_path)
    return db_path, how


def calibrate(zs, target):
    """Find c so that sum(max(1, round(c*z))) is about target."""
    lo, hi = 0.0, 1.0
    while sum(max(1, round(hi * z)) for z in zs) < target and hi < 1e6:
        hi *= 2
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(max(1, round(mid * z)) for z in zs) < target:
            lo = mid
        else:
            hi = mid
    return hi


class Layer:
    """Nodes of one layer, sorted by position on the unit circle."""

    def __init__(self, nodes, pos, rng, popular_frac):
        self.nodes = sorted(nodes, key=lambda i: pos[i])
        self.pos = [pos[i] for i in self.nodes]
        # a few popular libraries per layer, Zipf-weighted
        k = max(1, int(len(nodes) * popular_frac))
        self.pop_nodes = rng.sample(nodes, k)
        cum, acc = [], 0.0
        for r in range(k):
            acc += 1.0 / (r + 1)
            cum.append(acc)
        self.cum = cum

    def near(self, p):
        k = bisect.bisect_left(self.pos, p)
        n = len(self.nodes)
        a, b = self.nodes[k % n], self.nodes[(k - 1) % n]
        da = abs(self.pos[k % n] - p)
        db = abs(self.pos[(k - 1) % n] - p)
        return a if min(da, 1 - da) <= min(db, 1 - db) else b

    def popular(self, rng):
        x = rng.random() * self.cum[-1]
        return self.pop_nodes[min(bisect.bisect_left(self.cum, x), len(self.cum) - 1)]


def closure(refs, roots):
    seen = set(roots)
    dq = deque(roots)
    while dq:
        v = dq.popleft()
        for w in refs[v]:
            if w not in seen:
                seen.add(w)
                dq.append(w)
    return seen


def generate(args):
    rng = random.Random(args.seed)
    N = args.paths
    D = args.depth
    n_base = min(len(BASE_NAMES), max(5, N // 50))
    n_sys = max(1, min(args.systems, N // 100))
    n_top = max(n_sys + 1, int(N * args.top_frac))
    n_mid = N - n_base - n_top
    if n_mid < (D - 2) * 2:
        sys.exit("error: --paths too small for --depth")

    # --- layers ------------------------------------------------------------
    # Layer 0: base. Layers 1..D-2: middle, mildly growing upwards.
    # Layer D-1: top (roots), including the system paths.
    weights = [1.0 + 0.06 * L for L in range(1, D - 1)]
    tw = sum(weights)
    sizes = [int(n_mid * w / tw) for w in weights]
    sizes[-1] += n_mid - sum(sizes)
    layer_of = []
    layer_of += [0] * n_base
    for L, s in enumerate(sizes, start=1):
        layer_of += [L] * s
    layer_of += [D - 1] * n_top
    assert len(layer_of) == N

    eco_w = [e[1] for e in ECOSYSTEMS]
    pos = [rng.random() for _ in range(N)]

    kind = ["normal"] * N
    for i in range(n_base):
        kind[i] = "base"
    top_ids = list(range(N - n_top, N))
    sys_ids = top_ids[-n_sys:]
    for i in sys_ids:
        kind[i] = "system"
    for i in range(n_base, N - n_sys):
        if layer_of[i] >= D - 5 and rng.random() < args.agg_frac:
            kind[i] = "env"

    names = []
    for i in range(N):
        if kind[i] == "base":
            names.append(BASE_NAMES[i])
        elif kind[i] == "system":
            k = i - sys_ids[0]
            names.append(("nixos-system-host%d-23.11.20231201.abcdef%d" % (k, k))
                         if k % 2 == 0 else "system-path")
        elif kind[i] == "env":
            names.append(rng.choice(["python3-3.11.7-env", "ghc-9.4.8-with-packages",
                                     "perl-5.38.2-env", "texlive-combined-full-2023",
                                     "emacs-with-packages-29.1", "node-env",
                                     "R-4.3.2-wrapper", "user-environment"]))
        else:
            names.append(pkg_name(rng, rng.choices(ECOSYSTEMS, eco_w)[0]))

    layers = [None] * D
    for L in range(1, D):
        layers[L] = Layer([i for i in range(N) if layer_of[i] == L], pos, rng,
                          args.popular_frac)

    # --- out-degrees ---------------------------------------------------------
    # base-layer refs: glibc nearly always, the others by falling popularity.
    base_p = [0.96, 0.45] + [0.3 / (k ** 1.1) for k in range(2, n_base)]
    env_deg = {}
    sys_deg = {}
    for i in range(N):
        if kind[i] == "env":
            env_deg[i] = int(min(1500, 30 * rng.paretovariate(1.2)))
        elif kind[i] == "system":
            sys_deg[i] = int(args.system_refs * (0.5 + rng.random()))
    expected_base = sum(base_p) * (N - n_base)
    fixed = sum(env_deg.values()) + sum(sys_deg.values()) + expected_base
    normal_ids = [i for i in range(n_base, N) if kind[i] == "normal"]
    zs = [rng.lognormvariate(0.0, args.sigma) for _ in normal_ids]
    # (about 10-15% of drawn references are duplicates and are dropped)
    target_rest = max(len(normal_ids), 1.15 * (args.refs - fixed) - 0.04 * N)
    c = calibrate(zs, target_rest)
    norm_deg = {i: max(1, round(c * z)) for i, z in zip(normal_ids, zs)}

    refs = [set() for _ in range(N)]
    # locality window: std-dev in units of "nodes of a layer", so that
    # closure sizes do not depend much on the store size.
    def width_of(L):
        return args.window / len(layers[L].nodes)

    def pick_lower(i, L, wmul, popular_p):
        if rng.random() < popular_p:
            # popular libraries live in the low layers
            Lp = min(L - 1, 1 + int(rng.expovariate(args.popular_decay)))
            return layers[Lp].popular(rng)
        # a layer (mostly the one just below), then a node near our position
        Lp = L - 1 - min(L - 2, int(rng.expovariate(0.6)))
        p = (pos[i] + rng.gauss(0.0, wmul * width_of(Lp))) % 1.0
        return layers[Lp].near(p)

    for i in range(N):
        L = layer_of[i]
        r = refs[i]
        if kind[i] == "base":
            # base paths reference glibc and a few earlier base paths, in
            # three tiers (glibc; the next 9; the rest), so the base adds at
            # most 2 to the longest chain.
            if i > 0:
                r.add(0)
                lim = 1 if i < 10 else 10
                for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                    r.add(rng.randrange(lim))
            continue
        # base-layer references
        for b in range(n_base):
            if rng.random() < base_p[b]:
                r.add(b)
        if kind[i] == "system":
            # system-path-like: many packages from a few neighbourhoods
            # (the host's "interests"), biased towards the upper layers
            # (applications).
            want = sys_deg[i]
            centers = [rng.random() for _ in range(args.system_spots)]
            for _ in range(want * 3):
                if len(r) >= want:
                    break
                Lp = max(1, D - 2 - int(rng.expovariate(0.25)))
                p = (rng.choice(centers) + rng.gauss(0.0, args.system_spread)) % 1.0
                r.add(layers[Lp].near(p))
            continue
        if L == 1:
            want = min(n_base, norm_deg.get(i, 1))
            while len(r) < want:
                r.add(rng.randrange(n_base))
            if not r:
                r.add(0)
            continue
        # always one reference to the layer just below (keeps depth ~ D)
        r.add(layers[L - 1].near((pos[i] + rng.gauss(0.0, width_of(L - 1))) % 1.0))
        if kind[i] == "env":
            want = len(r) + env_deg[i]
            wmul, popular_p = args.env_window, args.popular
        else:
            want = len(r) + norm_deg[i] - 1
            wmul, popular_p = 1.0, args.popular
        for _ in range(want * 3):
            if len(r) >= want:
                break
            r.add(pick_lower(i, L, wmul, popular_p))

    # --- make sure everything below the top layer has a referrer -----------
    has_referrer = bytearray(N)
    for i in range(N):
        for j in refs[i]:
            has_referrer[j] = 1
    attached = 0
    for i in range(N - n_top):  # ids are in ascending layer order
        if has_referrer[i]:
            continue
        L = layer_of[i]
        up = min(D - 1, L + 1 + int(rng.expovariate(1.0)))
        if i < n_base:
            up = 1 + int(rng.expovariate(0.5)) % (D - 1)
        j = layers[up].near((pos[i] + rng.gauss(0.0, width_of(up))) % 1.0)
        refs[j].add(i)
        has_referrer[i] = 1
        attached += 1

    return dict(N=N, D=D, n_base=n_base, n_top=n_top, n_sys=n_sys, sizes=sizes,
                layer_of=layer_of, names=names, kind=kind, refs=refs,
                top_ids=top_ids, sys_ids=sys_ids, attached=attached)


def write_db(args, g, db_path):
    rng = random.Random(args.seed * 7919 + 1)
    N = g["N"]
    paths = ["/nix/store/%s-%s" % (nix_hash_part(rng), g["names"][i]) for i in range(N)]
    if len(set(paths)) != N:
        sys.exit("error: store path collision (should not happen)")
    sizes = []
    for i in range(N):
        k = g["kind"][i]
        if k == "system":
            sizes.append(nar_size(rng, 2_000_000, 0.5))
        elif k == "env":
            sizes.append(nar_size(rng, 300_000, 1.0))
        elif k == "base":
            sizes.append(nar_size(rng, 5_000_000, 1.2))
        else:
            sizes.append(nar_size(rng, args.nar_median, args.nar_sigma))

    t0 = 1_700_000_000
    rows = []
    for i in range(N):
        h = "sha256:%064x" % rng.getrandbits(256)
        deriver = "/nix/store/%s-%s.drv" % (nix_hash_part(rng), g["names"][i])
        sigs = None
        if rng.random() < 0.7:
            sigs = "cache.nixos.org-1:" + "".join(
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                for _ in range(86)) + "=="
        rows.append((i + 1, paths[i], h, t0 + i * 7, deriver, sizes[i], None, sigs, None))

    # Valid derivations for a fraction of the paths (--drvs): each built
    # path's deriver, its `DerivationOutputs` row, and references to the
    # derivations of its references (their inputDrvs), as Nix registers
    # them; what keep-outputs and keep-derivations follow.
    drv_rows, drv_refs, drv_outputs = [], [], []
    if args.drvs > 0:
        drng = random.Random(args.seed * 104729 + 3)
        built = sorted(i for i in range(g["n_base"], N) if drng.random() < args.drvs)
        drv_id = {}
        for k, i in enumerate(built):
            drv_id[i] = N + 1 + k
        for i in built:
            d = drv_id[i]
            dpath = "/nix/store/%s-%s.drv" % (nix_hash_part(drng), g["names"][i])
            drv_rows.append((d, dpath, "sha256:%064x" % drng.getrandbits(256),
                             t0 + i * 7 - 1, None, nar_size(drng, 2000, 0.6), None, None, None))
            drv_outputs.append((d, "out", paths[i]))
            drv_refs.extend((d, drv_id[j]) for j in sorted(g["refs"][i]) if j in drv_id)
            row = rows[i]
            rows[i] = row[:4] + (dpath,) + row[5:]
        g["drv_count"] = len(built)
        g["drv_paths"] = [r[1] for r in drv_rows]

    conn = sqlite3.connect(db_path)
    conn.execute("pragma foreign_keys = 1")
    conn.execute("pragma synchronous = off")
    conn.execute("pragma cache_size = -1000000")
    with conn:  # one transaction
        n_old = conn.execute("select count(*) from ValidPaths").fetchone()[0]
        if n_old:
            sys.exit("error: %s already has %d paths (use --force)" % (db_path, n_old))
        conn.executemany(
            "insert into ValidPaths (id, path, hash, registrationTime, deriver, "
            "narSize, ultimate, sigs, ca) values (?,?,?,?,?,?,?,?,?)", rows)
        conn.executemany(
            "insert into Refs (referrer, reference) values (?, ?)",
            ((i + 1, j + 1) for i in range(N) for j in sorted(g["refs"][i])))
        if drv_rows:
            conn.executemany(
                "insert into ValidPaths (id, path, hash, registrationTime, deriver, "
                "narSize, ultimate, sigs, ca) values (?,?,?,?,?,?,?,?,?)", drv_rows)
            conn.executemany("insert into Refs (referrer, reference) values (?, ?)", drv_refs)
            conn.executemany(
                "insert into DerivationOutputs (drv, id, path) values (?, ?, ?)", drv_outputs)
    conn.execute("pragma wal_checkpoint(TRUNCATE)")
    conn.close()
    return paths, sizes


def stats(args, g, paths, sizes, gen_secs):
    N, refs, layer_of = g["N"], g["refs"], g["layer_of"]
    deg = [len(r) for r in refs]
    n_refs = sum(deg)
    # longest reference chain (ids are topologically ordered: refs point down)
    depth = [0] * N
    for i in range(N):
        if refs[i]:
            depth[i] = 1 + max(depth[j] for j in refs[i])
    rng = random.Random(args.seed + 12345)
    sample = rng.sample(range(N), min(300, N))
    csz = sorted(len(closure(refs, [i])) for i in sample)
    plain_top = g["top_ids"][:-g["n_sys"]]  # never empty: n_top > n_sys
    top_sample = rng.sample(plain_top, min(100, len(plain_top)))
    top_csz = sorted(len(closure(refs, [i])) for i in top_sample)
    sys_cl = {i: len(closure(refs, [i])) for i in g["sys_ids"]}
    one_root = max(sys_cl, key=lambda i: sys_cl[i])
    one_cl = closure(refs, [one_root])
    union = closure(refs, g["top_ids"])
    s_sorted = sorted(sizes)

    def pct(a, q):
        return a[min(len(a) - 1, int(q * len(a)))]

    return dict(
        params=dict(seed=args.seed, paths=args.paths, refs_target=args.refs,
                    depth=args.depth, version=GEN_VERSION),
        paths=N,
        refs=n_refs,
        base_paths=g["n_base"],
        layer_sizes=[g["n_base"]] + g["sizes"] + [g["n_top"]],
        roots=len(g["top_ids"]),
        system_paths=len(g["sys_ids"]),
        orphans_attached=g["attached"],
        out_degree=dict(median=statistics.median(deg), mean=round(n_refs / N, 2),
                        p90=pct(sorted(deg), 0.9), p99=pct(sorted(deg), 0.99),
                        max=max(deg)),
        longest_chain=max(depth),
        nar_size=dict(min=s_sorted[0], median=pct(s_sorted, 0.5),
                      p99=pct(s_sorted, 0.99), max=s_sorted[-1], total=sum(sizes)),
        closure_paths_random_sample=dict(n=len(csz), median=pct(csz, 0.5),
                                         p90=pct(csz, 0.9), max=csz[-1]),
        closure_paths_top_layer_sample=dict(n=len(top_csz), median=pct(top_csz, 0.5),
                                            p10=pct(top_csz, 0.1),
                                            p90=pct(top_csz, 0.9), max=top_csz[-1]),
        system_closures=sorted(sys_cl.values()),
        one_root=dict(path=paths[one_root], closure_paths=len(one_cl),
                      closure_size=sum(sizes[i] for i in one_cl)),
        roots_union_closure_paths=len(union),
        generation_seconds=round(gen_secs, 1),
    )


def write_roots(args, g, root, paths):
    """A gcroots tree of --roots roots in the real formats, as a busy
    machine accumulates them: Hydra-style files named after store paths
    (gcroots/per-user/hydra/hydra-roots, 30%, at most one per path),
    result links under work directories reached through gcroots/auto (40%,
    a fifth of them with the same target as the one before), direct links
    (25%) and profiles of 500 generations each (5%), their ages spread
    over a year. Targets are
    top-layer paths three times in four, any path otherwise."""
    rng = random.Random(args.seed * 31337 + 7)
    state = os.path.join(root, "nix", "var", "nix")
    n = args.roots
    top = g["top_ids"]
    N = len(paths)
    now = time.time()

    def target():
        i = rng.choice(top) if rng.random() < 0.75 else rng.randrange(N)
        return paths[i]

    def age(p):
        t = now - rng.random() * 365 * 86400
        os.utime(p, (t, t), follow_symlinks=False)

    n_files, n_results, n_direct = int(n * 0.30), int(n * 0.40), int(n * 0.25)
    n_gens = n - n_files - n_results - n_direct
    hydra = os.path.join(state, "gcroots", "per-user", "hydra", "hydra-roots")
    os.makedirs(hydra, exist_ok=True)
    made = set()
    while len(made) < min(n_files, N):
        base = os.path.basename(target())
        if base in made:
            continue
        made.add(base)
        f = os.path.join(hydra, base)
        open(f, "w").close()
        age(f)
    auto = os.path.join(state, "gcroots", "auto")
    os.makedirs(auto, exist_ok=True)
    work = os.path.join(root, "work")
    last = None
    for k in range(n_results):
        d = os.path.join(work, "p%d" % (k // 100))
        if k % 100 == 0:
            os.makedirs(d, exist_ok=True)
        link = os.path.join(d, "result" if k % 100 == 0 else "result-%d" % (k % 100))
        t = last if (last and rng.random() < 0.2) else target()
        last = t
        os.symlink(t, link)
        age(link)
        os.symlink(link, os.path.join(auto, "%032x" % rng.getrandbits(128)))
    direct = os.path.join(state, "gcroots", "per-user", "ci")
    os.makedirs(direct, exist_ok=True)
    for k in range(n_direct):
        link = os.path.join(direct, "build-%d" % k)
        os.symlink(target(), link)
        age(link)
    profiles = os.path.join(state, "profiles", "per-user")
    per = 500
    for p in range(max(1, -(-n_gens // per))):
        d = os.path.join(profiles, "u%d" % p)
        os.makedirs(d, exist_ok=True)
        gens = min(per, n_gens - p * per)
        if gens <= 0:
            break
        base = now - 365 * 86400
        for k in range(1, gens + 1):
            link = os.path.join(d, "profile-%d-link" % k)
            os.symlink(target(), link)
            t = base + k * (365 * 86400 / gens)
            os.utime(link, (t, t), follow_symlinks=False)
        os.symlink("profile-%d-link" % gens, os.path.join(d, "profile"))
    return dict(files=len(made), result_links=n_results, direct=n_direct, generations=n_gens)


GEN_VERSION = 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="directory of the chroot store (created)")
    ap.add_argument("--paths", type=int, default=100_000)
    ap.add_argument("--refs", type=int, default=None,
                    help="target number of references (default 10 per path)")
    ap.add_argument("--depth", type=int, default=16, help="number of layers")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--systems", type=int, default=6, help="system-path-like roots")
    ap.add_argument("--system-refs", type=int, default=1000,
                    help="mean direct references of a system path")
    ap.add_argument("--system-spots", type=int, default=5,
                    help="neighbourhoods a system path draws its packages from")
    ap.add_argument("--system-spread", type=float, default=0.03,
                    help="width of those neighbourhoods (fraction of the circle)")
    ap.add_argument("--top-frac", type=float, default=0.04,
                    help="fraction of paths in the top layer (roots.txt)")
    ap.add_argument("--agg-frac", type=float, default=0.03,
                    help="fraction of env-like aggregates (hundreds of refs)")
    ap.add_argument("--sigma", type=float, default=1.6,
                    help="log-normal sigma of ordinary out-degrees")
    ap.add_argument("--window", type=float, default=3.0,
                    help="locality: std-dev of reference positions, in paths of a layer")
    ap.add_argument("--popular", type=float, default=0.05,
                    help="share of references going to popular libraries")
    ap.add_argument("--popular-decay", type=float, default=0.8,
                    help="how fast popular references thin out going up the layers")
    ap.add_argument("--env-window", type=float, default=5.0,
                    help="locality window multiplier for env-like aggregates")
    ap.add_argument("--popular-frac", type=float, default=0.005,
                    help="fraction of each layer that is a popular library")
    ap.add_argument("--nar-median", type=int, default=250_000)
    ap.add_argument("--nar-sigma", type=float, default=2.3)
    ap.add_argument("--drvs", type=float, default=0.0,
                    help="fraction of paths with a valid .drv (added to the paths)")
    ap.add_argument("--roots", type=int, default=0,
                    help="write a gcroots tree and profiles with this many roots")
    ap.add_argument("--mkdirs", action="store_true",
                    help="also create empty ROOT/nix/store/<basename> dirs (not needed)")
    ap.add_argument("--no-nix-init", action="store_true",
                    help="create the schema from the built-in copy, not nix-store --init")
    ap.add_argument("--force", action="store_true", help="delete ROOT first")
    args = ap.parse_args()
    if args.refs is None:
        args.refs = 10 * args.paths

    root = os.path.abspath(args.root)
    if args.force and os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root, exist_ok=True)

    t_start = time.monotonic()
    db_path, how = init_db(root, not args.no_nix_init)
    g = generate(args)
    t_gen = time.monotonic()
    paths, sizes = write_db(args, g, db_path)
    t_db = time.monotonic()
    if args.mkdirs:
        for p in paths + g.get("drv_paths", []):
            os.makedirs(root + p, exist_ok=True)
    roots_made = write_roots(args, g, root, paths) if args.roots else None

    with open(os.path.join(root, "roots.txt"), "w") as f:
        for i in g["top_ids"]:
            f.write(paths[i] + "\n")
    st = stats(args, g, paths, sizes, t_db - t_start)
    st["schema_from"] = how
    st["derivations"] = g.get("drv_count", 0)
    if roots_made:
        st["gc_roots"] = roots_made
    st["seconds"] = dict(graph=round(t_gen - t_start, 1), sqlite=round(t_db - t_gen, 1),
                         stats=round(time.monotonic() - t_db, 1))
    with open(os.path.join(root, "one-root.txt"), "w") as f:
        f.write(st["one_root"]["path"] + "\n")
    with open(os.path.join(root, "stats.json"), "w") as f:
        json.dump(st, f, indent=2)
        f.write("\n")

    print("store:            %s  (schema from %s)" % (root, how))
    print("paths:            %d  (base %d, layers %s)" % (st["paths"], st["base_paths"],
                                                          st["layer_sizes"]))
    print("references:       %d  (mean %.2f per path)" % (st["refs"], st["out_degree"]["mean"]))
    od = st["out_degree"]
    print("out-degree:       median %s, p90 %s, p99 %s, max %s" % (od["median"], od["p90"],
                                                               od["p99"], od["max"]))
    print("longest chain:    %d references" % st["longest_chain"])
    ns = st["nar_size"]
    print("narSize:          min %d, median %d, p99 %d, max %d, total %.1f GiB" % (
        ns["min"], ns["median"], ns["p99"], ns["max"], ns["total"] / 2 ** 30))
    cs = st["closure_paths_random_sample"]
    print("closure (random): median %d, p90 %d, max %d paths (sample of %d)" % (
        cs["median"], cs["p90"], cs["max"], cs["n"]))
    ct = st["closure_paths_top_layer_sample"]
    print("closure (roots):  p10 %d, median %d, p90 %d, max %d paths (sample of %d)" % (
        ct["p10"], ct["median"], ct["p90"], ct["max"], ct["n"]))
    print("system closures:  %s paths" % st["system_closures"])
    print("roots.txt:        %d paths, union closure %d paths (%.1f%% of store)" % (
        st["roots"], st["roots_union_closure_paths"],
        100.0 * st["roots_union_closure_paths"] / st["paths"]))
    print("one-root.txt:     %s: %d paths, closureSize %d" % (
        st["one_root"]["path"], st["one_root"]["closure_paths"],
        st["one_root"]["closure_size"]))
    print("time:             graph %.1fs, sqlite %.1fs, stats %.1fs" % (
        st["seconds"]["graph"], st["seconds"]["sqlite"], st["seconds"]["stats"]))


if __name__ == "__main__":
    main()
