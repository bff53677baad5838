# shellcheck disable=SC2154 # outputs and the checks come from the build
# nix-heft's setup hook: when Nix is about to refuse an output (a
# disallowedReferences, disallowedRequisites, allowedReferences or
# allowedRequisites check, plain or in __structuredAttrs' outputChecks, or
# two outputs that refer to each other), say which files hold each refused
# path and what would drop it, before Nix fails with only the paths' names.
#
# Use: nativeBuildInputs = [ nix-heft ]. The package installs this file as
# $out/nix-support/setup-hook, which stdenv sources; it registers itself in
# postFixupHooks, so it runs once, after every output's fixup (nixpkgs' own
# moves between outputs included), and nix-heft reads each output once
# (and again only the files that hold what it explains). A
# builder without stdenv can source this file and run the entries of
# postFixupHooks once its outputs are complete.
#
# It reads only the build's outputs and the inputs its environment names
# (there is no store database in a sandbox), writes nothing, and then lets
# Nix fail as it would. With NIX_HEFT_REFUSED_FAIL set (to anything but 0)
# it fails the build itself, with its text, first.

nixHeftRefused() {
    # Nothing to check and one output (no cycle possible): no work. A
    # check set to the empty list is a check, the strictest (everything is
    # refused), and reaches the build as an empty variable: what counts is
    # whether it is set. With __structuredAttrs the checks are
    # outputChecks, which only .attrs.json holds: nix-heft decides (and
    # returns at once when there is nothing to do).
    local -a names
    if [[ "$(declare -p outputs 2>/dev/null)" != "declare -A"* ]] &&
        ! [ -e "${NIX_ATTRS_JSON_FILE:-}" ] && ! [ -e "${NIX_BUILD_TOP:-.}/.attrs.json" ]; then
        read -r -a names <<<"${outputs:-out}"
        if [ "${#names[@]}" -le 1 ] &&
            [ -z "${disallowedReferences+1}${disallowedRequisites+1}${allowedReferences+1}${allowedRequisites+1}" ]; then
            return 0
        fi
    fi

    if ! command -v nix-heft >/dev/null 2>&1; then
        echo "nix-heft setup hook: nix-heft is not on PATH; nothing explained" >&2
        return 0
    fi
    local fail="" status=0
    case "${NIX_HEFT_REFUSED_FAIL:-0}" in
    0) ;;
    *) fail=--fail ;;
    esac
    # The builder's stderr is a terminal, but what lands there is a build
    # log (a file under /nix/var/log/nix/drvs, `nix log`): no colour.
    nix-heft --color never refused --in-build $fail >&2 || status=$?
    if [ "$status" -eq 4 ]; then
        echo "nix-heft setup hook: failing the build (NIX_HEFT_REFUSED_FAIL=$NIX_HEFT_REFUSED_FAIL): Nix would refuse its outputs" >&2
        exit 1
    elif [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
        # A failure of the explanation never fails the build: Nix's own
        # check still runs.
        echo "nix-heft setup hook: could not examine the outputs (exit $status); continuing" >&2
    fi
    return 0
}

postFixupHooks+=(nixHeftRefused)
