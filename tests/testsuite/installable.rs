//! Installables evaluated by the real `nix` (offline: a Nix file and a
//! `path:` flake with no inputs), against the output paths
//! `nix-instantiate --eval` reports for the same attributes. The fixture is
//! the ROCm-shaped example (examples/rocm-mini), copied into a temporary
//! directory next to a `flake.nix`, since pure flake evaluation reads only
//! the flake's own files. Nothing is built: a derivation made for the test
//! has no valid output (nor, by default, a valid `.drv`) after evaluation.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{ExampleCopy, example_copy, in_child, is_child, run};
use crate::common::nix_output;
use nix_heft_eval::installable::{Evaluated, Installable, InstallableError, Options, evaluate};

struct Dir {
    path: PathBuf,
    /// A value no one has built: its name carries this run's nonce.
    nonce: String,
}

fn dir() -> &'static Dir {
    static D: OnceLock<Dir> = OnceLock::new();
    D.get_or_init(|| {
        let ExampleCopy {
            dir: path,
            system,
            nonce,
        } = example_copy("nix-heft-installable-");
        std::fs::write(
            path.join("unbuilt.nix"),
            format!(
                r#"derivation {{
  name = "unbuilt-{nonce}";
  system = {system};
  builder = "/bin/sh";
  outputs = [ "out" "dev" ];
  args = [ "-c" "echo > $out; echo > $dev" ];
}}"#
            ),
        )
        .unwrap();
        // A file that is a function (`--arg`, `--argstr`), with another
        // function on an attribute path, and one that looks a name up in
        // the search path (`-I`); a lookup name no NIX_PATH has.
        std::fs::write(
            path.join("greet.nix"),
            format!(
                r#"{{ greeting ? "x" }}:
derivation {{
  name = "greet-${{greeting}}-{nonce}";
  system = {system};
  builder = "/bin/sh";
  args = [ "-c" "echo ${{greeting}} > $out" ];
  passthru = 1;
}} // {{
  nested = {{ n ? 1 }}: derivation {{
    name = "nested-${{greeting}}-${{toString n}}-{nonce}";
    system = {system};
    builder = "/bin/sh";
    args = [ "-c" "echo > $out" ];
  }};
}}"#
            ),
        )
        .unwrap();
        let found = path.join("search").join(format!("heft-lookup-{nonce}"));
        std::fs::create_dir_all(&found).unwrap();
        std::fs::write(found.join("value.nix"), "\"found\"\n").unwrap();
        std::fs::write(
            path.join("lookup.nix"),
            format!(
                r#"derivation {{
  name = "lookup-${{import <heft-lookup-{nonce}/value.nix>}}-{nonce}";
  system = {system};
  builder = "/bin/sh";
  args = [ "-c" "echo > $out" ];
}}"#
            ),
        )
        .unwrap();
        // A flake input to override, and a second flake to override it
        // with; both `path:`, so nothing is fetched.
        for (sub, name) in [("dep", "dep-one"), ("dep2", "dep-two")] {
            std::fs::create_dir(path.join(sub)).unwrap();
            std::fs::write(
                path.join(sub).join("flake.nix"),
                format!(
                    r#"{{ outputs = {{ self }}: {{ pkg = derivation {{
  name = "{name}-{nonce}"; system = {system}; builder = "/bin/sh"; args = [ "-c" "echo > $out" ];
}}; }}; }}"#
                ),
            )
            .unwrap();
        }
        std::fs::write(
            path.join("flake.nix"),
            format!(
                r#"{{
  inputs.dep.url = "path:{dep}";
  outputs = {{ self, dep }}:
    let p = import ./default.nix {{ system = {system}; }};
    in {{
      fromDep = dep.pkg;
      # Pure evaluation has no builtins.currentSystem.
      impure = import ./default.nix {{ system = builtins.currentSystem; }};
      # Import from derivation: evaluating it would need a build.
      ifd = import (derivation {{
        name = "ifd-{nonce}"; system = {system}; builder = "/bin/sh";
        args = [ "-c" "echo 'builtins.head [ ({{}}: 1) ]' > $out" ];
      }});
      packages.{system} = {{
        default = p;
        inherit (p) rocblas clr;
        hipblas-split = p.variants.hipblas-split;
        dev-doc = p.variants.hipblas-split // {{ meta.outputsToInstall = [ "dev" "doc" ]; }};
      }};
      notPackage = 42;
    }};
}}"#,
                dep = path.join("dep").display()
            ),
        )
        .unwrap();
        Dir { path, nonce }
    })
}

fn file() -> String {
    dir().path.join("default.nix").display().to_string()
}

fn flake(attr: &str) -> String {
    format!("path:{}#{attr}", dir().path.display())
}

/// `nix-instantiate --eval` of `ATTR.OUTPUT.outPath` (or `ATTR.drvPath`
/// when `output` is `drvPath`) in the example: Nix's own answer.
fn nix_says(attr: &str, output: &str) -> String {
    let expr = if output == "drvPath" {
        format!("{attr}.drvPath")
    } else {
        format!("{attr}.{output}.outPath")
    };
    let mut c = Command::new("nix-instantiate");
    c.args(["--eval", "--json"]).arg(file());
    if !expr.starts_with('.') {
        c.args(["-A", &expr]);
    } else {
        c.args(["-A", &expr[1..]]);
    }
    serde_json::from_str(&run(&mut c)).unwrap()
}

fn eval_one(arg: &str, opts: &Options) -> Result<Evaluated, InstallableError> {
    let i = Installable::parse(arg, opts).unwrap_or_else(|| panic!("{arg} not an installable"));
    Ok(evaluate(&[i], opts)?.pop().unwrap())
}

/// Checks `e` against Nix's paths of `attr`'s `outputs`, in that order.
fn check(e: &Evaluated, attr: &str, outputs: &[&str]) {
    assert_eq!(e.drv_path.as_str(), nix_says(attr, "drvPath"), "{}", e.arg);
    let got: Vec<(&str, &str)> = e
        .outputs
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str()))
        .collect();
    let want: Vec<(String, String)> = outputs
        .iter()
        .map(|o| (o.to_string(), nix_says(attr, o)))
        .collect();
    let want: Vec<(&str, &str)> = want.iter().map(|(n, p)| (n.as_str(), p.as_str())).collect();
    assert_eq!(got, want, "{}", e.arg);
}

#[test]
fn file_attribute_paths() {
    let opts = Options {
        file: Some(file()),
        ..Options::default()
    };
    let split = "variants.hipblas-split";
    // `-f`: without a selection every output (Nix's queryOutputs).
    check(
        &eval_one(split, &opts).unwrap(),
        split,
        &["out", "dev", "doc"],
    );
    check(
        &eval_one(&format!("{split}^out,dev"), &opts).unwrap(),
        split,
        &["out", "dev"],
    );
    check(
        &eval_one(&format!("{split}^doc,out"), &opts).unwrap(),
        split,
        &["doc", "out"],
    );
    check(
        &eval_one(&format!("{split}^*"), &opts).unwrap(),
        split,
        &["out", "dev", "doc"],
    );
    check(&eval_one("rocblas", &opts).unwrap(), "rocblas", &["out"]);
    // "." is the file's value (a function, called as Nix auto-calls it).
    check(&eval_one(".", &opts).unwrap(), "", &["out"]);
}

#[test]
fn expressions() {
    let opts = Options {
        expr: Some(format!("(import {} {{ }}).variants", file())),
        impure: true,
        ..Options::default()
    };
    check(
        &eval_one("hipblas-split^dev", &opts).unwrap(),
        "variants.hipblas-split",
        &["dev"],
    );
    // meta.outputsToInstall picks the defaults.
    let opts = Options {
        expr: Some(format!(
            "(import {} {{ }}).variants.hipblas-split // {{ meta.outputsToInstall = [ \"doc\" ]; }}",
            file()
        )),
        impure: true,
        ..Options::default()
    };
    check(
        &eval_one(".", &opts).unwrap(),
        "variants.hipblas-split",
        &["doc"],
    );
    // Pure evaluation (Nix's default for --expr) refuses the file, with
    // Nix's words.
    let pure = Options {
        impure: false,
        ..opts
    };
    let e = eval_one(".", &pure).unwrap_err();
    assert!(
        matches!(&e, InstallableError::Eval { stderr, .. } if stderr.contains("forbidden in pure eval mode")),
        "{e}"
    );
}

#[test]
fn path_flakes() {
    let opts = Options::default();
    let split = "variants.hipblas-split";
    // A flake's default is `out` (no outputsToInstall, no outputSpecified).
    check(
        &eval_one(&flake("hipblas-split"), &opts).unwrap(),
        split,
        &["out"],
    );
    check(
        &eval_one(&flake("hipblas-split^out,dev"), &opts).unwrap(),
        split,
        &["out", "dev"],
    );
    check(
        &eval_one(&flake("hipblas-split^*"), &opts).unwrap(),
        split,
        &["out", "dev", "doc"],
    );
    check(
        &eval_one(&flake("dev-doc"), &opts).unwrap(),
        split,
        &["dev", "doc"],
    );
    check(
        &eval_one(&flake("rocblas"), &opts).unwrap(),
        "rocblas",
        &["out"],
    );
    // The full attribute path and the empty one (packages.SYSTEM.default).
    let system =
        run(Command::new("nix-instantiate").args(["--eval", "--expr", "builtins.currentSystem"]));
    let full = format!("packages.{}.clr", system.trim().trim_matches('"'));
    check(&eval_one(&flake(&full), &opts).unwrap(), "clr", &["out"]);
    check(&eval_one(&flake(""), &opts).unwrap(), "", &["out"]);
    // Several at once, in order; a flake evaluation writes no lock file.
    let all = evaluate(
        &[
            Installable::parse(&flake("clr"), &opts).unwrap(),
            Installable::parse(&flake("rocblas"), &opts).unwrap(),
        ],
        &opts,
    )
    .unwrap();
    assert_eq!(all.len(), 2);
    check(&all[0], "clr", &["out"]);
    check(&all[1], "rocblas", &["out"]);
    assert!(!dir().path.join("flake.lock").exists());
    // Nor any source in the store: the flake and its input were copied
    // into a scratch store, gone with the evaluation.
    for d in [dir().path.clone(), dir().path.join("dep")] {
        let src = crate::common::flake_source(&format!("path:{}", d.display()));
        assert!(!src.exists(), "{}", src.display());
    }
}

#[test]
fn derivation_paths_read_their_outputs_from_the_file() {
    let drv = run(Command::new("nix-instantiate")
        .arg(file())
        .args(["-A", "variants.hipblas-split"]));
    let drv = drv.trim();
    let opts = Options::default();
    let attr = "variants.hipblas-split";
    // Every output, in the file's (sorted) order.
    check(&eval_one(drv, &opts).unwrap(), attr, &["dev", "doc", "out"]);
    check(
        &eval_one(&format!("{drv}^dev,out"), &opts).unwrap(),
        attr,
        &["dev", "out"],
    );
    check(
        &eval_one(&format!("{drv}!doc"), &opts).unwrap(),
        attr,
        &["doc"],
    );
    // Not in the store; in the store but not there (never instantiated).
    let e = eval_one("/tmp/x.drv^out", &opts).unwrap_err();
    assert!(matches!(&e, InstallableError::BadDrvPath { .. }), "{e}");
    let gone = "/nix/store/00000000000000000000000000000000-gone.drv";
    let e = eval_one(gone, &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::Drv(_)) && e.to_string().contains(gone),
        "{e}"
    );
    let e = eval_one(&format!("{drv}^lib"), &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::NoSuchOutput { output, available, .. }
            if output == "lib" && available == &["dev", "doc", "out"]),
        "{e}"
    );
}

#[test]
fn nix_flags_pass_through() {
    let opts = Options::default();
    let dep = |o: &Options| {
        let e = eval_one(&flake("fromDep"), o).unwrap();
        e.outputs[0].1.name().to_string()
    };
    let nonce = &dir().nonce;
    assert_eq!(dep(&opts), format!("dep-one-{nonce}"));
    let over = Options {
        override_inputs: vec![(
            "dep".into(),
            format!("path:{}", dir().path.join("dep2").display()),
        )],
        ..Options::default()
    };
    assert_eq!(dep(&over), format!("dep-two-{nonce}"));

    // --impure, and the same through --option pure-eval false.
    let e = eval_one(&flake("impure"), &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::Eval { stderr, .. } if stderr.contains("currentSystem")),
        "{e}"
    );
    let impure = Options {
        impure: true,
        ..Options::default()
    };
    check(&eval_one(&flake("impure"), &impure).unwrap(), "", &["out"]);
    let option = Options {
        options: vec![("pure-eval".into(), "false".into())],
        ..Options::default()
    };
    check(&eval_one(&flake("impure"), &option).unwrap(), "", &["out"]);
    assert!(!dir().path.join("flake.lock").exists());
}

#[test]
fn import_from_derivation_is_not_built() {
    // Even when instantiating, the derivation an import needs stays
    // unbuilt; read-only (the default), its `.drv` is not even written.
    // Either way the error says so, names the derivation and the command
    // that builds it (tests/testsuite/installable_cli.rs runs that command).
    let ifd_drv = format!("-ifd-{}.drv", dir().nonce);
    for instantiate in [false, true] {
        let opts = Options {
            instantiate,
            ..Options::default()
        };
        let e = eval_one(&flake("ifd"), &opts).unwrap_err();
        let InstallableError::ImportFromDerivation {
            path,
            stderr,
            build,
            ..
        } = &e
        else {
            panic!("not told as an import from derivation: {e}");
        };
        assert!(
            path.as_deref().is_some_and(|p| p.ends_with(&ifd_drv)),
            "{e}"
        );
        // Nix's own words stay.
        let said = if instantiate {
            "'allow-import-from-derivation' is disabled"
        } else {
            "is not valid"
        };
        assert!(stderr.contains(said), "{e}");
        assert_eq!(
            build,
            &format!(
                "nix --extra-experimental-features 'nix-command flakes' path-info --derivation {}",
                flake("ifd")
            )
        );
        let text = e.to_string();
        assert!(
            text.contains("read-only")
                && text.contains("--option allow-import-from-derivation true"),
            "{text}"
        );
        assert!(!e.is_usage());
    }
    let built = std::fs::read_dir("/nix/store").unwrap().flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.ends_with(&format!("-ifd-{}", dir().nonce))
    });
    assert!(!built, "the IFD derivation was built");
}

/// `nix-instantiate --eval` of `ATTR.outPath` of `file` with `flags`
/// (`--arg`, `--argstr`, `-I`): Nix's own answer.
fn nix_out_path(file: &str, attr: &str, flags: &[&str]) -> String {
    let attr = if attr.is_empty() {
        "outPath".to_string()
    } else {
        format!("{attr}.outPath")
    };
    let out = run(Command::new("nix-instantiate")
        .args(["--eval", "--json"])
        .args(flags)
        .arg(file)
        .args(["-A", &attr]));
    serde_json::from_str(&out).unwrap()
}

#[test]
fn arg_argstr_and_include_reach_the_function_and_the_search_path() {
    use nix_heft_eval::installable::AutoArg;
    let nonce = &dir().nonce;
    let greet = dir().path.join("greet.nix").display().to_string();
    let with = |auto_args: Vec<(&str, AutoArg)>| Options {
        file: Some(greet.clone()),
        auto_args: auto_args
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
        ..Options::default()
    };
    let out = |attr: &str, opts: &Options| {
        let e = eval_one(attr, opts).unwrap();
        assert_eq!(e.outputs.len(), 1, "{e:?}");
        e.outputs[0].1.as_str().to_string()
    };
    let str_ = |s: &str| AutoArg::Str(s.into());
    let expr = |s: &str| AutoArg::Expr(s.into());
    // The file's value is the function: called with the defaults, or
    // with what --argstr and --arg give, as `nix-build` calls it.
    for (args, flags, name) in [
        (vec![], vec![], "greet-x"),
        (
            vec![("greeting", str_("hi"))],
            vec!["--argstr", "greeting", "hi"],
            "greet-hi",
        ),
        (
            vec![("greeting", expr(r#""ex" + "pr" # a comment"#))],
            vec!["--arg", "greeting", r#""ex" + "pr" # a comment"#],
            "greet-expr",
        ),
        // The last of a name wins, as in Nix; an argument the function
        // does not take is left alone.
        (
            vec![
                ("greeting", str_("one")),
                ("greeting", expr(r#""two""#)),
                ("other", str_("x")),
            ],
            vec![
                "--argstr", "greeting", "one", "--arg", "greeting", r#""two""#, "--argstr",
                "other", "x",
            ],
            "greet-two",
        ),
    ] {
        let opts = with(args);
        let got = out(".", &opts);
        assert_eq!(got, nix_out_path(&greet, "", &flags), "{flags:?}");
        assert!(got.ends_with(&format!("-{name}-{nonce}")), "{got}");
    }
    // Along an attribute path: `nix` calls the file with them, nix-heft
    // the function the path ends at.
    let opts = with(vec![("greeting", str_("hi")), ("n", expr("1 + 1"))]);
    let got = out("nested", &opts);
    let flags = ["--argstr", "greeting", "hi", "--arg", "n", "1 + 1"];
    assert_eq!(got, nix_out_path(&greet, "nested", &flags));
    assert!(got.ends_with(&format!("-nested-hi-2-{nonce}")), "{got}");
    // A missing argument is Nix's error (exit 1 in the CLI).
    let bad = with(vec![("greeting", expr("1 +"))]);
    let e = eval_one(".", &bad).unwrap_err();
    assert!(matches!(&e, InstallableError::Eval { .. }), "{e}");

    // -I NAME=PATH and -I PATH, as Nix's search path reads them.
    let lookup = dir().path.join("lookup.nix").display().to_string();
    let search = dir().path.join("search");
    let named = format!(
        "heft-lookup-{nonce}={}",
        search.join(format!("heft-lookup-{nonce}")).display()
    );
    let plain = search.display().to_string();
    for include in [&named, &plain] {
        let opts = Options {
            file: Some(lookup.clone()),
            include: vec![include.clone()],
            ..Options::default()
        };
        let got = out(".", &opts);
        assert_eq!(got, nix_out_path(&lookup, "", &["-I", include]));
        assert!(got.ends_with(&format!("-lookup-found-{nonce}")), "{got}");
    }
    let opts = Options {
        file: Some(lookup.clone()),
        ..Options::default()
    };
    let e = eval_one(".", &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::Eval { stderr, .. }
            if stderr.contains(&format!("heft-lookup-{nonce}/value.nix")) && stderr.contains("search path")),
        "{e}"
    );
}

#[test]
fn show_trace_passes_nix_trace_through() {
    let failing = r#"let inner = x: throw "boom ${x}"; in { pkg = inner "deep"; }"#;
    let opts = |show_trace| Options {
        expr: Some(failing.into()),
        show_trace,
        ..Options::default()
    };
    let stderr = |show_trace| match eval_one("pkg", &opts(show_trace)).unwrap_err() {
        InstallableError::Eval { stderr, .. } => stderr,
        e => panic!("{e}"),
    };
    let (short, traced) = (stderr(false), stderr(true));
    assert!(short.contains("boom deep") && traced.contains("boom deep"));
    // The frame of `inner`, as `nix eval --show-trace` prints it.
    let frame = "while evaluating 'inner'";
    assert!(!short.contains(frame), "{short}");
    assert!(traced.contains(frame), "{traced}");
    let nix = nix_output(Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "eval",
            "--show-trace",
            "--expr",
            failing,
            "pkg",
        ]));
    assert!(String::from_utf8_lossy(&nix.stderr).contains(frame));
}

#[test]
fn typed_flake_reference_without_fragment_means_its_default_package() {
    let opts = Options::default();
    let bare = format!("path:{}", dir().path.display());
    let e = eval_one(&bare, &opts).unwrap();
    assert_eq!(
        e,
        Evaluated {
            arg: bare.clone(),
            ..eval_one(&flake("default"), &opts).unwrap()
        }
    );
    check(&e, "", &["out"]);
    // A flake with no default package: Nix's words, and what to add.
    let dep = format!("path:{}", dir().path.join("dep").display());
    let e = eval_one(&dep, &opts).unwrap_err();
    let InstallableError::Eval { stderr, hint, .. } = &e else {
        panic!("{e}");
    };
    assert!(stderr.contains("does not provide attribute"), "{e}");
    assert!(
        hint.as_deref()
            .is_some_and(|h| h.contains(&format!("'{dep}#NAME'"))),
        "{e}"
    );
    assert!(e.to_string().contains(&format!("'{dep}#NAME'")), "{e}");
    // With a `#`, Nix's error alone.
    let e = eval_one(&format!("{dep}#nosuch"), &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::Eval { hint: None, .. }),
        "{e}"
    );
}

/// The first `error:` line `nix` itself prints for `args`.
fn nix_error(args: &[&str]) -> String {
    let out = nix_output(Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command flakes",
            "eval",
        ])
        // Nix would write the flake's lock file next to it otherwise, and
        // the flake's source into the store: a throwaway one instead.
        .arg("--no-write-lock-file")
        .arg("--eval-store")
        .arg(format!("local?root={}", crate::common::scratch_dir("nix-error-store").display()))
        .args(args));
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap()
        .to_string()
}

#[test]
fn evaluation_errors_carry_nix_words() {
    let opts = Options::default();
    let e = eval_one(&flake("nope"), &opts).unwrap_err();
    let said = nix_error(&[&flake("nope")]);
    assert!(said.contains("does not provide attribute"), "{said}");
    assert!(
        matches!(&e, InstallableError::Eval { stderr, .. } if stderr.contains(&said)),
        "{e}"
    );
    assert!(e.to_string().contains(&said) && !e.is_usage());

    let f = Options {
        file: Some(file()),
        ..Options::default()
    };
    let e = eval_one("nope.deeper", &f).unwrap_err();
    let said = nix_error(&["-f", &file(), "nope.deeper"]);
    assert!(said.contains("'nope'"), "{said}");
    assert!(e.to_string().contains(&said), "{e}");

    // Not a derivation; an output it does not have.
    let e = eval_one(&flake("notPackage"), &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::NotDerivation { found, .. } if found == "int"),
        "{e}"
    );
    let e = eval_one("variants", &f).unwrap_err();
    assert!(matches!(&e, InstallableError::NotDerivation { .. }), "{e}");
    let e = eval_one(&flake("clr^dev"), &opts).unwrap_err();
    assert!(
        matches!(&e, InstallableError::NoSuchOutput { output, available, .. }
            if output == "dev" && available == &["out"]),
        "{e}"
    );
    // --file and --expr together, as Nix refuses them.
    let both = Options {
        file: Some(file()),
        expr: Some("1".into()),
        ..Options::default()
    };
    let i = Installable::parse("x", &both).unwrap();
    let e = evaluate(&[i], &both).unwrap_err();
    assert!(matches!(e, InstallableError::FileAndExpr) && e.is_usage());
}

/// `.#attr`: the flake in the working directory (a plain directory, so
/// `path:` to Nix), in a child process that changes its own directory.
#[test]
fn dot_flake_in_the_working_directory() {
    if !is_child() {
        in_child("dot_flake_in_the_working_directory", &[]);
        return;
    }
    std::env::set_current_dir(&dir().path).unwrap();
    let opts = Options::default();
    check(&eval_one(".#clr", &opts).unwrap(), "clr", &["out"]);
    check(
        &eval_one(".#hipblas-split^dev,doc", &opts).unwrap(),
        "variants.hipblas-split",
        &["dev", "doc"],
    );
    check(&eval_one(".#", &opts).unwrap(), "", &["out"]);
    assert!(!dir().path.join("flake.lock").exists());
}

fn valid(path: &str) -> bool {
    nix_output(Command::new("nix-store")
        .args(["--check-validity", path]))
        .status
        .success()
}

#[test]
fn nothing_is_built_or_written() {
    let unbuilt = dir().path.join("unbuilt.nix");
    let opts = Options {
        file: Some(unbuilt.display().to_string()),
        ..Options::default()
    };
    let e = eval_one(".", &opts).unwrap();
    assert!(e.drv_path.as_str().contains(&dir().nonce));
    assert_eq!(e.outputs.len(), 2);
    // By default nix runs read-only: not even the .drv is written.
    assert!(!valid(e.drv_path.as_str()), "{} written", e.drv_path);
    for (_, p) in &e.outputs {
        assert!(!valid(p.as_str()), "{p} built");
    }
    // Instantiating writes the .drv (as `nix eval` does) and builds nothing.
    let inst = Options {
        instantiate: true,
        ..opts
    };
    let e2 = eval_one(".", &inst).unwrap();
    assert_eq!(e2, e);
    assert!(valid(e.drv_path.as_str()), "{} not written", e.drv_path);
    for (_, p) in &e.outputs {
        assert!(!valid(p.as_str()), "{p} built");
    }
    // Nix agrees on the paths.
    let want = run(Command::new("nix-instantiate")
        .args(["--eval", "--json", "--strict", "--expr"])
        .arg(format!(
            "let d = import {}; in [ d.drvPath d.out.outPath d.dev.outPath ]",
            unbuilt.display()
        )));
    let want: Vec<String> = serde_json::from_str(&want).unwrap();
    assert_eq!(
        [
            e.drv_path.as_str(),
            e.outputs[0].1.as_str(),
            e.outputs[1].1.as_str()
        ],
        [want[0].as_str(), want[1].as_str(), want[2].as_str()]
    );
}
