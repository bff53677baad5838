# shellcheck disable=SC2154 # outputs, prefix and the checks come from the build
# nix-heft's setup hook: when Nix is about to refuse an output (a
# disallowedReferences, disallowedRequisites, allowedReferences or
# allowedRequisites check, or two outputs that refer to each other), say
# which files hold each refused reference, before Nix fails with only the
# paths' names.
#
# Use: nativeBuildInputs = [ nix-heft ]. The package installs this file as
# $out/nix-support/setup-hook, which stdenv sources; it registers itself in
# fixupOutputHooks as nixpkgs' hooks do, so it runs for every output after
# its fixup. A builder without stdenv can source this file itself and run
# the entries of fixupOutputHooks with $prefix set to each output.
#
# It reads only the build's outputs and the inputs its environment names
# (there is no store database in a sandbox), writes nothing, and then lets
# Nix fail as it would. With NIX_HEFT_REFUSED_FAIL=1 it fails the build
# itself, with its text, first.

nixHeftRefused() {
    local name="" o
    # $prefix is the output being fixed up; find its name. With
    # __structuredAttrs, `outputs` is an associative array of paths.
    if [[ "$(declare -p outputs 2>/dev/null)" == "declare -A"* ]]; then
        for o in "${!outputs[@]}"; do
            if [ "${outputs[$o]}" = "$prefix" ]; then name=$o; fi
        done
    else
        for o in ${outputs:-out}; do
            if [ "${!o:-}" = "$prefix" ]; then name=$o; fi
        done
    fi
    [ -n "$name" ] || return 0

    # Nothing to check, and one output (no cycle possible): no work.
    local structured=""
    if [ -n "${NIX_ATTRS_JSON_FILE:-}" ] || [ -e "${NIX_BUILD_TOP:-.}/.attrs.json" ]; then
        structured=1
    fi
    local count=0
    if [[ "$(declare -p outputs 2>/dev/null)" == "declare -A"* ]]; then
        count=${#outputs[@]}
    else
        for o in ${outputs:-out}; do count=$((count + 1)); done
    fi
    if [ -z "$structured" ] && [ "$count" -le 1 ] &&
        [ -z "${disallowedReferences:-}${disallowedRequisites:-}${allowedReferences:-}${allowedRequisites:-}" ]; then
        return 0
    fi

    if ! command -v nix-heft >/dev/null 2>&1; then
        echo "nix-heft setup hook: nix-heft is not on PATH; nothing explained" >&2
        return 0
    fi
    local status=0
    nix-heft refused --in-build --output "$name" ${NIX_HEFT_REFUSED_FAIL:+--fail} >&2 || status=$?
    if [ "$status" -eq 4 ]; then
        echo "nix-heft setup hook: failing the build (NIX_HEFT_REFUSED_FAIL is set)" >&2
        exit 1
    elif [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
        # A failure of the explanation never fails the build: Nix's own
        # check still runs.
        echo "nix-heft setup hook: could not examine output $name (exit $status); continuing" >&2
    fi
    return 0
}

fixupOutputHooks+=(nixHeftRefused)
