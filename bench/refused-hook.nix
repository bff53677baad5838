# A 1 GB output built three ways, for what nix-heft's setup hook
# (nix/setup-hook.sh) adds to a build (bench/refused-hook.sh, issue 33):
#   check = false, hooked = false   no output check;
#   check = true,  hooked = false   disallowedReferences = [ forbidden ]
#                                   (Nix's own check; forbidden is an input
#                                   the output does not refer to);
#   check = true,  hooked = true    the same with the hook sourced and run
#                                   in postFixupHooks, as in
#                                   tests/fixtures/refused/default.nix;
#   refuseDep = true                disallowedReferences = [ dep ], which
#                                   the output refers to: Nix refuses it
#                                   (the benchmark's check that the hook
#                                   finds the reference in the 1 GB).
# `outputNames = [ "out" "lib" ]` (bench/refused-hook-outputs.sh, issue
# 39) gives the derivation those outputs; the files of the list are dealt
# to them so that each gets about as many bytes, the README goes to out.
# `hook` may be another version of the hook (a path): the builder runs
# every output's fixupOutputHooks with $prefix set to it, then
# postFixupHooks once, as stdenv's fixup phase does, so that a hook
# registered in either runs as it would under stdenv.
# The output is real bytes: an even sample of the files under /usr/lib
# (ELF libraries and executables, Python, jars; 700 MB) and /usr/share
# (locales, docs, man pages; 300 MB), files of at most 32 MB, plus a
# README in share/doc naming the input `dep`, so the output has one
# reference besides itself, as a package's docs often do.
# `fileList` (a plain string: a file of lines SOURCE TAB DESTINATION,
# what `select.py list` prints) spares each build the walk of /usr that
# chooses the files, so that the build is the copy and the fixup alone.
# `heft` is the nix-heft binary's directory (a plain string, the sandbox is
# off), `salt` makes every build a new one. The builder prints how long
# the copy and the fixup hooks took (the hook runs nix-heft refused
# --in-build once) and how many bytes they read (read(2) and the like, from
# /proc: the bytes nix-heft read, the output's files first) to the build
# log: lines starting `refused-hook:`.
# Build: nix-build bench/refused-hook.nix --option sandbox false --option substituters '' \
#          --argstr heft DIR --argstr salt S [--arg check true] [--arg hooked true]
{ heft ? "/nonexistent", hook ? ../nix/setup-hook.sh, salt ? "", check ? false, hooked ? false
, refuseDep ? false, libBytes ? 700000000, shareBytes ? 300000000, fileList ? ""
, outputNames ? [ "out" ] }:
let
  mk = attrs: derivation ({
    system = builtins.currentSystem;
    builder = "/bin/bash";
    PATH = "${heft}:/usr/bin:/bin";
  } // attrs);
  # Not salted: built once, shared by every build of the benchmark.
  dep = mk {
    name = "refused-hook-dep-1.0";
    args = [ "-c" "mkdir -p $out/share; echo 'dependency data' > $out/share/data" ];
  };
  forbidden = mk {
    name = "refused-hook-forbidden-1.0";
    args = [ "-c" "mkdir -p $out/lib; echo 'not referred to' > $out/lib/forbidden" ];
  };
  # `list ROOT BYTES`: an even sample of ROOT's regular files (every k-th
  # in path order, at most 32 MB each) up to BYTES, as lines SOURCE TAB
  # DESTINATION (relative: lib/... or share/...). `copy LIST DEST...`:
  # copies them, keeping modes, each file to the DEST that has the fewest
  # bytes so far (the first on a tie). `deal LIST N I`: the lines that
  # `copy` gives the I-th (from 0) of N DESTs.
  select = builtins.toFile "refused-hook-select.py" ''
    import os, shutil, sys
    def deal(lines, n):
        got = [0] * n
        for line in lines:
            src = line.split("\t")[0]
            i = got.index(min(got))
            got[i] += os.path.getsize(src) if os.path.isfile(src) else 0
            yield i, line
    if sys.argv[1] == "list":
        root, cap = sys.argv[2], int(sys.argv[3])
        files = []
        for d, ds, fs in os.walk(root):
            for f in fs:
                p = os.path.join(d, f)
                if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) <= 32 << 20:
                    files.append((p, os.path.getsize(p)))
        files.sort()
        k = max(1, round(sum(s for _, s in files) / cap))
        total = 0
        top = os.path.basename(root)
        for i, (p, s) in enumerate(files):
            if i % k or total + s > cap or "\t" in p or "\n" in p:
                continue
            total += s
            print(p, os.path.join(top, os.path.relpath(p, root)), sep="\t")
    elif sys.argv[1] == "deal":
        n, k = int(sys.argv[3]), int(sys.argv[4])
        sys.stdout.writelines(line for i, line in deal(open(sys.argv[2]), n) if i == k)
    else:
        dests = sys.argv[3:]
        count = total = 0
        for i, line in deal(open(sys.argv[2]), len(dests)):
            src, rel = line.rstrip("\n").split("\t")
            t = os.path.join(dests[i], rel)
            os.makedirs(os.path.dirname(t), exist_ok=True)
            try:
                shutil.copyfile(src, t)
                shutil.copymode(src, t)
            except OSError:
                continue
            count += 1
            total += os.path.getsize(t)
        print(f"refused-hook: copied {count} files, {total} bytes")
  '';
in
# `select` for bench/refused-hook.sh, which makes the list once.
{ inherit select; } // mk ({
  name = "refused-hook-big-1.0";
  inherit salt;
  # In every variant, so that the three have the same inputs and differ
  # only by the check and the hook.
  unreferenced = forbidden;
  args = [ "-c" ''
    set -e
    TIMEFORMAT='%R s wall, %U s user, %S s sys'
    list=${if fileList != "" then fileList else "$TMPDIR/files"}
    ${if fileList != "" then "" else ''
      python3 ${select} list /usr/lib ${toString libBytes} > $list
      python3 ${select} list /usr/share ${toString shareBytes} >> $list
    ''}
    t0=$(date +%s.%N)
    python3 ${select} copy $list ${builtins.concatStringsSep " " (map (o: "$" + o) outputNames)}
    mkdir -p $out/share/doc/refused-hook
    echo "Built with the data of ${dep}/share/data." > $out/share/doc/refused-hook/README
    t1=$(date +%s.%N)
    echo "refused-hook: copy $(python3 -c "print(f'{$t1 - $t0:.2f}')") s"
    ${if hooked then "source ${hook}" else ""}
    # As stdenv's fixup phase: each output's fixupOutputHooks (where the
    # hook ran before issue 39) with $prefix set to it, then postFixupHooks
    # once (where it runs since). The bytes read by this shell and the
    # children it reaped (the hooks' nix-heft) are in /proc/$$/io, read
    # here by builtins alone: no process of its own to count.
    rchar() { local k v; while read -r k v; do if [ "$k" = rchar: ]; then rc=$v; fi; done < /proc/$$/io; }
    rchar
    read0=$rc
    echo -n "refused-hook: fixup hooks " >&2
    time {
      for o in ''${outputs:-out}; do
        prefix=''${!o}
        for h in ''${fixupOutputHooks[@]+"''${fixupOutputHooks[@]}"}; do "$h"; done
      done
      for h in ''${postFixupHooks[@]+"''${postFixupHooks[@]}"}; do "$h"; done
    }
    rchar
    echo "refused-hook: fixup hooks read $((rc - read0)) bytes"
    echo "refused-hook: builder end $(date +%s.%N)"
  '' ];
} // (if builtins.length outputNames > 1 then { outputs = outputNames; } else { })
  // (if check then { disallowedReferences = [ forbidden ]; } else { })
  // (if refuseDep then { disallowedReferences = [ dep ]; } else { }))
