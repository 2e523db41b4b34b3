//! Accuracy of the matching on public code (issue 28): Lua 5.4.6 against Lua 5.4.7, from the
//! `lua-src` crate's bundled sources, built the same way at -O2 for x86-64 and AArch64, stripped
//! and not. The unstripped twins' `nm` names are the truth for the stripped pair: a matched pair
//! is right when both sides carry the same name, and every name present once in both versions
//! should be matched.
//!
//! The sources come from Cargo's registry, where `cargo fetch --manifest-path
//! scripts/lua-src/Cargo.toml` puts them; without them the test fails and says so, because a
//! benchmark that skips holds nothing.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::analyzers::testbuild::{ARM64, GCC, Toolchain, image, nm_functions};

/// The goal of issue 28, held as thresholds.
const EXACT_STRONG_PRECISION: f64 = 0.99;
const OVERALL_PRECISION: f64 = 0.97;
const RECALL: f64 = 0.97;

/// A program that links the whole of Lua, so that every function of the library is kept.
const MAIN: &str = r#"#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    int status = argc > 1 ? luaL_dostring(L, argv[1]) : 0;
    lua_close(L);
    return status;
}
"#;

/// The Lua source directory of one `lua-src` release in Cargo's registry.
fn lua_sources(crate_version: &str, lua: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME is set");
    let registry = home.join("registry/src");
    let found = std::fs::read_dir(&registry).ok().and_then(|dirs| {
        dirs.filter_map(|d| d.ok())
            .map(|d| d.path().join(format!("lua-src-{crate_version}")).join(lua))
            .find(|p| p.join("lua.h").is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the sources of {lua} (crate lua-src {crate_version}) are not in {}: run \
             `cargo fetch --manifest-path scripts/lua-src/Cargo.toml` first",
            registry.display()
        )
    })
}

/// Builds Lua from `src` with `chain` at -O2 into `dir`; the executable and its stripped twin.
fn build_lua(dir: &Path, chain: Toolchain, src: &Path, stem: &str) -> (PathBuf, PathBuf) {
    let main = dir.join("main.c");
    std::fs::write(&main, MAIN).unwrap();
    let plain = dir.join(stem);
    let stripped = dir.join(format!("{stem}-stripped"));
    let mut sources: Vec<PathBuf> = std::fs::read_dir(src)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let mut cmd = Command::new(chain.cc);
    cmd.arg("-O2")
        .arg(format!("-I{}", src.display()))
        .arg("-o")
        .arg(&plain)
        .args(&sources)
        .arg(&main)
        .arg("-lm");
    let out = cmd.output().expect("the C compiler runs");
    assert!(
        out.status.success(),
        "{}: {}",
        chain.cc,
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(format!("{}strip", chain.tools))
        .arg("-o")
        .arg(&stripped)
        .arg(&plain)
        .output()
        .expect("strip runs");
    assert!(out.status.success());
    (plain, stripped)
}

/// Right and wrong pairs of one class.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    right: usize,
    wrong: usize,
}

impl Tally {
    fn precision(self) -> f64 {
        let all = self.right + self.wrong;
        if all == 0 {
            1.0
        } else {
            self.right as f64 / all as f64
        }
    }
}

/// Precision per class and recall of a stripped comparison against the unstripped twins' names.
struct Accuracy {
    per_class: BTreeMap<&'static str, Tally>,
    matched: Tally,
    exact_strong: Tally,
    common: usize,
    recall: f64,
}

fn class_of(e: &ProcedureEntry) -> Option<&'static str> {
    match e.status {
        ProcedureStatus::Changed | ProcedureStatus::Unchanged => {}
        _ => return None,
    }
    e.confidence.map(|c| match c {
        MatchClass::Exact => "exact",
        MatchClass::Strong => "strong",
        MatchClass::Weak => "weak",
    })
}

fn accuracy(
    names_left: &BTreeMap<String, u64>,
    names_right: &BTreeMap<String, u64>,
    diff: &ProcedureDiff,
) -> Accuracy {
    // A name that several functions share (static helpers of different files) proves nothing.
    let by_address = |names: &BTreeMap<String, u64>| -> HashMap<u64, String> {
        let mut count: HashMap<u64, usize> = HashMap::new();
        names
            .values()
            .for_each(|a| *count.entry(*a).or_default() += 1);
        names
            .iter()
            .filter(|(_, a)| count[*a] == 1)
            .map(|(n, a)| (*a, n.clone()))
            .collect()
    };
    let (la, ra) = (by_address(names_left), by_address(names_right));
    let listed = |which: bool| -> std::collections::HashSet<u64> {
        diff.entries()
            .iter()
            .flat_map(|e| {
                // An ambiguous procedure's candidates are right procedures too.
                let side = if which { &e.left } else { &e.right };
                let candidates = if which { &[][..] } else { &e.candidates[..] };
                side.iter().chain(candidates).map(|s| s.address)
            })
            .collect()
    };
    let (ll, rl) = (listed(true), listed(false));
    let common = names_left
        .iter()
        .filter(|(_, a)| la.contains_key(a) && ll.contains(a))
        .filter(|(n, _)| {
            names_right
                .get(*n)
                .is_some_and(|a| ra.contains_key(a) && rl.contains(a))
        })
        .count();
    let mut per_class: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let (mut matched, mut exact_strong) = (Tally::default(), Tally::default());
    for e in diff.entries() {
        let Some(class) = class_of(e) else { continue };
        let (l, r) = (e.left.as_ref().unwrap(), e.right.as_ref().unwrap());
        let (Some(ln), Some(rn)) = (la.get(&l.address), ra.get(&r.address)) else {
            continue;
        };
        let right = ln == rn;
        for t in [per_class.entry(class).or_default(), &mut matched] {
            if right {
                t.right += 1;
            } else {
                t.wrong += 1;
            }
        }
        if class != "weak" {
            if right {
                exact_strong.right += 1;
            } else {
                exact_strong.wrong += 1;
            }
        }
    }
    Accuracy {
        per_class,
        matched,
        exact_strong,
        common,
        recall: matched.right as f64 / common as f64,
    }
}

#[test]
fn lua_5_4_6_to_5_4_7_matches_with_the_goals_precision_and_recall_regression_28() {
    let old = lua_sources("546.0.2", "lua-5.4.6");
    let new = lua_sources("547.1.0", "lua-5.4.7");
    for chain in [GCC, ARM64] {
        let dir = tempfile::tempdir().unwrap();
        let (lp, ls) = build_lua(dir.path(), chain, &old, "lua546");
        let (rp, rs) = build_lua(dir.path(), chain, &new, "lua547");
        let started = std::time::Instant::now();
        let diff = compare_images(&image(&ls), &image(&rs));
        let took = started.elapsed();
        let a = accuracy(&nm_functions(chain, &lp), &nm_functions(chain, &rp), &diff);
        eprintln!(
            "{}: {} common functions; precision {:.4} overall ({:?}), {:.4} exact+strong ({:?}); \
             recall {:.4}; per class {:?}; summary {:?}; {took:?}",
            chain.cc,
            a.common,
            a.matched.precision(),
            a.matched,
            a.exact_strong.precision(),
            a.exact_strong,
            a.recall,
            a.per_class
                .iter()
                .map(|(c, t)| (*c, format!("{:.4} {:?}", t.precision(), t)))
                .collect::<Vec<_>>(),
            diff.summary()
        );
        assert!(a.common > 600, "{}: {}", chain.cc, a.common);
        assert!(
            a.exact_strong.precision() >= EXACT_STRONG_PRECISION,
            "{}: exact+strong precision {:.4}",
            chain.cc,
            a.exact_strong.precision()
        );
        assert!(
            a.matched.precision() >= OVERALL_PRECISION,
            "{}: precision {:.4}",
            chain.cc,
            a.matched.precision()
        );
        assert!(a.recall >= RECALL, "{}: recall {:.4}", chain.cc, a.recall);
    }
}
