# rocm-mini: a miniature of the nixpkgs ROCm closure problem
# ("rocmPackages: drop symlinks & split outputs", llama-cpp-rocm = 10.6 GiB).
#
# No nixpkgs, no stdenv: every package is a raw `derivation` whose builder is
# the host's /bin/sh, using the host's gcc, coreutils and patchelf.  All ELF
# files are real and run against a copy of the host glibc in the store.
#
#   nix-build examples/rocm-mini --option sandbox false --option substituters ''
#       builds the default value, llama-cpp-rocm-0.0.0
#   nix-build examples/rocm-mini -A rocblas          (or any attribute below)
#   nix-build examples/rocm-mini -A rocblas-tensile.gfx90a
#
# The value of this file is the llama-cpp derivation with the other packages
# added as extra attributes (like nixpkgs' passthru), so a plain nix-build
# builds just the top-level package.  See README.md for what each one models.
{ system ? builtins.currentSystem }:
let
  version = "5.7.1";

  src = builtins.path { path = ./src; name = "rocm-mini-src"; };

  # Shell prelude shared by every builder.
  #   fill FILE KIB TEXT           deterministic, highly compressible data
  #   solib OUT.so SRC MIB RUNPATH [ld args...]
  #                                gcc shared library with a MIB MiB .rodata
  #                                blob, then RUNPATH set with patchelf
  prelude = ''
    set -e
    fill() {
      mkdir -p "$(dirname "$1")"
      yes "$3" | head -c "$(($2 * 1024))" > "$1"
    }
    solib() {
      so=$1; c=$2; mib=$3; rp=$4; shift 4
      mkdir -p "$(dirname "$so")"
      gcc -O2 -fPIC -shared -Wall -DBLOB_MIB="$mib" \
        -Wl,-soname,"$(basename "$so")" -o "$so" "$c" "$@"
      patchelf --set-rpath "$rp" "$so"
    }
    cp ${src}/*.c ${src}/*.h .
  '';

  mk = name: script: derivation {
    inherit name system;
    builder = "/bin/sh";
    args = [ "-c" (prelude + script) ];
    PATH = "/usr/bin:/bin";
  };

  # 1. The C library: the host's dynamic loader and libc.so.6, copied.
  glibc = mk "glibc-2.36" ''
    mkdir -p $out/lib
    cp "$(readlink -f /lib64/ld-linux-x86-64.so.2)" $out/lib/ld-linux-x86-64.so.2
    cp "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" $out/lib/libc.so.6
    chmod 0555 $out/lib/*
  '';

  # 2. The heavy compiler: libLLVM.so + a 24 MiB payload.
  rocm-llvm = mk "rocm-llvm-${version}" ''
    solib $out/lib/libLLVM.so llvm.c 6 ${glibc}/lib
    fill $out/lib/libLLVM-data.bin 24576 "rocm-llvm ${version} libLLVM payload: AMDGPU X86 targets, clang, lld"
  '';

  # 3a. ROCr: the HSA runtime, links libLLVM (code-object loader).
  rocm-runtime = mk "rocm-runtime-${version}" ''
    solib $out/lib/libhsa-runtime64.so hsa.c 3 "${rocm-llvm}/lib:${glibc}/lib" \
      -L${rocm-llvm}/lib -lLLVM
  '';

  # 3b. clr: the HIP runtime (libamdhip64), links ROCr and libLLVM (comgr).
  clr = mk "clr-${version}" ''
    solib $out/lib/libamdhip64.so hip.c 5 \
      "${rocm-runtime}/lib:${rocm-llvm}/lib:${glibc}/lib" \
      -L${rocm-runtime}/lib -L${rocm-llvm}/lib -lhsa-runtime64 -lLLVM
    fill $out/share/hip/devicelib/ocml.bc 3072 "clr ${version} amdgcn device library bitcode"
    mkdir -p $out/include/hip
    echo '/* hip_runtime.h (mini) */ int hipInit(unsigned int flags);' > $out/include/hip/hip_runtime.h
  '';

  # 4. Per-GPU-target Tensile kernel libraries: data only, no references.
  #    { file = KiB; } per target; file names follow rocblas' Tensile output.
  tensileFiles = {
    gfx900 = {
      "Kernels.so-000-gfx900.hsaco" = 2048;
      "Kernels.so-001-gfx900.hsaco" = 2048;
      "TensileLibrary_gfx900.dat" = 1536;
      "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx900.co" = 1536;
    };
    gfx906 = {
      "Kernels.so-000-gfx906-xnack-.hsaco" = 2560;
      "Kernels.so-001-gfx906-xnack-.hsaco" = 2560;
      "TensileLibrary_gfx906.dat" = 2048;
      "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx906.co" = 2048;
    };
    gfx90a = {
      "Kernels.so-000-gfx90a.hsaco" = 3072;
      "Kernels.so-001-gfx90a.hsaco" = 3072;
      "Kernels.so-002-gfx90a.hsaco" = 3072;
      "TensileLibrary_gfx90a.dat" = 2048;
      "TensileLibrary_Type_HH_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx90a.co" = 2048;
    };
    gfx1030 = {
      "Kernels.so-000-gfx1030.hsaco" = 3072;
      "Kernels.so-001-gfx1030.hsaco" = 3072;
      "TensileLibrary_gfx1030.dat" = 2048;
      "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1030.co" = 2048;
    };
    gfx1100 = {
      "Kernels.so-000-gfx1100.hsaco" = 4096;
      "Kernels.so-001-gfx1100.hsaco" = 4096;
      "Kernels.so-002-gfx1100.hsaco" = 2048;
      "TensileLibrary_gfx1100.dat" = 2560;
      "TensileLibrary_Type_HH_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1100.co" = 2560;
    };
    fallback = {
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat" = 256;
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx900.hsaco" = 768;
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx906-xnack-.hsaco" = 768;
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx90a.hsaco" = 768;
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1030.hsaco" = 768;
      "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1100.hsaco" = 768;
    };
  };

  mkTensile = target: files: mk "rocblas-tensile-${target}-${version}" (''
    mkdir -p $out/lib/rocblas/library
  '' + builtins.concatStringsSep "" (map (f: ''
    fill "$out/lib/rocblas/library/${f}" ${toString files.${f}} "Tensile ${version} ${target} code object ${f}"
  '') (builtins.attrNames files)));

  rocblas-tensile = builtins.mapAttrs mkTensile tensileFiles;

  # Build-time-only tool: CMake modules used by rocblas' installed config.
  rocm-cmake = mk "rocm-cmake-${version}" ''
    for m in ROCMConfig ROCMInstallTargets ROCMPackageConfigHelpers ROCMSetupVersion; do
      fill $out/share/rocm/cmake/$m.cmake 768 "# rocm-cmake ${version}: $m module (build-time only)"
    done
  '';

  # 5. rocblas: the library, its headers/cmake/pkg-config, and the symlink
  #    farm into every Tensile derivation (nixpkgs rocblas/default.nix),
  #    built for a list of GPU targets: each target's Tensile path and the
  #    fallback path (built once, for every target) are linked whole.
  rocblasFor = targets: mk "rocblas-${version}" ''
    solib $out/lib/librocblas.so rocblas.c 4 "${clr}/lib:${glibc}/lib" \
      -I${clr}/include -L${clr}/lib -lamdhip64
    mkdir -p $out/include $out/lib/rocblas/library $out/lib/cmake/rocblas $out/lib/pkgconfig
    cp rocblas.h $out/include/rocblas.h

    for path in ${builtins.concatStringsSep " " (map (t: "${rocblas-tensile.${t}}")
                    (targets ++ [ "fallback" ]))}; do
      ln -s $path/lib/rocblas/library/* $out/lib/rocblas/library/
    done
    # Like the real one: a manifest of sandbox paths (cruft, no store paths).
    (cd $out/lib/rocblas/library && for f in *; do
       echo "/build/source/build/Tensile/library/$f"; done) > TensileManifest.txt
    mv TensileManifest.txt $out/lib/rocblas/library/

    cat > $out/lib/cmake/rocblas/rocblas-config.cmake <<'EOF'
    # rocblas-config.cmake (mini), generated by rocm-cmake's rocm_export_targets()
    set(ROCM_CMAKE_MODULE_DIR "${rocm-cmake}/share/rocm/cmake")
    list(APPEND CMAKE_MODULE_PATH "''${ROCM_CMAKE_MODULE_DIR}")
    include("''${ROCM_CMAKE_MODULE_DIR}/ROCMPackageConfigHelpers.cmake")
    include(CMakeFindDependencyMacro)
    find_dependency(hip)
    add_library(roc::rocblas SHARED IMPORTED)
    set_target_properties(roc::rocblas PROPERTIES
      IMPORTED_LOCATION "@out@/lib/librocblas.so"
      INTERFACE_INCLUDE_DIRECTORIES "@out@/include")
    set(rocblas_FOUND TRUE)
    EOF
    cat > $out/lib/pkgconfig/rocblas.pc <<'EOF'
    prefix=@out@
    libdir=''${prefix}/lib
    includedir=''${prefix}/include
    rocm_cmake_dir=${rocm-cmake}/share/rocm/cmake

    Name: rocblas
    Description: rocBLAS (mini)
    Version: ${version}
    Libs: -L''${libdir} -lrocblas
    Cflags: -I''${includedir}
    EOF
    sed -i "s|@out@|$out|g" $out/lib/cmake/rocblas/rocblas-config.cmake $out/lib/pkgconfig/rocblas.pc
  '';
  rocblas = rocblasFor [ "gfx900" "gfx906" "gfx90a" "gfx1030" "gfx1100" ];

  # Never needed at run time by anything in this closure.
  rocm-smi = mk "rocm-smi-${version}" ''
    solib $out/lib/librocm_smi64.so rocm_smi.c 2 ${glibc}/lib
  '';

  # Documentation set; only hipblas' README names it.
  rocm-docs = mk "rocm-docs-${version}" ''
    mkdir -p $out/share/doc/rocm-docs
    echo '<html><body>ROCm ${version} documentation (mini)</body></html>' > $out/share/doc/rocm-docs/index.html
    fill $out/share/doc/rocm-docs/_static/searchindex.js 6144 "Search.setIndex({docnames: [rocm ${version}]});"
  '';

  # 6. hipblas: links librocblas; RUNPATH also holds a dead rocm-smi entry;
  #    its README names rocm-docs.
  hipblas = mk "hipblas-${version}" ''
    solib $out/lib/libhipblas.so hipblas.c 1 \
      "${rocblas}/lib:${rocm-smi}/lib:${glibc}/lib" \
      -I${rocblas}/include -L${rocblas}/lib -lrocblas
    mkdir -p $out/include $out/share/doc/hipblas
    echo '/* hipblas.h (mini) */ int hipblasCreate(void **handle);' > $out/include/hipblas.h
    cat > $out/share/doc/hipblas/README <<'EOF'
    hipBLAS ${version} (mini)

    hipBLAS is a BLAS marshalling library with rocBLAS as its AMD backend.
    The full ROCm documentation for this release is installed at
      ${rocm-docs}/share/doc/rocm-docs/index.html
    EOF
  '';

  # A stand-in interpreter: bin/python3 runs its script with /bin/sh.
  python3 = mk "python3-3.11.6" ''
    mkdir -p $out/bin
    cat > $out/bin/python3 <<'EOF'
    #!/bin/sh
    # python3 (mini): not CPython; runs the (sh-compatible) script it is given.
    exec /bin/sh "$@"
    EOF
    chmod 0555 $out/bin/python3
    fill $out/lib/python3.11/_stdlib_mini.py 5120 "# python3.11 standard library (mini)"
  '';

  # 7. The top-level consumer.
  llama-cpp = mk "llama-cpp-rocm-0.0.0" ''
    mkdir -p $out/bin
    gcc -O2 -Wall -DBLOB_MIB=1 -o $out/bin/llama-server llama_server.c \
      -L${hipblas}/lib -L${rocblas}/lib -L${clr}/lib -lhipblas -lrocblas -lamdhip64
    patchelf --set-interpreter ${glibc}/lib/ld-linux-x86-64.so.2 \
      --set-rpath "${hipblas}/lib:${rocblas}/lib:${clr}/lib:${glibc}/lib" \
      $out/bin/llama-server
    cat > $out/bin/llama-convert <<'EOF'
    #!${python3}/bin/python3
    # llama-convert (mini): stands in for convert.py (HF -> GGUF)
    echo "llama-convert (mini): would convert $1 to GGUF"
    EOF
    chmod 0555 $out/bin/llama-convert $out/bin/llama-server
  '';

  # Rebuilds that check nix-heft's what-if predictions (tests only). Each is
  # the original derivation with its builder script edited, so everything it
  # shares with the original is byte-identical.
  variant = base: extra: derivation (base.drvAttrs // extra);
  script = base: builtins.elemAt base.args 1;
  # What nixpkgs' multiple-outputs hook does with outputs = [ "out" "dev" ]
  # (and "doc"): moveToOutput include, lib/pkgconfig, lib/cmake -> dev,
  # share/doc -> doc, empty parents removed, and dev propagating out.
  propagate = ''
    mkdir -p $dev/nix-support
    printf ' %s' "$out" >> $dev/nix-support/propagated-build-inputs
  '';
  # The whole plan applied (advise --targets gfx90a): rocblas built for
  # gfx90a and split, hipblas split, relinked against it and without the
  # dead rocm-smi RUNPATH entry, llama-cpp relinked against both.
  splitRocblas = base: variant base {
    outputs = [ "out" "dev" ];
    args = [ "-c" (script base + ''
      mkdir -p $dev/lib
      mv $out/include $dev/include
      mv $out/lib/pkgconfig $dev/lib/pkgconfig
      mv $out/lib/cmake $dev/lib/cmake
    '' + propagate) ];
  };
  rocblas-lean = splitRocblas (rocblasFor [ "gfx90a" ]);
  hipblas-lean = variant hipblas {
    outputs = [ "out" "dev" "doc" ];
    args = [ "-c" (builtins.replaceStrings
      [ "${rocblas}/include" "${rocm-smi}/lib:" "${rocblas}" ]
      [ "${rocblas-lean.dev}/include" "" "${rocblas-lean}" ]
      (script hipblas) + ''
      mkdir -p $dev
      mv $out/include $dev/include
      mkdir -p $doc/share
      mv $out/share/doc $doc/share/doc
      rmdir $out/share
    '' + propagate) ];
  };
  llama-cpp-lean = variant llama-cpp {
    args = [ "-c" (builtins.replaceStrings
      [ "${hipblas}" "${rocblas}" ]
      [ "${hipblas-lean}" "${rocblas-lean}" ]
      (script llama-cpp)) ];
  };
  variants = {
    lean = llama-cpp-lean;
    # rocblas built for one GPU target: the same derivation with a shorter
    # list, so its farm links that target's Tensile path and the whole
    # fallback path (its *_fallback_gfxNNN links for other targets too).
    rocblas-gfx90a = rocblasFor [ "gfx90a" ];
    rocblas-gfx1030 = rocblasFor [ "gfx1030" ];
    rocblas-split = splitRocblas rocblas;
    hipblas-split = variant hipblas {
      outputs = [ "out" "dev" "doc" ];
      args = [ "-c" (script hipblas + ''
        mkdir -p $dev
        mv $out/include $dev/include
        mkdir -p $doc/share
        mv $out/share/doc $doc/share/doc
        rmdir $out/share
      '' + propagate) ];
    };
  };

in
llama-cpp // {
  inherit glibc rocm-llvm rocm-runtime clr rocblas-tensile rocm-cmake rocblas
    rocm-smi rocm-docs hipblas python3 llama-cpp variants;
}
