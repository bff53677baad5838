#!/usr/bin/env python3
"""The repository and cache `bench/history.sh` bisects (issue 42).

gen_history.py DIR [--commits N] [--every K]

Writes DIR/repo: N first-parent commits of tests/fixtures/history/default.nix
(the tests' template), written with `git fast-import` (one a minute from
2025-01-01): commit n bumps the stamp (app's out path changes); commits
4001-4130 break app's evaluation (a missing attribute); from commit 7337
libcore's README names bigdata (3 MiB, the culprit). Every K-th commit's
app and libcore are built (sandbox off, as root) and copied, unsigned, to
the file:// cache DIR/cache, then deleted from the local store: a cache
holds what a builder evaluated and built. DIR/cached.txt lists those
commits (the revs file); DIR/expected.json names the culprit.

Standard library only; run as root with Nix (Debian's nix-bin).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

BROKEN = range(4001, 4131)
CULPRIT = 7337


def render(template, n, salt):
    return (template.replace("@SALT@", salt)
            .replace("@STAMP@", str(n))
            .replace("@UNRELATED@", "0")
            .replace("@LIBVER@", "1.0")
            .replace("@BIGDOC@", "true" if n >= CULPRIT else "false")
            .replace("@BROKEN@", "true" if n in BROKEN else "false"))


def subject(n):
    if n == 1:
        return "pkgs: init"
    if n == BROKEN.start:
        return "app: take libcore from the refactored set"
    if n == BROKEN.stop:
        return "app: fix the refactor"
    if n == CULPRIT:
        return "libcore: document the test data"
    return f"stamp: {n - 1} -> {n}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--commits", type=int, default=10000)
    ap.add_argument("--every", type=int, default=100)
    a = ap.parse_args()
    top = pathlib.Path(a.dir)
    repo = top / "repo"
    here = pathlib.Path(__file__).resolve().parent
    template = (here.parent / "tests/fixtures/history/default.nix").read_text()
    salt = f"bench-history-{a.commits}-{a.every}"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "master", str(repo)], check=True)
    fi = subprocess.Popen(["git", "-C", str(repo), "fast-import", "--quiet"],
                          stdin=subprocess.PIPE)
    start = 1735689600
    for n in range(1, a.commits + 1):
        body = render(template, n, salt).encode()
        msg = subject(n).encode()
        t = start + 60 * n
        out = [b"commit refs/heads/master\n", f"mark :{n}\n".encode(),
               f"author bench <bench@example.org> {t} +0000\n".encode(),
               f"committer bench <bench@example.org> {t} +0000\n".encode(),
               f"data {len(msg)}\n".encode(), msg, b"\n"]
        if n > 1:
            out.append(f"from :{n - 1}\n".encode())
        out += [f"M 100644 inline default.nix\ndata {len(body)}\n".encode(), body, b"\n"]
        fi.stdin.write(b"".join(out))
    fi.stdin.close()
    if fi.wait() != 0:
        sys.exit("git fast-import failed")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "master"], check=True)
    ids = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--format=%H"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert len(ids) == a.commits
    cached = [n for n in range(a.every, a.commits + 1, a.every)]
    trees = top / "trees"
    expr = ["builtins.concatLists ["]
    for n in cached:
        f = trees / f"c{n}.nix"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(render(template, n, salt))
        app = "" if n in BROKEN else "p.app "
        expr.append(f"(let p = import {f} {{}}; in [ {app}p.libcore.out p.libcore.dev ])")
    expr.append("]")
    built = subprocess.run(
        ["nix-build", "--no-out-link", "-E", "\n".join(expr), "--option", "sandbox", "false",
         "--option", "build-users-group", "", "--option", "substituters", "", "--max-jobs", "2"],
        check=True, capture_output=True, text=True).stdout.split()
    subprocess.run(["nix", "--extra-experimental-features", "nix-command", "copy", "--to",
                    f"file://{top / 'cache'}"] + built, check=True, capture_output=True)
    closure = subprocess.run(["nix-store", "-qR"] + built, check=True, capture_output=True,
                             text=True).stdout.split()
    subprocess.run(["nix-store", "--delete"] + closure, check=True, capture_output=True)
    (top / "cached.txt").write_text("".join(f"{ids[n - 1]}  # c{n}\n" for n in cached))
    (top / "expected.json").write_text(json.dumps({
        "culprit": ids[CULPRIT - 1], "good": ids[0], "bad": ids[-1],
        "commits": a.commits, "cached": len(cached)}))
    print(f"{top}: {a.commits} commits, {len(cached)} cached, culprit c{CULPRIT}")


if __name__ == "__main__":
    main()
