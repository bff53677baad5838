#!/usr/bin/env bash
# The shell of action.yml (the composite GitHub Action), kept here so that
# tests run it with the files GitHub provides set to temporary files.
#
#   scripts/action.sh install   builds or finds nix-heft; NIX_HEFT=<binary>
#                               goes to $GITHUB_ENV for the next steps
#   scripts/action.sh run       check (with rules) and diff (with a
#                               baseline): annotations on stdout, the
#                               markdown appended to $GITHUB_STEP_SUMMARY,
#                               the comment body written to a file named in
#                               $GITHUB_OUTPUT (report=, check-exit=,
#                               diff-exit=)
#
# Inputs come as INPUT_* variables (see action.yml). Exit status: 0 when
# nix-heft ran (a broken rule is check-exit=4, failed by a later step after
# the comment is posted), 1 when it could not run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
action_path="${ACTION_PATH:-$(dirname "$here")}"

die() {
    echo "::error title=nix-heft action::$*"
    exit 1
}

# KEY=VALUE to a GitHub file, in the multi-line-safe form GitHub reads
# (KEY<<DELIMITER), with a delimiter the value cannot contain.
put() {
    local file="$1" key="$2" value="$3" delim
    [ -n "$file" ] || die "$key: the GitHub file for it is not set"
    delim="nix_heft_$RANDOM$RANDOM$RANDOM"
    printf '%s<<%s\n%s\n%s\n' "$key" "$delim" "$value" "$delim" >>"$file"
}

install() {
    local bin
    case "${INPUT_INSTALL:-nix}" in
    nix)
        # The action's own checkout is a flake: build exactly this version.
        local out
        out="$(nix --extra-experimental-features 'nix-command flakes' build \
            --no-link --print-out-paths "path:$action_path#nix-heft")" ||
            die "nix build of $action_path failed"
        bin="$out/bin/nix-heft"
        ;;
    cargo)
        # cargo install from the action's checkout: the same source as
        # `cargo install --git` at the ref the workflow pinned, fetched once.
        local root="${RUNNER_TEMP:-/tmp}/nix-heft-cargo"
        cargo install --locked --quiet --root "$root" --path "$action_path" ||
            die "cargo install failed"
        bin="$root/bin/nix-heft"
        ;;
    path)
        bin="$(command -v nix-heft)" || die "install: path, but no nix-heft on PATH"
        ;;
    *) die "install: '${INPUT_INSTALL}' is not nix, cargo or path" ;;
    esac
    "$bin" --version >/dev/null || die "$bin does not run"
    put "${GITHUB_ENV:-}" NIX_HEFT "$bin"
    echo "nix-heft: $("$bin" --version)"
}

run() {
    local bin="${NIX_HEFT:-nix-heft}"
    [ -n "${INPUT_AFTER:-}" ] || die "the 'after' input is required"
    local dir
    dir="$(mktemp -d "${RUNNER_TEMP:-/tmp}/nix-heft.XXXXXX")"
    local global=()
    [ -n "${INPUT_STORE:-}" ] && global+=(--store "$INPUT_STORE")
    local review=()
    [ -n "${INPUT_NIX_FILE:-}" ] && review+=(--nix-file "$INPUT_NIX_FILE")

    # check, when any rule is given.
    local rules=() g
    [ -n "${INPUT_MAX_CLOSURE:-}" ] && rules+=(--max-closure "$INPUT_MAX_CLOSURE")
    [ -n "${INPUT_MAX_GROWTH:-}" ] && rules+=(--max-growth "$INPUT_MAX_GROWTH")
    [ -n "${INPUT_FORBID_VERDICT:-}" ] && rules+=(--forbid-verdict "$INPUT_FORBID_VERDICT")
    [ -n "${INPUT_CONFIG:-}" ] && rules+=(--config "$INPUT_CONFIG")
    # One glob per line (or separated by blanks): the input is a YAML block.
    for g in ${INPUT_FORBID:-}; do
        rules+=(--forbid "$g")
    done
    local check_exit="" diff_exit=""
    : >"$dir/check.md"
    if [ ${#rules[@]} -gt 0 ]; then
        local against=()
        [ -n "${INPUT_BEFORE:-}" ] && against+=(--against "$INPUT_BEFORE")
        # The comment holds both reports: check gets a part of GitHub's
        # 65,536 characters, diff the rest.
        check_exit=0
        GITHUB_STEP_SUMMARY="$dir/check.md" "$bin" "${global[@]}" check "$INPUT_AFTER" \
            "${against[@]}" "${rules[@]}" "${review[@]}" \
            --format github --markdown-limit 20000 || check_exit=$?
        case "$check_exit" in
        0 | 3 | 4) ;;
        *) die "nix-heft check failed (exit $check_exit)" ;;
        esac
    fi
    : >"$dir/diff.md"
    if [ -n "${INPUT_BEFORE:-}" ]; then
        local used room
        used="$(wc -m <"$dir/check.md")"
        room=$((65536 - used - 64))
        diff_exit=0
        GITHUB_STEP_SUMMARY="$dir/diff.md" "$bin" "${global[@]}" diff "$INPUT_BEFORE" \
            "$INPUT_AFTER" "${review[@]}" --format github --markdown-limit "$room" ||
            diff_exit=$?
        case "$diff_exit" in
        0 | 3) ;;
        *) die "nix-heft diff failed (exit $diff_exit)" ;;
        esac
    fi
    [ -n "$check_exit$diff_exit" ] ||
        die "nothing to do: give 'before' (for a diff) or a rule (for a check)"

    # One body: check's report, then diff's without its own marker line.
    local report="$dir/comment.md"
    {
        cat "$dir/check.md"
        if [ -s "$dir/check.md" ]; then
            grep -v -x -F -- '<!-- nix-heft -->' "$dir/diff.md" || true
        else
            cat "$dir/diff.md"
        fi
    } >"$report"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        cat "$report" >>"$GITHUB_STEP_SUMMARY"
    fi
    put "${GITHUB_OUTPUT:-}" report "$report"
    put "${GITHUB_OUTPUT:-}" check-exit "$check_exit"
    put "${GITHUB_OUTPUT:-}" diff-exit "$diff_exit"
}

case "${1:-}" in
install) install ;;
run) run ;;
*)
    echo "usage: $0 install|run" >&2
    exit 2
    ;;
esac
