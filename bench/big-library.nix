# A 1.3 GB shared library of real bytes, for what reading a large ELF file
# from a NAR costs in memory and temporary disk (bench/elf-stream.sh, issue
# 32). A gcc-built library (a soname, a reference to big-library-data in
# .rodata) with a 1.3 GB loaded data section appended by
# tests/fixtures/add_big_section.py, then filled with the bytes of the
# files under /usr/lib (real bytes, as a GPU library's code objects are:
# zeros would be skipped by a sparse spool and hide its cost) and ending in
# a second reference, so the file holds a hash at both ends.
# Build: nix-build bench/big-library.nix --option sandbox false --option substituters ''
{ size ? 1300000000 }:
let
  mk = name: script: derivation {
    inherit name;
    system = builtins.currentSystem;
    builder = "/bin/sh";
    args = [ "-c" script ];
    PATH = "/usr/bin:/bin";
  };
  data = mk "big-library-data-1.0" ''
    mkdir -p $out/share
    echo data > $out/share/data
  '';
in
mk "big-library-1.0" ''
  set -e
  mkdir -p $out/lib
  cd $TMPDIR
  printf 'const char *ref = "%s/share/data";\nint f(void) { return ref[0]; }\n' ${data} > big.c
  gcc -O1 -shared -fPIC -Wl,-soname,libbig.so.1 -o libbig.so.1 big.c
  python3 ${../tests/fixtures/add_big_section.py} libbig.so.1 ${toString size}
  find /usr/lib -type f | LC_ALL=C sort | xargs cat 2>/dev/null | head -c ${toString (size - 200)} > blob || true
  printf '%s/share/big' ${data} >> blob
  cat > fill.py <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f, open(sys.argv[2], "rb") as blob:
    head = f.read(64)
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shnum, = struct.unpack_from("<H", head, 0x3C)
    # add_big_section.py's section is the last one.
    f.seek(shoff + (shnum - 1) * 64 + 0x18)
    off, size = struct.unpack("<QQ", f.read(16))
    f.seek(off)
    n = 0
    while chunk := blob.read(1 << 20):
        n += len(chunk)
        assert n <= size
        f.write(chunk)
PY
  python3 fill.py libbig.so.1 blob
  cp libbig.so.1 $out/lib/libbig.so.1
''
