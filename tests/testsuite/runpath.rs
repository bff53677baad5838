//! The RUNPATH edit `advise` proposes for a dead entry, applied with real
//! patchelf (the snippet's own shell, as Nix hands it to a builder) to a
//! copy of a real program whose RUNPATH also has an entry that serves only
//! a library it dlopen()s (tests/fixtures/runpath.nix): the dead entry
//! goes, the dlopen() entry stays and the program still loads its plug-in;
//! `patchelf --shrink-rpath` on another copy drops both and breaks it.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// The RUNPATH of `file`, as patchelf prints it.
fn rpath(file: &Path) -> String {
    run(Command::new("patchelf").arg("--print-rpath").arg(file))
        .trim()
        .to_string()
}

/// A writable copy of the store path `p` under `dir`.
fn copy_of(p: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let to = dir.join(name);
    run(Command::new("cp").arg("-r").arg(p).arg(&to));
    run(Command::new("chmod").arg("-R").arg("u+w").arg(&to));
    to
}

/// The `postFixup` text of a bindings snippet, as Nix evaluates it.
fn post_fixup(snippet: &str) -> String {
    let expr = format!("{{\n{snippet}\n}}.postFixup");
    let out = run(
        Command::new("nix-instantiate").args(["--eval", "--strict", "--json", "--expr", &expr])
    );
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_runpath_edit_keeps_the_entry_that_serves_dlopen() {
    let built = nix_build(
        &repo().join("tests/fixtures/runpath.nix"),
        &["app", "plugin", "unused", "unused2"],
    );
    let [app, plugin, unused, unused2] = [&built[0], &built[1], &built[2], &built[3]];
    let original = rpath(&Path::new(app).join("bin/app"));
    assert_eq!(original, format!("{unused}/lib:{plugin}/lib:{unused2}/lib"));

    let o = heft_run(None, &["--json", "advise", app, "--min-saving", "0"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let actions = v["actions"].as_array().unwrap();
    // One action per dead entry, none on the entry that serves the plug-in.
    let dead: Vec<&Value> = actions
        .iter()
        .filter(|a| a["kind"] == "dead-runpath")
        .collect();
    let mut cut: Vec<&str> = dead
        .iter()
        .map(|a| a["cuts"][0].as_str().unwrap())
        .collect();
    cut.sort();
    let mut want = [unused.as_str(), unused2.as_str()];
    want.sort();
    assert_eq!(cut, want, "{v}");
    assert!(
        actions
            .iter()
            .all(|a| !a["cuts"].to_string().contains(plugin.as_str())),
        "{v}"
    );

    // Each snippet, run as a builder would run it, on a copy as `$out`;
    // then all of them in turn on one copy, as the plan applies them.
    let dir = scratch("runpath-edit");
    let hooks: Vec<String> = dead
        .iter()
        .map(|a| {
            assert_eq!(a["safety"], "safe");
            post_fixup(a["snippet"].as_str().unwrap())
        })
        .collect();
    let together = copy_of(app, &dir, "together");
    for (i, hook) in hooks.iter().enumerate() {
        assert!(hook.contains("patchelf --set-rpath"), "{hook}");
        let alone = copy_of(app, &dir, &format!("alone-{i}"));
        for out in [&alone, &together] {
            run(Command::new("bash")
                .args(["-e", "-c", hook])
                .env("out", out));
        }
        check_loads(&alone.join("bin/app"), plugin);
    }
    check_loads(&together.join("bin/app"), plugin);

    // After a rebuild of the dead dependencies their hashes differ from
    // the ones nix-heft saw: the edit matches entries by name, not by the
    // old store path, so it still drops exactly them.
    let rebuilt = copy_of(app, &dir, "rebuilt-deps");
    let other = |p: &str, c: &str| format!("/nix/store/{}{}", c.repeat(32), &p[43..]);
    let moved = format!(
        "{}/lib:{plugin}/lib:{}/lib",
        other(unused, "a"),
        other(unused2, "b")
    );
    run(Command::new("patchelf")
        .args(["--set-rpath", &moved])
        .arg(rebuilt.join("bin/app")));
    for hook in &hooks {
        run(Command::new("bash")
            .args(["-e", "-c", hook])
            .env("out", &rebuilt));
    }
    check_loads(&rebuilt.join("bin/app"), plugin);

    // Why not --shrink-rpath: it keeps only entries where a DT_NEEDED
    // library is found, so the plug-in's entry goes too and dlopen() fails.
    let shrunk = copy_of(app, &dir, "shrunk");
    let bin = shrunk.join("bin/app");
    run(Command::new("patchelf").arg("--shrink-rpath").arg(&bin));
    assert!(!rpath(&bin).contains(plugin.as_str()), "{}", rpath(&bin));
    let ran = Command::new(&bin).output().unwrap();
    assert!(!ran.status.success());
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("libplugin.so"),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    // The reason says why a dead entry can survive nixpkgs' fixup at all.
    for a in &dead {
        let reason = a["reason"].as_str().unwrap();
        for why in ["dontPatchELF", "patchelf --shrink-rpath", "DT_RPATH"] {
            assert!(reason.contains(why), "reason lacks {why}: {reason}");
        }
    }
}

/// `bin` has only the plug-in's entry left, and still loads the plug-in
/// (every dlopen() candidate is found).
fn check_loads(bin: &Path, plugin: &str) {
    assert_eq!(
        rpath(bin),
        format!("{plugin}/lib"),
        "only the dead entries go"
    );
    let ran = Command::new(bin).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "plugin says 42\n");
}
