//! The global flags that say how a ROOT that is an installable is
//! evaluated (`-f`, `--expr`, `--arg`, …), as `nix` takes them; every
//! command that takes ROOTs shares them.

/// How ROOT arguments that are installables are evaluated; passed through
/// to the user's `nix`, which evaluates them (nothing is built).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Global options: installables (evaluated by nix, never built)")]
pub struct InstallableFlags {
    /// Every ROOT is an attribute path of this Nix file (or `<nixpkgs>`),
    /// as `nix build -f FILE ATTR` takes it; `.` is the file's value.
    #[arg(
        short = 'f',
        long = "file",
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath
    )]
    file: Option<String>,
    /// Every ROOT is an attribute path of this Nix expression's value
    /// (`.` for the value itself).
    #[arg(
        long,
        global = true,
        value_name = "EXPR",
        conflicts_with = "file",
        value_hint = clap::ValueHint::Other
    )]
    expr: Option<String>,
    /// Let `nix` evaluate impurely (`--impure`).
    #[arg(long, global = true)]
    impure: bool,
    /// Override a flake input when evaluating (`nix --override-input`);
    /// repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["INPUT", "FLAKEREF"],
        action = clap::ArgAction::Append
    )]
    override_input: Vec<String>,
    /// A Nix setting for the evaluation (`nix --option NAME VALUE`);
    /// repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["NAME", "VALUE"],
        action = clap::ArgAction::Append
    )]
    option: Vec<String>,
    /// An argument for the function the Nix file (or an attribute on the
    /// way to a ROOT) is, as a Nix expression (`nix --arg NAME EXPR`);
    /// repeatable.
    #[arg(
        long = "arg",
        global = true,
        num_args = 2,
        value_names = ["NAME", "EXPR"],
        action = clap::ArgAction::Append
    )]
    arg: Vec<String>,
    /// An argument for that function, as a string (`nix --argstr NAME
    /// STRING`); repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["NAME", "STRING"],
        action = clap::ArgAction::Append
    )]
    argstr: Vec<String>,
    /// Add PATH, or NAME=PATH, to the search path of `<NAME>` lookups,
    /// before NIX_PATH (`nix -I`); repeatable.
    #[arg(
        short = 'I',
        long = "include",
        global = true,
        value_name = "PATH",
        action = clap::ArgAction::Append
    )]
    include: Vec<String>,
    /// Show Nix's whole evaluation trace when evaluating a ROOT fails
    /// (`nix --show-trace`).
    #[arg(long, global = true)]
    show_trace: bool,
}

impl InstallableFlags {
    /// The options for `nix`; `matches` gives the order in which `--arg`
    /// and `--argstr` came, which Nix keeps (the last of a name wins).
    pub fn options(&self, matches: &clap::ArgMatches) -> nix_heft_eval::installable::Options {
        use nix_heft_eval::installable::AutoArg;
        let pairs = |v: &[String]| {
            v.chunks_exact(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect::<Vec<_>>()
        };
        // Each pair's position on the command line: the index of its NAME.
        let at = |id: &str| -> Vec<usize> {
            matches
                .indices_of(id)
                .map(|i| i.step_by(2).collect())
                .unwrap_or_default()
        };
        let mut auto_args: Vec<(usize, String, AutoArg)> = Vec::new();
        for ((n, v), i) in pairs(&self.arg).into_iter().zip(at("arg")) {
            auto_args.push((i, n, AutoArg::Expr(v)));
        }
        for ((n, v), i) in pairs(&self.argstr).into_iter().zip(at("argstr")) {
            auto_args.push((i, n, AutoArg::Str(v)));
        }
        auto_args.sort_by_key(|(i, _, _)| *i);
        nix_heft_eval::installable::Options {
            file: self.file.clone(),
            expr: self.expr.clone(),
            impure: self.impure,
            override_inputs: pairs(&self.override_input),
            options: pairs(&self.option),
            auto_args: auto_args.into_iter().map(|(_, n, v)| (n, v)).collect(),
            include: self.include.clone(),
            show_trace: self.show_trace,
            ..Default::default()
        }
    }
}

/// `--evaluator`: how `impact`, `history` and `bisect` evaluate a package
/// set's attributes.
#[derive(clap::Args, Debug, Clone)]
pub struct EvaluatorFlag {
    /// How attributes are evaluated: nix-eval-jobs, nix-env, or auto
    /// (nix-eval-jobs when it is on PATH).
    #[arg(long, value_name = "TOOL", default_value = "auto",
          value_parser = super::OneOf(&["auto", "nix-eval-jobs", "nix-env"]))]
    pub evaluator: String,
}
