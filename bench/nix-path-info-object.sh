#!/bin/sh
# Nix 2.8 prints `path-info --json` as an array; nix-tree-rs expects the
# newer object keyed by path. Convert, pass everything else through.
case " $* " in
  *" path-info "*" --json "*|*" path-info --json "*)
    /usr/bin/nix "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if isinstance(d, list):
    d = {e["path"]: (e if e.get("valid", True) else None) for e in d}
json.dump(d, sys.stdout)'
    ;;
  *) exec /usr/bin/nix "$@" ;;
esac
