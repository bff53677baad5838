//! Not a command: the closure rules `check`, `impact` and `bisect` take,
//! one set of flags parsed by one library type
//! ([`nix_heft_analysis::rules::ClosureRules`]), so that `--forbid` and the
//! budgets mean the same in each. Which baseline `--max-growth` is over is
//! each command's.

use clap::Args;

use nix_heft_analysis::rules::RuleText;

/// The closure rules.
#[derive(Args, Debug, Clone, Default)]
pub struct RuleFlags {
    /// Fail when the closure is larger than SIZE (IEC or SI: 1GiB, 900MB).
    #[arg(long, value_name = "SIZE", value_hint = clap::ValueHint::Other)]
    pub max_closure: Option<String>,
    /// Fail when the closure grew by more than SIZE or PCT (10%) over its
    /// baseline: check's --against or --against-json, each attribute's own
    /// base closure for impact, the good commit's for bisect.
    #[arg(long, value_name = "SIZE|PCT", value_hint = clap::ValueHint::Other)]
    pub max_growth: Option<String>,
    /// Fail when a path whose name matches GLOB is in the closure, like
    /// disallowedRequisites (`rocm-llvm*`, `*-dev`), or, given a whole
    /// store path (one `diff` named, say), that very path; repeatable.
    #[arg(long, value_name = "GLOB|PATH", value_hint = clap::ValueHint::Other)]
    pub forbid: Vec<String>,
}

impl RuleFlags {
    /// The rules as written, for the library to parse.
    pub fn text(&self) -> RuleText<'_> {
        RuleText {
            max_closure: self.max_closure.as_deref(),
            max_growth: self.max_growth.as_deref(),
            forbid: &self.forbid,
        }
    }
}
