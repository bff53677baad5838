//! Groups of roots removed together, and the commands that remove roots,
//! in Nix's own terms where Nix has them (Nix 2.8's `profiles.cc`,
//! `nix-env --delete-generations`, `nix-collect-garbage`):
//!
//! - a profile's generations but the current one (`nix-env --profile P
//!   --delete-generations old`);
//! - a profile's generations older than N days, as `--delete-generations
//!   Nd` picks them: every generation older than the newest one made before
//!   then (which was current at that time, and stays), never the current;
//! - for the local store, every profile of `STATE/profiles`'s old
//!   generations (`nix-collect-garbage -d`, `--delete-older-than Nd`),
//!   which also runs the collector;
//! - every `result` link (`nix-build`'s out links, found through
//!   `auto/`), every direnv root (a `.direnv` directory on the way), every
//!   root older than N days but the profiles' current generations and
//!   `/run` (a system's own links), and the roots under each location
//!   asked; for these, `rm` of the links, and `nix-env
//!   --delete-generations` with the numbers for generations.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Root, RootKind, RootsRequest};
use nix_heft_format::quote;
use nix_heft_store::gc::roots::Profile;

/// What a group is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum GroupKind {
    /// A profile's generations but the current one.
    ProfileOld {
        /// The profile.
        profile: PathBuf,
    },
    /// A profile's generations older than `days`, as Nix picks them.
    ProfileOlderThan {
        /// The profile.
        profile: PathBuf,
        /// Days.
        days: u64,
    },
    /// `nix-collect-garbage -d`: every profile's old generations.
    CollectOld,
    /// `nix-collect-garbage --delete-older-than Nd`.
    CollectOlderThan {
        /// Days.
        days: u64,
    },
    /// Every `result` link.
    ResultLinks,
    /// Every root in a `.direnv` directory.
    Direnv,
    /// Every root older than `days` (not a profile's current generation,
    /// nothing under `/run`).
    OlderThan {
        /// Days.
        days: u64,
    },
    /// Every root at or below a location asked.
    Under {
        /// The location.
        path: PathBuf,
    },
    /// The roots that keep a path (`why --roots`).
    Keeping {
        /// The path.
        path: String,
    },
}

/// A group before its figure.
pub(super) struct Def {
    pub kind: GroupKind,
    pub title: String,
    pub members: Vec<usize>,
    pub commands: Vec<String>,
    /// Links the commands leave out (past `Context::max_links`).
    pub left_out: usize,
    pub collects: bool,
}

/// What the commands need to know of the store.
pub(super) struct Context<'a> {
    /// `--store ROOT` for a chroot store.
    pub store_arg: Option<&'a str>,
    /// Most links a group's commands name (the rest counted): a text
    /// report shows the first; `None`, every one.
    pub max_links: Option<usize>,
    /// The profiles found.
    pub profiles: &'a [Profile],
}

/// A root as the groups see it: with the path it keeps, whether it can be
/// removed and its generation.
pub(super) use super::found::Found as Member;

fn word(p: &Path) -> String {
    quote::shell(&String::from_utf8_lossy(p.as_os_str().as_bytes()))
}

/// `rm -- PATHS…`.
pub(super) fn rm_command(paths: &[PathBuf]) -> String {
    rm_commands(paths).concat()
}

/// Longest command line `rm_commands` makes: far below the kernel's
/// `ARG_MAX` (2 MiB with the environment), so every command runs.
const MAX_COMMAND: usize = 100_000;

/// `rm -- PATHS…`, as many commands as it takes to keep each within
/// [`MAX_COMMAND`] bytes.
fn rm_commands(paths: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    let mut s = String::from("rm --");
    for p in paths {
        let w = word(p);
        if s.len() + 1 + w.len() > MAX_COMMAND && s.len() > "rm --".len() {
            out.push(std::mem::replace(&mut s, String::from("rm --")));
        }
        s.push(' ');
        s.push_str(&w);
    }
    if s.len() > "rm --".len() {
        out.push(s);
    }
    out
}

fn store_flag(ctx: &Context) -> String {
    ctx.store_arg
        .map(|s| format!(" --store {}", quote::shell(s)))
        .unwrap_or_default()
}

/// `nix-env --profile P --delete-generations WHAT`.
fn delete_generations(ctx: &Context, profile: &Path, what: &str) -> String {
    format!(
        "nix-env{} --profile {} --delete-generations {what}",
        store_flag(ctx),
        word(profile)
    )
}

/// The collector on this store, with the settings given on nix-heft's
/// command line rather than in nix.conf.
pub(super) fn gc_command(ctx: &Context, options: &[(String, String)]) -> String {
    let mut s = format!("nix-store{} --gc", store_flag(ctx));
    for (k, v) in options {
        s.push_str(&format!(
            " --option {} {}",
            quote::shell(k),
            quote::shell(v)
        ));
    }
    s
}

/// The commands that remove `members` (removable roots): generations by
/// `nix-env --delete-generations` with their numbers (a current one, which
/// `nix-env` refuses, by removing the profile's link with it), the rest by
/// `rm`; and how many links were left out past `ctx.max_links`.
/// `members` are distinct roots (so their locations are distinct).
pub(super) fn remove_commands(ctx: &Context, members: &[&Root]) -> (Vec<String>, usize) {
    let mut by_profile: Vec<(PathBuf, Vec<u64>)> = Vec::new();
    let mut at: std::collections::HashMap<&[u8], usize> = Default::default();
    // Every member's location is its own (the roots are found one per
    // location); only a profile's link, removed with its current
    // generation, can come twice or be some root's location too.
    let mut links: Vec<&[u8]> = Vec::new();
    let mut profile_links: std::collections::HashSet<&[u8]> = Default::default();
    for r in members {
        match (&r.generation, r.kind) {
            (Some(g), RootKind::Generation) if !g.current => {
                match at.get(g.profile.as_os_str().as_bytes()) {
                    Some(&k) => by_profile[k].1.push(g.number),
                    None => {
                        at.insert(g.profile.as_os_str().as_bytes(), by_profile.len());
                        by_profile.push((g.profile.clone(), vec![g.number]));
                    }
                }
            }
            (Some(g), RootKind::Generation) => {
                profile_links.insert(g.profile.as_os_str().as_bytes());
                links.push(r.location.as_os_str().as_bytes());
            }
            _ => links.push(r.location.as_os_str().as_bytes()),
        }
    }
    if !profile_links.is_empty() {
        links.retain(|l| !profile_links.contains(l));
        links.extend(profile_links);
    }
    let mut out = Vec::new();
    by_profile.sort_by(|a, b| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()));
    for (p, mut ns) in by_profile {
        ns.sort_unstable();
        let ns: Vec<String> = ns.iter().map(u64::to_string).collect();
        out.push(delete_generations(ctx, &p, &ns.join(" ")));
    }
    // Only the links shown are put in order (a text report names the first
    // few of a million), by bytes: paths compared component by component
    // are slow by the hundred thousand.
    let total = links.len();
    let shown = ctx.max_links.unwrap_or(usize::MAX).min(total);
    if shown < total {
        links.select_nth_unstable(shown);
        links.truncate(shown);
    }
    use rayon::slice::ParallelSliceMut;
    links.par_sort_unstable();
    let owned: Vec<PathBuf> = links
        .iter()
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    out.extend(rm_commands(&owned));
    (out, total - shown)
}

/// Nix's `deleteGenerationsOlderThan`: walking from the newest, the first
/// generation made before `t` stays (it was current then), every older
/// one goes, the current one never.
fn older_than(p: &Profile, t: i64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut can_delete = false;
    for (n, _, mtime) in p.generations.iter().rev() {
        if can_delete {
            if p.current != Some(*n) {
                out.push(*n);
            }
        } else if mtime.is_some_and(|m| m < t) {
            can_delete = true;
        }
    }
    out
}

/// `nix-collect-garbage`'s profiles: the links in `STATE/profiles` (and
/// below) whose target contains "link".
fn collected(p: &Profile) -> bool {
    p.in_state_profiles
        && p.target
            .as_ref()
            .is_some_and(|t| memchr::memmem::find(t.as_bytes(), b"link").is_some())
}

/// Every group of `view` (the roots shown, by index) that has members.
pub(super) fn define(ctx: &Context, view: &[Member], req: &RootsRequest) -> Vec<Def> {
    let days = req.older_than_days;
    let t = req.now - (days as i64) * 86_400;
    let mut defs: Vec<Def> = Vec::new();
    // On every core: a million and a half roots read for each group.
    let of = |pred: &(dyn Fn(&Member) -> bool + Sync)| -> Vec<usize> {
        use rayon::prelude::*;
        view.par_iter()
            .with_min_len(4096)
            .enumerate()
            .filter(|(_, m)| m.removable && pred(m))
            .map(|(i, _)| i)
            .collect()
    };
    let roots_of =
        |members: &[usize]| -> Vec<&Root> { members.iter().map(|&i| &view[i].root).collect() };
    let push = |defs: &mut Vec<Def>,
                kind,
                title: String,
                members: Vec<usize>,
                commands: (Vec<String>, usize),
                collects| {
        if members.is_empty()
            || defs
                .iter()
                .any(|d| d.members == members && d.collects == collects)
        {
            return;
        }
        defs.push(Def {
            kind,
            title,
            members,
            commands: commands.0,
            left_out: commands.1,
            collects,
        });
    };
    if !req.under.is_empty() {
        for u in &req.under {
            let u = u.as_os_str().as_bytes();
            let members = of(&|m| {
                m.root
                    .location
                    .as_os_str()
                    .as_bytes()
                    .strip_prefix(u)
                    .is_some_and(|r| r.is_empty() || r[0] == b'/' || u.ends_with(b"/"))
            });
            let commands = remove_commands(ctx, &roots_of(&members));
            push(
                &mut defs,
                GroupKind::Under {
                    path: PathBuf::from(std::ffi::OsStr::from_bytes(u)),
                },
                format!("every root under {}", String::from_utf8_lossy(u)),
                members,
                commands,
                false,
            );
        }
        return defs;
    }
    let mut collect_old: Vec<usize> = Vec::new();
    let mut collect_older: Vec<usize> = Vec::new();
    // Each profile's generations among the roots, in one pass.
    let mut gens: Vec<Vec<(usize, u64)>> = vec![Vec::new(); ctx.profiles.len()];
    for (i, m) in view.iter().enumerate() {
        if let (true, Some(g)) = (m.removable, m.root.generation.as_deref()) {
            gens[g.profile_index].push((i, g.number));
        }
    }
    for (k, p) in ctx.profiles.iter().enumerate() {
        let old: Vec<usize> = gens[k]
            .iter()
            .filter(|(_, n)| p.current != Some(*n))
            .map(|(i, _)| *i)
            .collect();
        let picked = older_than(p, t);
        let older: Vec<usize> = gens[k]
            .iter()
            .filter(|(_, n)| picked.contains(n))
            .map(|(i, _)| *i)
            .collect();
        if collected(p) {
            collect_old.extend(&old);
            collect_older.extend(&older);
        }
        let current = p.current.map_or("none".to_string(), |c| c.to_string());
        push(
            &mut defs,
            GroupKind::ProfileOld {
                profile: p.path.clone(),
            },
            format!(
                "{}: the generations but the current one ({current})",
                p.path.display()
            ),
            old,
            (vec![delete_generations(ctx, &p.path, "old")], 0),
            false,
        );
        push(
            &mut defs,
            GroupKind::ProfileOlderThan {
                profile: p.path.clone(),
                days,
            },
            format!(
                "{}: the generations older than {days} days (the one current then stays)",
                p.path.display()
            ),
            older,
            (
                vec![delete_generations(ctx, &p.path, &format!("{days}d"))],
                0,
            ),
            false,
        );
    }
    if ctx.store_arg.is_none() {
        collect_old.sort_unstable();
        collect_older.sort_unstable();
        push(
            &mut defs,
            GroupKind::CollectOld,
            "every profile's old generations, then the collector".into(),
            collect_old,
            (vec!["nix-collect-garbage -d".into()], 0),
            true,
        );
        push(
            &mut defs,
            GroupKind::CollectOlderThan { days },
            format!("every profile's generations older than {days} days, then the collector"),
            collect_older,
            (
                vec![format!("nix-collect-garbage --delete-older-than {days}d")],
                0,
            ),
            true,
        );
    }
    // Paths as bytes below: a million roots' paths split into components
    // for each group cost seconds.
    let results = of(&|m| {
        let l = m.root.location.as_os_str().as_bytes();
        let f = &l[l.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..];
        m.root.via.is_some() && (f == b"result" || f.starts_with(b"result-"))
    });
    let commands = remove_commands(ctx, &roots_of(&results));
    push(
        &mut defs,
        GroupKind::ResultLinks,
        "every result link".into(),
        results,
        commands,
        false,
    );
    // One searcher for every root (`memmem::find` builds one each call).
    let in_direnv = memchr::memmem::Finder::new(b"/.direnv/");
    let direnv = of(&|m| {
        in_direnv
            .find(m.root.location.as_os_str().as_bytes())
            .is_some()
    });
    let commands = remove_commands(ctx, &roots_of(&direnv));
    push(
        &mut defs,
        GroupKind::Direnv,
        "every direnv root (in a .direnv directory)".into(),
        direnv,
        commands,
        false,
    );
    let old = of(&|m| {
        // Made before `t`: its age counted from `now`.
        m.root.age_secs.is_some_and(|age| req.now - age < t)
            && !m.root.generation.as_ref().is_some_and(|g| g.current)
            && !m.root.location.as_os_str().as_bytes().starts_with(b"/run/")
    });
    let commands = remove_commands(ctx, &roots_of(&old));
    push(
        &mut defs,
        GroupKind::OlderThan { days },
        format!("every root older than {days} days (not a current generation, nothing in /run)"),
        old,
        commands,
        false,
    );
    defs
}

/// The group of the removable roots that keep `path`.
pub(super) fn keeping(ctx: &Context, view: &[Member], members: &[usize], path: &str) -> Def {
    let mut members = members.to_vec();
    members.sort_unstable();
    members.dedup();
    let roots: Vec<&Root> = members.iter().map(|&i| &view[i].root).collect();
    let (commands, left_out) = remove_commands(ctx, &roots);
    Def {
        kind: GroupKind::Keeping {
            path: path.to_string(),
        },
        title: format!("every removable root that keeps {path}"),
        commands,
        left_out,
        members,
        collects: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(current: Option<u64>, gens: &[(u64, i64)]) -> Profile {
        Profile {
            path: "/p".into(),
            target: None,
            current,
            generations: gens
                .iter()
                .map(|&(n, m)| (n, PathBuf::from(format!("/p-{n}-link")), Some(m)))
                .collect(),
            in_state_profiles: true,
        }
    }

    #[test]
    fn older_than_keeps_the_generation_current_at_the_time() {
        // Generations made at days 0, 10, 20, 40; now day 45; 30 days.
        let d = 86_400;
        let p = profile(Some(4), &[(1, 0), (2, 10 * d), (3, 20 * d), (4, 40 * d)]);
        assert_eq!(older_than(&p, 15 * d), [1]);
        assert_eq!(older_than(&p, 25 * d), [2, 1]);
        assert!(older_than(&p, -1).is_empty());
        // The current generation is never picked, even when old.
        let p = profile(Some(1), &[(1, 0), (2, 10 * d), (3, 20 * d)]);
        assert_eq!(older_than(&p, 30 * d), [2]);
        assert_eq!(older_than(&p, 15 * d), Vec::<u64>::new());
    }

    fn root(loc: &str, generation: Option<(u64, bool)>) -> Root {
        Root {
            kind: if generation.is_some() {
                RootKind::Generation
            } else {
                RootKind::Link
            },
            location: std::path::Path::new(loc).into(),
            via: None,
            store_path: "".into(),
            link_target: None,
            age_secs: None,
            generation: generation.map(|(number, current)| {
                Box::new(super::super::Generation {
                    profile: "/home/u/p".into(),
                    number,
                    current,
                    profile_index: 0,
                })
            }),
            held: None,
            same_path_roots: 1,
            freed: Default::default(),
            freed_with_same_path: Default::default(),
            closure: None,
            command: None,
            freed_paths: Box::default(),
        }
    }

    #[test]
    fn commands_quote_and_group_generations() {
        let ctx = Context {
            store_arg: Some("/tmp/a b"),
            max_links: None,
            profiles: &[],
        };
        let a = root("/home/u/my proj/result", None);
        let b = root("/home/u/p-3-link", Some((3, false)));
        let c = root("/home/u/p-1-link", Some((1, false)));
        let d = root("/home/u/p-4-link", Some((4, true)));
        assert_eq!(
            remove_commands(&ctx, &[&a, &b, &c, &d]).0,
            [
                "nix-env --store '/tmp/a b' --profile /home/u/p --delete-generations 1 3",
                "rm -- '/home/u/my proj/result' /home/u/p /home/u/p-4-link",
            ]
        );
        assert_eq!(
            gc_command(&ctx, &[("keep-outputs".into(), "true".into())]),
            "nix-store --store '/tmp/a b' --gc --option keep-outputs true"
        );
    }

    #[test]
    fn many_links_make_several_commands_each_short_enough_to_run() {
        let ctx = Context {
            store_arg: None,
            max_links: None,
            profiles: &[],
        };
        let roots: Vec<Root> = (0..20_000)
            .map(|i| root(&format!("/home/u/src/project-{i:05}/result"), None))
            .collect();
        let refs: Vec<&Root> = roots.iter().collect();
        let (commands, left_out) = remove_commands(&ctx, &refs);
        assert_eq!(left_out, 0);
        assert!(commands.len() > 1, "{} command(s)", commands.len());
        let mut named = 0;
        for c in &commands {
            assert!(c.len() <= MAX_COMMAND, "{} bytes", c.len());
            let words: Vec<&str> = c.split(' ').collect();
            assert_eq!(words[..2], ["rm", "--"]);
            named += words.len() - 2;
        }
        assert_eq!(named, roots.len());

        // A table names the first few and counts the rest.
        let ctx = Context {
            max_links: Some(3),
            ..ctx
        };
        let (commands, left_out) = remove_commands(&ctx, &refs[..10]);
        assert_eq!(
            commands,
            [
                "rm -- /home/u/src/project-00000/result /home/u/src/project-00001/result \
              /home/u/src/project-00002/result"
            ]
        );
        assert_eq!(left_out, 7);
    }

    #[test]
    fn the_links_shown_are_the_first_in_order_and_each_link_counts_once() {
        let ctx = Context {
            store_arg: None,
            max_links: Some(2),
            profiles: &[],
        };
        // Out of order; the profile's link comes with both its current
        // generations and is also a root of its own.
        let z = root("/home/u/z/result", None);
        let p = root("/home/u/p", None);
        let c = root("/home/u/p-4-link", Some((4, true)));
        let c2 = root("/home/u/p-5-link", Some((5, true)));
        let a = root("/home/u/a/result", None);
        let (commands, left_out) = remove_commands(&ctx, &[&z, &c, &p, &c2, &a]);
        assert_eq!(commands, ["rm -- /home/u/a/result /home/u/p"]);
        // p-4-link, p-5-link, z/result: five links in all.
        assert_eq!(left_out, 3);
        let all = Context {
            max_links: None,
            ..ctx
        };
        assert_eq!(
            remove_commands(&all, &[&z, &c, &p, &c2, &a]).0,
            ["rm -- /home/u/a/result /home/u/p /home/u/p-4-link /home/u/p-5-link /home/u/z/result"]
        );
    }
}
