# A ROCm-shaped multi-GB closure of real Debian files for the HTTP benchmark
# (bench/http.sh), about 1.9 GiB of NARs: the shape of the llama.cpp ROCm
# closure in the context file, with real bytes (so xz compresses them as it
# compresses real packages) instead of rocm-mini's filler.
#
#   glibc       the host's libc and loader
#   rocm-llvm   /usr/lib/llvm-14 (356 MiB); libLLVM's RUNPATH points at glibc
#   clr         /usr/lib/jvm (562 MiB, the "HIP runtime"); its RUNPATH names
#               rocm-llvm, which stays anyway (rocm-comgr links it)
#   rocsparse   /usr/lib/chromium (348 MiB); links clr and glibc, which stay
#               anyway: no action on it can save 1%, so it is never read
#   rocblas-tensile-gfx908 / gfx90a / gfx1100
#               per-target data (357 MiB in all, real shared objects renamed
#               as Tensile code objects), no references
#   rocm-cmake  a CMake module, build time only
#   rocblas     librocblas.so (RUNPATH clr, glibc), headers, a CMake config
#               naming rocm-cmake, and the symlink farm into every Tensile
#               path
#   rocm-comgr  links rocm-llvm too: rocm-llvm stays whatever clr does
#   rocm-smi    a library nothing needs: hipblas' RUNPATH keeps it (dead)
#   rocm-docs   /usr/share/doc (129 MiB), named only by hipblas' README
#   hipblas     libhipblas.so (RUNPATH rocblas, clr, rocm-comgr, rocm-smi, glibc)
#   rocm-data   /usr/share/locale (193 MiB), no references
#   llama-cpp   a program linking hipblas, the root
#
# Build: nix-build bench/http-large.nix --option sandbox false --option substituters '' --option build-users-group ''
let
  mk = name: script: derivation {
    inherit name;
    system = builtins.currentSystem;
    builder = "/bin/sh";
    args = [ "-c" ("set -e\n" + script) ];
    PATH = "/usr/bin:/bin";
  };
  lib = "/usr/lib/x86_64-linux-gnu";
  glibc = mk "glibc-2.36" ''
    mkdir -p $out/lib
    cp "$(readlink -f /lib64/ld-linux-x86-64.so.2)" $out/lib/ld-linux-x86-64.so.2
    cp "$(readlink -f ${lib}/libc.so.6)" $out/lib/libc.so.6
    cp "$(readlink -f ${lib}/libm.so.6)" $out/lib/libm.so.6
  '';
  rocm-llvm = mk "rocm-llvm-5.7.1" ''
    mkdir -p $out
    cp -a /usr/lib/llvm-14/. $out/
    chmod -R u+w $out
    # libLLVM is a symlink into /usr/lib/x86_64-linux-gnu: copy the real file.
    so=$out/lib/libLLVM-14.so.1
    cp --remove-destination "$(readlink -f /usr/lib/llvm-14/lib/libLLVM-14.so.1)" "$so"
    patchelf --set-rpath ${glibc}/lib "$so"
  '';
  clr = mk "clr-5.7.1" ''
    mkdir -p $out/lib $out/opt
    cp -a /usr/lib/jvm/. $out/opt/
    chmod -R u+w $out
    cp "$(readlink -f ${lib}/libz.so.1)" $out/lib/libamdhip64.so
    patchelf --set-rpath ${rocm-llvm}/lib:${glibc}/lib $out/lib/libamdhip64.so
  '';
  rocsparse = mk "rocsparse-5.7.1" ''
    mkdir -p $out/lib $out/opt
    cp -a /usr/lib/chromium/. $out/opt/
    chmod -R u+w $out
    cp "$(readlink -f ${lib}/libbz2.so.1.0)" $out/lib/librocsparse.so
    patchelf --set-rpath ${clr}/lib:${glibc}/lib $out/lib/librocsparse.so
  '';
  tensile = target: pattern: mk "rocblas-tensile-${target}-5.7.1" ''
    mkdir -p $out/lib/rocblas/library
    for f in ${lib}/${pattern}; do
      if [ -f "$f" ] && [ ! -L "$f" ]; then
        cp "$f" "$out/lib/rocblas/library/TensileLibrary_$(basename "$f")_${target}.co"
      fi
    done
  '';
  tensiles = [
    (tensile "gfx908" "lib[a-f]*")
    (tensile "gfx90a" "lib[g-o]*")
    (tensile "gfx1100" "lib[p-z]*")
  ];
  rocm-cmake = mk "rocm-cmake-5.7.1" ''
    mkdir -p $out/share/rocm/cmake
    echo '# ROCMConfig.cmake: build-time helpers' > $out/share/rocm/cmake/ROCMConfig.cmake
  '';
  rocblas = mk "rocblas-5.7.1" ''
    mkdir -p $out/lib/rocblas/library $out/lib/cmake/rocblas $out/include
    cp "$(readlink -f ${lib}/liblzma.so.5)" $out/lib/librocblas.so
    patchelf --set-rpath ${clr}/lib:${glibc}/lib $out/lib/librocblas.so
    cp -a /usr/include/linux $out/include/
    for p in ${builtins.concatStringsSep " " tensiles}; do
      ln -s $p/lib/rocblas/library/* $out/lib/rocblas/library/
    done
    echo 'include("${rocm-cmake}/share/rocm/cmake/ROCMConfig.cmake")' > $out/lib/cmake/rocblas/rocblas-config.cmake
  '';
  # The code-object manager: links libLLVM too, so rocm-llvm stays whatever
  # clr does (as in nixpkgs, where several ROCm libraries link it).
  rocm-comgr = mk "rocm-comgr-5.7.1" ''
    mkdir -p $out/lib
    cp "$(readlink -f ${lib}/libexpat.so.1)" $out/lib/libamd_comgr.so
    patchelf --set-rpath ${rocm-llvm}/lib:${glibc}/lib $out/lib/libamd_comgr.so
    patchelf --add-needed libLLVM-14.so.1 $out/lib/libamd_comgr.so
  '';
  rocm-smi = mk "rocm-smi-5.7.1" ''
    mkdir -p $out/lib
    cp "$(readlink -f ${lib}/libpopt.so.0)" $out/lib/librocm_smi64.so
  '';
  rocm-docs = mk "rocm-docs-5.7.1" ''
    mkdir -p $out/share/doc
    cp -a /usr/share/doc/. $out/share/doc/
  '';
  hipblas = mk "hipblas-5.7.1" ''
    mkdir -p $out/lib $out/share/doc/hipblas
    cp "$(readlink -f ${lib}/libzstd.so.1)" $out/lib/libhipblas.so
    patchelf --set-rpath ${rocblas}/lib:${clr}/lib:${rocm-comgr}/lib:${rocm-smi}/lib:${glibc}/lib $out/lib/libhipblas.so
    patchelf --add-needed librocblas.so --add-needed libamd_comgr.so $out/lib/libhipblas.so
    echo "See ${rocm-docs}/share/doc for the ROCm documentation." > $out/share/doc/hipblas/README
  '';
  rocm-data = mk "rocm-data-5.7.1" ''
    mkdir -p $out/share
    cp -a /usr/share/locale $out/share/locale
  '';
in
mk "llama-cpp-rocm-0.0.0" ''
  mkdir -p $out/bin $out/share
  cp /usr/bin/zstd $out/bin/llama-server
  patchelf --set-rpath ${hipblas}/lib:${rocsparse}/lib:${glibc}/lib $out/bin/llama-server
  patchelf --add-needed libhipblas.so --add-needed librocsparse.so $out/bin/llama-server
  echo ${rocm-data}/share/locale > $out/share/locale-dir
''
