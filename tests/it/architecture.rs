//! The layering ARCHITECTURE.md states, checked on the source tree: which floor may use which,
//! who alone knows MCP and the command line, who alone speaks SQL, and no import cycle where the
//! invariants forbid one. Test modules (`#[cfg(test)]`) and comments are not code for this.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, by path relative to it, with its code: comments and test
/// modules removed.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_str().unwrap().to_owned();
            (rel, code(&std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

/// The code of a file: lines without their comments, up to its first test module.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                next.trim_start().starts_with("mod ")
                    || next.trim_start().starts_with("pub(crate) mod ")
            })
        {
            break;
        }
        let line = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The floor a file stands on, by where it lives.
fn module_of(rel: &str) -> &str {
    rel.split(['/', '.']).next().unwrap()
}

#[test]
fn floors_use_only_the_floors_below_them() {
    // What each top-level module may not use (besides itself).
    let forbidden: &[(&str, &[&str])] = &[
        (
            "fsroot",
            &[
                "ids",
                "evidence",
                "vocabulary",
                "settings",
                "providers",
                "analyzers",
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "ids",
            &[
                "evidence",
                "vocabulary",
                "providers",
                "analyzers",
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "vocabulary",
            &[
                "ids",
                "evidence",
                "providers",
                "analyzers",
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "evidence",
            &[
                "providers",
                "analyzers",
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "settings",
            &[
                "providers",
                "analyzers",
                "store",
                "investigation",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "providers",
            &[
                "analyzers",
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "analyzers",
            &[
                "store",
                "session",
                "investigation",
                "completion",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "store",
            &[
                "providers",
                "analyzers",
                "session",
                "investigation",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "session",
            &[
                "providers",
                "analyzers",
                "investigation",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "completion",
            &[
                "analyzers",
                "investigation",
                "prompts",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "prompts",
            &[
                "providers",
                "analyzers",
                "store",
                "session",
                "investigation",
                "tools",
                "server",
                "transport",
                "cli",
            ],
        ),
        (
            "investigation",
            &["prompts", "tools", "server", "transport", "cli"],
        ),
        ("tools", &["server", "transport", "cli"]),
        ("transport", &["investigation", "tools", "cli"]),
        ("server", &["cli"]),
    ];
    let mut broken = vec![];
    for (rel, code) in sources() {
        let module = module_of(&rel);
        let Some((_, banned)) = forbidden.iter().find(|(m, _)| *m == module) else {
            continue;
        };
        for b in *banned {
            if code.contains(&format!("crate::{b}::")) || code.contains(&format!("crate::{b};")) {
                broken.push(format!("{rel} uses crate::{b}"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn only_the_edge_knows_mcp_and_the_command_line_and_only_the_store_speaks_sql() {
    let mut broken = vec![];
    for (rel, code) in sources() {
        let edge = rel == "server.rs"
            || rel.starts_with("tools/")
            || rel.starts_with("transport/")
            || rel.starts_with("cli/");
        for word in ["rmcp", "clap"] {
            if !edge && rel != "main.rs" && has_word(&code, word) {
                broken.push(format!("{rel} names {word}"));
            }
        }
        if !rel.starts_with("store/") {
            for word in ["rusqlite", "Connection", "prepare_cached", "execute_batch"] {
                if has_word(&code, word) {
                    broken.push(format!("{rel} names {word}"));
                }
            }
        }
        if rel.starts_with("cli/") && code.contains("crate::tools") {
            broken.push(format!("{rel} imports tools"));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// Whether `code` holds `word` as a whole identifier (`Connection`, not `ConnectionGuard`).
fn has_word(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The sibling modules each file of a directory module uses, by `super::name` or the full path.
fn sibling_graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let siblings: BTreeSet<String> = files
        .keys()
        .filter_map(|rel| rel.strip_prefix(&format!("{dir}/")))
        .filter(|f| *f != "mod.rs" && !f.contains('/'))
        .map(|f| f.trim_end_matches(".rs").to_owned())
        .collect();
    let full = format!("crate::{}::", dir.replace('/', "::"));
    let mut graph = BTreeMap::new();
    for name in &siblings {
        let code = &files[&format!("{dir}/{name}.rs")];
        let uses: BTreeSet<String> = siblings
            .iter()
            .filter(|other| *other != name)
            .filter(|other| {
                [
                    format!("super::{other}::"),
                    format!("super::{other};"),
                    format!("super::{{{other}"),
                    format!("{full}{other}::"),
                ]
                .iter()
                .any(|p| code.contains(p))
                    || code.contains("super::{") && {
                        // `use super::{a, b::c}`: the names inside the braces.
                        code.split("super::{").skip(1).any(|rest| {
                            rest.split('}').next().unwrap_or("").split(',').any(|item| {
                                let item = item.trim();
                                item == other.as_str() || item.starts_with(&format!("{other}::"))
                            })
                        })
                    }
            })
            .cloned()
            .collect();
        graph.insert(name.clone(), uses);
    }
    graph
}

/// A cycle in `graph`, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut vec![], &mut done))
}

#[test]
fn the_native_provider_has_no_import_cycle_and_its_files_use_no_parent_items() {
    let graph = sibling_graph("providers/native");
    assert!(
        graph.contains_key("types") && graph["types"].len() <= 1,
        "{graph:#?}"
    );
    assert_eq!(cycle(&graph), None, "{graph:#?}");
    // Files take the provider's types from `types`, not through the parent's re-exports, so the
    // parent only declares and re-exports.
    let files = sources();
    for (rel, code) in &files {
        if let Some(name) = rel.strip_prefix("providers/native/")
            && name != "mod.rs"
        {
            for line in code
                .lines()
                .filter(|l| l.trim_start().starts_with("use super::{"))
            {
                let inside = line.split("super::{").nth(1).unwrap_or("");
                assert!(
                    inside
                        .split([',', '}'])
                        .map(str::trim)
                        .all(|item| item.is_empty() || item.starts_with(char::is_lowercase)),
                    "{rel}: {line}"
                );
            }
        }
    }
}

#[test]
fn the_server_and_the_tools_do_not_use_each_other_both_ways() {
    let files = sources();
    let tools_use_server = files
        .iter()
        .any(|(rel, code)| rel.starts_with("tools/") && code.contains("crate::server"));
    assert!(!tools_use_server, "tools/ must not use server.rs");
    let investigation = sibling_graph("investigation");
    assert_eq!(cycle(&investigation), None, "{investigation:#?}");
}
