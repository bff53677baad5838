#!/usr/bin/env bash
# What writing a survey's tables to an object store costs, side by side in
# one run, the same embedded survey over the same file:// cache with -o:
#   A. a directory;
#   B. s3://…  on s3s-fs (an S3 server over a directory) on 127.0.0.1;
#   C. http://… on `rclone serve webdav` on 127.0.0.1.
# Every run starts with an empty local cache and output, so each one reads
# every NAR and writes every partition and table; one warm-up run fills the
# page cache with the cache's NARs first.
#
# usage: bench/survey-output.sh [CACHE_DIR] [RUNS]
#   CACHE_DIR as for bench/survey.sh: by default the scan benchmark's zstd
#   cache (bench/.data/scan-cache-zstd, made by bench/advise.sh), or the
#   2 GiB xz cache that bench/http.sh exports. RUNS defaults to 3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cache="$(cd "${1:-$here/.data/scan-cache-zstd}" && pwd)"
runs="${2:-3}"
for tool in hyperfine:hyperfine rclone:rclone; do
  command -v "${tool%%:*}" >/dev/null || apt-get install -y "${tool#*:}" >/dev/null
done
command -v s3s-fs >/dev/null || cargo install --locked --quiet s3s-fs --version 0.14.1 --features binary
[ -f "$cache/nix-cache-info" ] || { echo "no binary cache at $cache" >&2; exit 2; }
(cd "$repo/survey" && cargo build --quiet)
survey="$repo/survey/target/debug/nix-heft-survey"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "nothing on $1" >&2; exit 1; }
s3=$(port); dav=$(port)
mkdir -p "$work/s3/bench" "$work/dav"
s3s-fs --host 127.0.0.1 --port "$s3" --access-key bench --secret-key bench-secret "$work/s3" > "$work/s3.log" 2>&1 &
pids+=($!)
# --prepare deletes the last run's output behind the server's back: rclone
# must not answer from its directory cache (it would announce the deleted
# survey.json and then send no body).
rclone serve webdav --dir-cache-time 0s --addr "127.0.0.1:$dav" "$work/dav" > "$work/dav.log" 2>&1 &
pids+=($!)
wait_port "$s3"; wait_port "$dav"

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 \
  AWS_ENDPOINT="http://127.0.0.1:$s3"
reset="rm -rf $work/xdg $work/out $work/s3/bench/out $work/dav/out"
run="env XDG_CACHE_HOME=$work/xdg $survey run --json --store file://$cache --all -o"
hyperfine -N -r "$runs" -w 1 --prepare "$reset" \
  -n directory "$run $work/out" \
  -n s3 "$run s3://bench/out" \
  -n webdav "$run http://127.0.0.1:$dav/out"
echo "bytes written by one run (the last, to WebDAV):"
du -sb "$work/dav/out" | cut -f1
find "$work/dav/out" -type f | wc -l
