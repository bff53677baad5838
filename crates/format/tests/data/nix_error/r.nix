# Failing derivations for nix-heft issue 33 (nix_error.rs fixtures, docs/guide/refused.md).
let
  sys = builtins.currentSystem;
  mk = attrs: derivation ({ system = sys; builder = "/bin/sh"; PATH = "/usr/bin:/bin"; } // attrs);
  dep = mk { name = "nl-dep-1.0"; args = ["-c" "echo dep > $out"]; };
  mid = mk { name = "nl-mid-1.0"; args = ["-c" "echo ${dep} > $out"]; };
  sa = attrs: mk ({ __structuredAttrs = true; builder = "/bin/bash"; args = ["-c" ". .attrs.sh; out=\${outputs[out]}; echo building; mkdir -p $out; echo ${mid} > $out/ref; head -c 4096 /dev/zero > $out/zeros"]; } // attrs);
in {
  disallowed = mk { name = "nl-dis-1.0"; args = ["-c" "echo building dis; mkdir -p $out/share; echo ${dep} > $out/share/README"]; disallowedReferences = [ dep ]; };
  requisites = mk { name = "nl-req-1.0"; args = ["-c" "echo building req; mkdir -p $out; echo ${mid} > $out/ref"]; disallowedRequisites = [ dep ]; };
  allowed = mk { name = "nl-allow-1.0"; args = ["-c" "echo building allow; mkdir -p $out; echo ${mid} ${dep} > $out/ref"]; allowedReferences = [ mid ]; };
  allowedReq = mk { name = "nl-allowreq-1.0"; args = ["-c" "echo building allowreq; mkdir -p $out; echo ${mid} > $out/ref"]; allowedRequisites = [ ]; };
  many = mk { name = "nl-many-1.0"; args = ["-c" "echo building many; mkdir -p $out; echo ${mid} ${dep} > $out/ref"]; allowedReferences = [ ]; };
  cycle = mk { name = "nl-cyc-1.0"; outputs = ["out" "dev"]; args = ["-c" "echo building cyc; mkdir -p $out/lib/pkgconfig $dev/lib/cmake; echo $dev > $out/lib/pkgconfig/foo.pc; echo $out > $dev/lib/cmake/foo-config.cmake"]; };
  maxSize = sa { name = "nl-big-1.0"; outputChecks.out.maxSize = 1000; };
  maxClosure = sa { name = "nl-bigclosure-1.0"; outputChecks.out.maxClosureSize = 4700; };
  structured = sa { name = "nl-sa-1.0"; outputChecks.out.disallowedRequisites = [ dep ]; };
}
