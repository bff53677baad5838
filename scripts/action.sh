#!/usr/bin/env bash
# The shell of action.yml (the composite GitHub Action), kept here so that
# tests run it with the files GitHub provides set to temporary files.
#
#   scripts/action.sh install   builds or finds nix-heft; NIX_HEFT=<binary>
#                               goes to $GITHUB_ENV for the next steps
#   scripts/action.sh run       check (with rules) and diff (with a
#                               baseline), or with INPUT_COMMAND=impact
#                               `nix-heft impact` (every attribute a pull
#                               request changes): annotations on stdout, the
#                               markdown appended to $GITHUB_STEP_SUMMARY,
#                               the comment body written to a file named in
#                               $GITHUB_OUTPUT (report=, check-exit=,
#                               diff-exit=); with INPUT_MODE=report also a
#                               directory for the artifact (artifact-dir=)
#   scripts/action.sh comment   the trusted half of the fork-safe pair:
#                               checks a downloaded report artifact (DIR in
#                               INPUT_ARTIFACT_DIR) and names the pull
#                               request and the body to post (number=,
#                               report=)
#
# Inputs come as INPUT_* variables (see action.yml). Exit status: 0 when
# nix-heft ran (a broken rule is check-exit=4, failed by a later step after
# the comment is posted), 1 when it could not run; every failure is one
# `::error` annotation that says what to change.
set -euo pipefail
# No input is ever a shell pattern: `forbid: *-dev` must reach nix-heft as
# written, not as the names of files in the workspace that match it.
set -f
# Annotations go to the runner's stdout even from inside a command whose
# stdout is a file (the baseline's size).
exec 3>&1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
action_path="${ACTION_PATH:-$(dirname "$here")}"

# A workflow command's data escaped as GitHub requires (%, CR, LF), so a
# message of several lines stays one annotation.
escape() {
    local s="$1"
    s="${s//'%'/%25}"
    s="${s//$'\r'/%0D}"
    s="${s//$'\n'/%0A}"
    printf '%s' "$s"
}

die() {
    echo "::error title=nix-heft action::$(escape "$*")" >&3
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

# The non-blank lines of a list input, trimmed, into the array named $2:
# one entry per line, so an entry may hold blanks, `$`, `*` or a leading
# `-` and still arrive as one argument.
lines() {
    local -n into="$2"
    local line
    into=()
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [ -n "$line" ] && into+=("$line")
    done <<<"$1"
    return 0
}

install() {
    local bin
    case "${INPUT_INSTALL:-nix}" in
    nix)
        # The action's own checkout is a flake: build exactly this version.
        # An out link rather than --print-out-paths, which Nix before 2.12
        # rejects ("unrecognised flag").
        local link="${RUNNER_TEMP:-/tmp}/nix-heft-result"
        nix --extra-experimental-features 'nix-command flakes' build \
            -o "$link" "path:$action_path#nix-heft" ||
            die "nix build of $action_path#nix-heft failed (see the log above); or set 'install: cargo'"
        bin="$(readlink -f "$link")/bin/nix-heft"
        ;;
    cargo)
        # cargo install from the action's checkout: the same source as
        # `cargo install --git` at the ref the workflow pinned, fetched once.
        local root="${RUNNER_TEMP:-/tmp}/nix-heft-cargo"
        cargo install --locked --quiet --root "$root" --path "$action_path" ||
            die "cargo install failed (see the log above); or set 'install: nix'"
        bin="$root/bin/nix-heft"
        ;;
    path)
        bin="$(command -v nix-heft)" ||
            die "install: path, but no nix-heft on PATH; install it in an earlier step, or set 'install: nix'"
        ;;
    *) die "install: '${INPUT_INSTALL}' is not nix, cargo or path" ;;
    esac
    "$bin" --version >/dev/null || die "$bin does not run"
    put "${GITHUB_ENV:-}" NIX_HEFT "$bin"
    echo "nix-heft: $("$bin" --version)"
}

# Runs nix-heft (its name in $1 for messages, the rest its arguments) with
# stderr kept, and sets $status. Exit codes in $ok are answers; any other
# is one annotation with nix-heft's own message and what to change.
heft() {
    local what="$1" ok="$2" err
    shift 2
    err="$(mktemp "${RUNNER_TEMP:-/tmp}/nix-heft-err.XXXXXX")"
    status=0
    "$@" 2>"$err" || status=$?
    cat "$err" >&2
    case " $ok " in
    *" $status "*) return 0 ;;
    esac
    local msg hint
    msg="$(sed -e 's/^nix-heft: error: //' -e 's/^error: //' "$err" | head -c 4000)"
    case "$what:$status" in
    impact*:2) hint="change the input it names: 'impact-before' and 'impact-after' are commits of the checkout or directories, 'attrs' attribute paths, rules take sizes (1GiB), percentages (10%) or globs" ;;
    impact*:*) hint="nix-heft could not evaluate or read what it needs: check that both sides evaluate, that 'before-store' holds the base's outputs and 'store' (or the local store) the head's" ;;
    *:2) hint="change the input it names: 'after' and 'before' must be built store paths or ./result links, rules take sizes (1GiB), percentages (10%) or globs" ;;
    *) hint="nix-heft could not read what it needs: check 'store' and 'before-store', and that 'after' was built in an earlier step" ;;
    esac
    rm -f "$err"
    die "nix-heft $what failed (exit $status): ${msg:-no message}"$'\n'"$hint"
}

# Mode report leaves an artifact for one pull request: it needs its number.
need_pull_request() {
    if [ "${INPUT_MODE:-review}" = report ] && ! [[ "${PR_NUMBER:-}" =~ ^[1-9][0-9]{0,9}$ ]]; then
        die "mode: report runs on a pull_request event (no pull request number here: '${PR_NUMBER:-}')"
    fi
}

# One side of `impact` as an input names it ($1 the input's name, $2 its
# value): a directory or a flake reference is nix-heft's to read; anything
# else is a git revision of the checkout in the working directory, which
# must have that commit: said here, before nix-heft's worktree of it fails
# with git's words.
impact_side() {
    local name="$1" side="$2"
    if [ -d "$side" ] || [[ "$side" == *:* ]]; then
        return 0
    fi
    git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
        die "'$name' is '$side': not a directory, so a git revision, but the working directory is no git checkout (run actions/checkout in an earlier step)"
    git cat-file -e "$side^{commit}" 2>/dev/null ||
        die "'$name' is '$side', a commit this checkout does not have: fetch it in an earlier step (git fetch origin $side)"
}

# The base of a pull request: the first parent of the merge commit GitHub
# made of it (refs/pull/N/merge, actions/checkout's default ref for a
# pull_request event), whose second parent is the pull request's head.
# Never pull_request.base.sha: GitHub does not move it when the base branch
# moves, so comparing with it would blame this pull request for every
# change merged into the base since it was opened.
merge_parent() {
    git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
        die "the working directory is no git checkout: run actions/checkout in an earlier step (or give 'impact-before')"
    local head parents
    head="$(git rev-parse HEAD)"
    read -r -a parents <<<"$(git rev-list --parents -n 1 HEAD)"
    if [ "${#parents[@]}" -eq 1 ] && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        die "the checkout holds the merge commit $head alone: its first parent, the base, was not fetched; give actions/checkout 'fetch-depth: 2' (the merge commit and both its parents)"
    fi
    if [ "${#parents[@]}" -ne 3 ]; then
        die "HEAD ($head) is not a merge commit: the base is the first parent of GitHub's merge commit of the pull request (refs/pull/${PR_NUMBER:-N}/merge, what actions/checkout checks out for a pull_request event); check that out, or give 'impact-before'"
    fi
    if [ -n "${PR_HEAD_SHA:-}" ] && [ "${parents[2]}" != "$PR_HEAD_SHA" ]; then
        die "HEAD ($head) merges ${parents[2]}, not the pull request's head $PR_HEAD_SHA: check out GitHub's merge commit of this pull request, or give 'impact-before'"
    fi
    git cat-file -e "${parents[1]}^{commit}" 2>/dev/null ||
        die "the base ${parents[1]}, the merge commit's first parent, is not in the checkout: give actions/checkout 'fetch-depth: 2'"
    printf '%s\n' "${parents[1]}"
}

# `nix-heft impact`: for every attribute the pull request changes, its
# closure at the base (read from 'before-store', e.g. cache.nixos.org,
# which Hydra filled) against the head (built here, or by nixpkgs-review),
# with impact's rules. One report, the whole comment; check-exit is
# impact's exit code (0, 3 partial, 4 a rule broken), diff-exit is empty.
impact() {
    local bin="${NIX_HEFT:-nix-heft}" i
    # closure's inputs mean nothing to impact: a workflow that sets them
    # expects something impact would not do.
    for i in after before forbid-verdict config; do
        local var="INPUT_${i^^}"
        var="${var//-/_}"
        if [ -n "${!var:-}" ]; then
            case "$i" in
            after | before) die "'$i' is an input of command closure: impact compares 'impact-before' (a commit or directory, default the first parent of GitHub's merge commit) with 'impact-after' (default the checkout)" ;;
            *) die "'$i' is not a rule of command impact (its rules: max-growth, max-closure, max-output, forbid); remove it" ;;
            esac
        fi
    done
    need_pull_request
    local before="${INPUT_IMPACT_BEFORE:-}"
    if [ -z "$before" ]; then
        [[ "${PR_NUMBER:-}" =~ ^[1-9][0-9]*$ ]] ||
            die "'impact-before' is required outside a pull request: the base, a commit of the checked-out repository or a directory"
        before="$(merge_parent)" || exit 1
    fi
    local after="${INPUT_IMPACT_AFTER:-}" review="${INPUT_NIXPKGS_REVIEW:-}" build="${INPUT_BUILD:-false}"
    # The head is the checkout unless nixpkgs-review's result links say
    # what was built.
    [ -z "$after" ] && [ -z "$review" ] && after=.
    impact_side impact-before "$before"
    [ -n "$after" ] && impact_side impact-after "$after"
    case "$build" in
    true)
        [ -z "$review" ] || die "'build: true' builds the head here; with 'nixpkgs-review' the head is what nixpkgs-review built: give one of them"
        [ -d "$after" ] || die "'build: true' builds the head's attributes from its tree: 'impact-after' must be a directory (it is '$after')"
        ;;
    false) ;;
    *) die "build: '$build' is not true or false" ;;
    esac

    # Every value as --flag=VALUE, so that one starting with `-` is never
    # taken for a flag.
    local args=("--before=$before" "--repo=.")
    [ -n "$after" ] && args+=("--after=$after")
    local list=() a
    lines "${INPUT_ATTRS:-}" list
    for a in "${list[@]}"; do
        args+=("--attr=$a")
    done
    if [ -n "${INPUT_ATTR_FILE:-}" ]; then
        [ -f "$INPUT_ATTR_FILE" ] ||
            die "'attr-file' is '$INPUT_ATTR_FILE', not a file: one attribute per line, in the checkout or written by an earlier step"
        args+=("--attr-file=$INPUT_ATTR_FILE")
    fi
    if [ -n "$review" ]; then
        [ -f "$review/report.json" ] ||
            die "'nixpkgs-review' is '$review', which has no report.json: give the directory nixpkgs-review wrote (its report.json and results/), as built or downloaded in an earlier step"
        args+=("--nixpkgs-review=$review")
    fi
    local global=()
    [ -n "${INPUT_STORE:-}" ] && global+=("--store=$INPUT_STORE")
    local dir status
    dir="$(mktemp -d "${RUNNER_TEMP:-/tmp}/nix-heft.XXXXXX")"
    : >"$dir/impact.md"
    if [ "$build" = true ]; then
        # One evaluation of both sides names the attributes to compare;
        # the head's are built here, then compared (nothing else is
        # built, and nothing of the base: Hydra built it).
        [ ${#list[@]} -gt 0 ] || [ -n "${INPUT_ATTR_FILE:-}" ] || args+=(--changed)
        heft "impact --list" "0" "$bin" "${global[@]}" impact "${args[@]}" --list >"$dir/attrs.txt"
        if [ ! -s "$dir/attrs.txt" ]; then
            # Nothing changed: nothing to build or to measure, said so.
            echo "::notice title=nix-heft impact::no attribute's out path differs between the base ($before) and the head: impact compares nothing"
            printf '%s\n### Closure impact: %s → %s\n\nNo attribute'"'"'s out path differs between the base and the head: nothing to compare.\n' \
                '<!-- nix-heft -->' "$before" "$(git rev-parse HEAD 2>/dev/null || echo "$after")" >"$dir/impact.md"
            finish "$dir" "$dir/impact.md" "0" ""
            return
        fi
        local build_args=() n=0
        while IFS= read -r a; do
            build_args+=(-A "$a")
            n=$((n + 1))
        done <"$dir/attrs.txt"
        echo "nix-heft: building the head's $n changed attribute(s)" >&2
        # What fails to build is said by impact (not built, with the
        # command that builds it); the build log is above.
        nix-build "$after" --no-out-link --keep-going "${build_args[@]}" >&2 ||
            echo "::warning title=nix-heft impact::some of the $n changed attributes did not build (see the log); impact says which"
        # Compare exactly those: the named list, not a second --changed.
        local named=()
        for i in "${!args[@]}"; do
            case "${args[$i]}" in
            --changed | --attr=* | --attr-file=*) ;;
            *) named+=("${args[$i]}") ;;
            esac
        done
        args=("${named[@]}" "--attr-file=$dir/attrs.txt")
    elif [ ${#list[@]} -eq 0 ] && [ -z "${INPUT_ATTR_FILE:-}" ] && [ -z "$review" ]; then
        # No list given: every attribute whose out paths differ between
        # the two evaluations, as nixpkgs' CI counts rebuilds.
        args+=(--changed)
    fi
    local stores=() s
    lines "${INPUT_BEFORE_STORE:-}" stores
    for s in "${stores[@]}"; do
        args+=("--before-store=$s")
    done
    [ -n "${INPUT_MAX_CLOSURE:-}" ] && args+=("--max-closure=$INPUT_MAX_CLOSURE")
    [ -n "${INPUT_MAX_GROWTH:-}" ] && args+=("--max-growth=$INPUT_MAX_GROWTH")
    [ -n "${INPUT_MAX_OUTPUT:-}" ] && args+=("--max-output=$INPUT_MAX_OUTPUT")
    local globs=() g
    lines "${INPUT_FORBID:-}" globs
    for g in "${globs[@]}"; do
        args+=("--forbid=$g")
    done
    [ -n "${INPUT_NIX_FILE:-}" ] && args+=("--nix-file=$INPUT_NIX_FILE")

    # The whole comment is impact's, less room for GitHub's own bytes.
    GITHUB_STEP_SUMMARY="$dir/impact.md" heft impact "0 3 4" \
        "$bin" "${global[@]}" impact "${args[@]}" \
        --format=github --markdown-limit=65472
    finish "$dir" "$dir/impact.md" "$status" ""
}

run() {
    case "${INPUT_COMMAND:-closure}" in
    closure) ;;
    impact)
        impact
        return
        ;;
    *) die "command: '${INPUT_COMMAND}' is not closure or impact" ;;
    esac
    local bin="${NIX_HEFT:-nix-heft}"
    [ -n "${INPUT_AFTER:-}" ] || die "the 'after' input is required: the closure to review (a store path or ./result link)"
    if [ -n "${INPUT_MAX_GROWTH:-}" ] && [ -z "${INPUT_BEFORE:-}" ]; then
        die "'max-growth' compares with a baseline: set 'before' (the base's store path or ./result link), or remove 'max-growth'"
    fi
    if [ -n "${INPUT_BEFORE_STORE:-}" ] && [ -z "${INPUT_BEFORE:-}" ]; then
        die "'before-store' says where 'before' is read from: set 'before' too, or remove 'before-store'"
    fi
    need_pull_request
    local dir
    dir="$(mktemp -d "${RUNNER_TEMP:-/tmp}/nix-heft.XXXXXX")"
    # Every value as --flag=VALUE and every root after `--`, so that a value
    # starting with `-` is never taken for a flag.
    local global=()
    [ -n "${INPUT_STORE:-}" ] && global+=("--store=$INPUT_STORE")
    local review=()
    [ -n "${INPUT_NIX_FILE:-}" ] && review+=("--nix-file=$INPUT_NIX_FILE")

    # check, when any rule is given.
    local rules=() globs=() g
    [ -n "${INPUT_MAX_CLOSURE:-}" ] && rules+=("--max-closure=$INPUT_MAX_CLOSURE")
    [ -n "${INPUT_MAX_GROWTH:-}" ] && rules+=("--max-growth=$INPUT_MAX_GROWTH")
    [ -n "${INPUT_FORBID_VERDICT:-}" ] && rules+=("--forbid-verdict=$INPUT_FORBID_VERDICT")
    [ -n "${INPUT_CONFIG:-}" ] && rules+=("--config=$INPUT_CONFIG")
    # One glob per line: the input is a YAML block.
    lines "${INPUT_FORBID:-}" globs
    for g in "${globs[@]}"; do
        rules+=("--forbid=$g")
    done
    local check_exit="" diff_exit="" status
    : >"$dir/check.md"
    if [ ${#rules[@]} -gt 0 ] || [ -n "${INPUT_CONFIG:-}" ]; then
        local against=()
        if [ -n "${INPUT_BEFORE:-}" ]; then
            if [ -n "${INPUT_BEFORE_STORE:-}" ]; then
                # The baseline lives in another store (the binary cache the
                # base was built into): its size, read there, is check's
                # baseline.
                heft "size (of 'before' in 'before-store')" "0" \
                    "$bin" "--store=$INPUT_BEFORE_STORE" size --json -- "$INPUT_BEFORE" \
                    >"$dir/before.json"
                against+=("--against-json=$dir/before.json")
            else
                against+=("--against=$INPUT_BEFORE")
            fi
        fi
        # The comment holds both reports: check gets a part of GitHub's
        # 65,536 characters, diff the rest.
        GITHUB_STEP_SUMMARY="$dir/check.md" heft check "0 3 4" \
            "$bin" "${global[@]}" check "${against[@]}" "${rules[@]}" "${review[@]}" \
            --format=github --markdown-limit=20000 -- "$INPUT_AFTER"
        check_exit="$status"
    fi
    : >"$dir/diff.md"
    if [ -n "${INPUT_BEFORE:-}" ]; then
        local used room stores=()
        [ -n "${INPUT_BEFORE_STORE:-}" ] && stores+=("--before-store=$INPUT_BEFORE_STORE")
        used="$(wc -m <"$dir/check.md")"
        room=$((65536 - used - 64))
        GITHUB_STEP_SUMMARY="$dir/diff.md" heft diff "0 3" \
            "$bin" "${global[@]}" diff "${stores[@]}" "${review[@]}" \
            --format=github "--markdown-limit=$room" -- "$INPUT_BEFORE" "$INPUT_AFTER"
        diff_exit="$status"
    fi
    [ -n "$check_exit$diff_exit" ] ||
        die "nothing to do: give 'before' (for a diff) or a rule (max-closure, max-growth, forbid, forbid-verdict, config) for a check"

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
    finish "$dir" "$report" "$check_exit" "$diff_exit"
}

# The end of `run` for both commands: the body to the job summary, the
# outputs, and in mode report the artifact. Arguments: the run's directory,
# the body, check-exit, diff-exit.
finish() {
    local dir="$1" report="$2" check_exit="$3" diff_exit="$4"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        cat "$report" >>"$GITHUB_STEP_SUMMARY"
    fi
    put "${GITHUB_OUTPUT:-}" report "$report"
    put "${GITHUB_OUTPUT:-}" check-exit "$check_exit"
    put "${GITHUB_OUTPUT:-}" diff-exit "$diff_exit"

    if [ "${INPUT_MODE:-review}" = report ]; then
        # The untrusted half of the fork-safe pair: what the trusted
        # workflow_run job needs to post the comment, as an artifact.
        # Both commands leave the same files, so the trusted half
        # (`comment`) posts an impact report as it posts check's and
        # diff's: nothing in it knows which command ran.
        local art="$dir/artifact"
        mkdir "$art"
        cp "$report" "$art/comment.md"
        printf '%s\n' "$PR_NUMBER" >"$art/pr-number"
        printf '%s\n' "${PR_HEAD_SHA:-}" >"$art/head-sha"
        printf '%s\n' "$check_exit" >"$art/check-exit"
        put "${GITHUB_OUTPUT:-}" artifact-dir "$art"
    fi
}

# The trusted half: the artifact came from a run of pull-request code, so
# nothing in it is trusted. The number must be a number, must name an open
# pull request whose head is the commit the reporting run ran on (else a
# pull request could write its report onto another one), and the body must
# be a plain file of at most 65,536 characters that carries the marker.
comment() {
    local art="${INPUT_ARTIFACT_DIR:-}"
    [ -d "$art" ] || die "no report artifact at '$art': did the pull_request workflow run with 'mode: report' and upload it?"
    local f
    for f in pr-number comment.md; do
        if [ -L "$art/$f" ]; then
            die "the report artifact's '$f' is a symlink, not a file: not posted (a report is written as a plain file)"
        fi
        if [ ! -f "$art/$f" ]; then
            die "the report artifact has no file '$f' (made by 'mode: report' of the same action version?)"
        fi
    done
    local pr
    pr="$(head -c 16 "$art/pr-number" | tr -d '[:space:]')"
    [[ "$pr" =~ ^[1-9][0-9]{0,9}$ ]] || die "the report artifact's pull request number is not a number"
    local chars
    chars="$(wc -m <"$art/comment.md")"
    [ "$chars" -le 65536 ] || die "the report is $chars characters, more than a comment takes (65536)"
    grep -q -x -F -- '<!-- nix-heft -->' "$art/comment.md" ||
        die "the report artifact's comment.md is not a nix-heft report (no marker line)"
    # The pull request, asked of GitHub's API (GET /repos/{owner}/{repo}/
    # pulls/{number}): it must be open, and its head the commit the
    # reporting workflow ran on (workflow_run.head_sha). A run that names
    # no commit matches nothing.
    local api="${GITHUB_API_URL:-https://api.github.com}" json state head
    json="$(curl -fsS --max-time 30 \
        -H "Authorization: Bearer ${GITHUB_TOKEN:-}" \
        -H 'Accept: application/vnd.github+json' \
        "$api/repos/${GITHUB_REPOSITORY:-}/pulls/$pr")" ||
        die "could not ask GitHub for pull request #$pr of ${GITHUB_REPOSITORY:-} (the token needs pull-requests: read)"
    state="$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" ||
        die "GitHub's answer for pull request #$pr has no state"
    [ "$state" = open ] ||
        die "pull request #$pr is $state: not posted (a closed pull request gets no new report)"
    head="$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["head"]["sha"])')" ||
        die "GitHub's answer for pull request #$pr has no head commit"
    [[ -n "${RUN_HEAD_SHA:-}" && "$head" == "$RUN_HEAD_SHA" ]] ||
        die "pull request #$pr's head is $head, not '${RUN_HEAD_SHA:-}', the commit the report was made on: not posted (a newer push reports itself)"
    put "${GITHUB_OUTPUT:-}" number "$pr"
    put "${GITHUB_OUTPUT:-}" report "$art/comment.md"
    echo "nix-heft: the report goes to pull request #$pr"
}

case "${1:-}" in
install) install ;;
run) run ;;
comment) comment ;;
*)
    echo "usage: $0 install|run|comment" >&2
    exit 2
    ;;
esac
