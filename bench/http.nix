# A few-hundred-MB closure of real Debian files for the HTTP benchmark
# (bench/http.sh), shaped like a package set: a small base library every
# path references; a 135 MiB compiler (/usr/lib/gcc) that references it; a
# 162 MiB data path (/usr/share/locale) that references nothing; 20 small
# tools (one real /usr/bin program each) that reference the base; and a top
# path referencing all of them.
# Build: nix-build bench/http.nix --option sandbox false --option substituters ''
let
  mk = name: script: derivation {
    inherit name;
    system = builtins.currentSystem;
    builder = "/bin/sh";
    args = [ "-c" script ];
    PATH = "/usr/bin:/bin";
  };
  base = mk "bench-base-lib-1.0" ''
    mkdir -p $out/lib
    cp /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 $out/lib/
  '';
  gcc = mk "bench-gcc-lib-12" ''
    mkdir -p $out/lib $out/nix-support
    cp -a /usr/lib/gcc $out/lib/gcc
    chmod -R u+w $out
    echo ${base}/lib > $out/nix-support/libc-path
  '';
  locale = mk "bench-locale-data-1.0" ''
    mkdir -p $out/share
    cp -a /usr/share/locale $out/share/locale
  '';
  tools = map (b: mk "bench-tool-${b}-1.0" ''
    mkdir -p $out/bin $out/nix-support
    cp /usr/bin/${b} $out/bin/${b}
    echo ${base}/lib > $out/nix-support/libc-path
  '') [ "troff" "pzstd" "ip" "ssh-keygen" "ssh-keyscan" "dirmngr" "gpgsm" "tar"
        "ssh-add" "ssh-agent" "gpgv" "wget" "gpg-agent" "dpkg" "sqlite3"
        "xgettext" "localedef" "sftp" "x86_64-linux-gnu-readelf" "heaptrack_print" ];
in
mk "bench-http-top-1.0" ''
  mkdir -p $out/nix-support
  for p in ${base} ${gcc} ${locale} ${builtins.concatStringsSep " " tools}; do
    echo $p >> $out/nix-support/depends
  done
''
