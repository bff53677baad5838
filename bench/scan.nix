# A multi-GB closure of real binaries for the scan benchmark (bench/scan.sh):
# what this machine's Debian packages installed under /usr/lib and /usr/bin
# (shared libraries, programs, gcc, LLVM, a JDK ...), copied into one store path that also holds references to
# three small paths (in an ELF RUNPATH, a script's shebang and a text file),
# so the scanner has hashes to look for in every file.
# Build: nix-build bench/scan.nix --option sandbox false --option substituters ''
let
  mk = name: script: derivation {
    inherit name;
    system = builtins.currentSystem;
    builder = "/bin/sh";
    args = [ "-c" script ];
    PATH = "/usr/bin:/bin";
  };
  dep1 = mk "bench-dep-lib-1.0" "mkdir -p $out/lib; echo lib > $out/lib/README";
  dep2 = mk "bench-dep-sh-1.0" "mkdir -p $out/bin; cp /bin/dash $out/bin/sh";
  dep3 = mk "bench-dep-data-1.0" "mkdir -p $out/share; echo data > $out/share/x";
in
mk "bench-real-binaries-1.0" ''
  set -e
  mkdir -p $out/lib $out/bin $out/opt $out/share
  # Everything readable under /usr/lib (the builder runs as a build user).
  cp -a /usr/lib $out/lib/usr-lib 2>/dev/null || true
  cp -a /usr/bin $out/
  cp -a /usr/libexec $out/
  chmod -R u+w $out
  cp /usr/bin/patchelf $out/bin/patchelf-with-rpath
  patchelf --set-rpath ${dep1}/lib $out/bin/patchelf-with-rpath
  printf '#!${dep2}/bin/sh\necho hi\n' > $out/bin/script
  chmod +x $out/bin/script
  echo ${dep3}/share/x > $out/share/config.txt
''
