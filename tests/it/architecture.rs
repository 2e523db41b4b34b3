//! The layering ARCHITECTURE.md states, checked on the source tree: which floor may use which,
//! that the edge stops at the façade, who alone knows MCP and the command line, who alone speaks
//! SQL, and no import cycle where the invariants forbid one. A use is found however it is
//! spelled (`crate::`, `super::`, `use` groups). Test modules (`#[cfg(test)]`) and comments are
//! not code for this.

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

/// The code of a file: its text without comments, up to its first test module.
fn code(text: &str) -> String {
    let text = without_comments(text);
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let test_only = line.trim() == "#[cfg(test)]" || line.trim().starts_with("#[cfg(all(test,");
        if test_only
            && lines.peek().is_some_and(|next| {
                next.trim_start().starts_with("mod ")
                    || next.trim_start().starts_with("pub(crate) mod ")
            })
        {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `text` without its comments (`//` to the end of the line, `/* … */`). String and character
/// literals are read as such, so a `//` inside one (`"http://…"`) is not taken for a comment.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("//") {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
        } else if rest.starts_with("/*") {
            rest = &rest[rest.find("*/").map_or(rest.len(), |e| e + 2)..];
        } else if let Some(len) = literal_len(rest) {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The length of the string, raw string or character literal `text` begins with, if it begins
/// with one (a lifetime, `'a`, is not one).
fn literal_len(text: &str) -> Option<usize> {
    if let Some(after) = text.strip_prefix("br").or_else(|| text.strip_prefix('r')) {
        let hashes = after.len() - after.trim_start_matches('#').len();
        if after[hashes..].starts_with('"') {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = hashes + 1;
            let end = after[body..]
                .find(&close)
                .map_or(after.len(), |e| body + e + close.len());
            return Some(text.len() - after.len() + end);
        }
    }
    let quoted = text.strip_prefix('b').unwrap_or(text);
    let prefix = text.len() - quoted.len();
    if let Some(body) = quoted.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => return Some(prefix + 1 + i + 1),
                _ => {}
            }
        }
        return Some(text.len());
    }
    let body = quoted.strip_prefix('\'')?;
    // Where the closing quote is: after the escape (`'\''`, `'\u{1F600}'`) or the one character.
    let close = if body.starts_with('\\') {
        body.get(2..)?.find('\'').map(|e| e + 2)
    } else {
        let n = body.chars().next()?.len_utf8();
        body[n..].starts_with('\'').then_some(n)
    }?;
    Some(prefix + 1 + close + 1)
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
        let named = paths_named(&rel, &code);
        for b in *banned {
            if named.iter().any(|p| p.first().is_some_and(|m| m == b)) {
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

/// The module path of the file `rel` (relative to `src/`): `providers/angr/mod.rs` is
/// `providers::angr`, `server.rs` is `server`, `lib.rs` the crate root.
fn module_path(rel: &str) -> Vec<String> {
    let mut segments: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(
        segments.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        segments.pop();
    }
    segments
}

/// Every path the file `rel` names through `crate::`, `super::` or `self::`, from the crate root,
/// with `use` groups spelled out: `use crate::{a, b::{self, c}}` names `a`, `b` and `b::c`.
/// Whatever the spelling, a use of another module shows here.
fn paths_named(rel: &str, code: &str) -> BTreeSet<Vec<String>> {
    let here = module_path(rel);
    let inline = inline_modules(code);
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    for start in ["crate", "super", "self"] {
        for (at, _) in code.match_indices(start) {
            let (before, after) = (&code[..at], &code[at + start.len()..]);
            // A whole word that begins a path (`crate :: x` too); `super::super::x` is one
            // path, taken from its first `super`.
            if before.ends_with(ident)
                || after.starts_with(ident)
                || !after.trim_start().starts_with("::")
                || before.trim_end().ends_with("::")
            {
                continue;
            }
            let mut rest = &code[at..];
            let mut module = here.clone();
            module.extend(
                inline
                    .iter()
                    .filter(|(body, _)| body.contains(&at))
                    .map(|(_, name)| name.clone()),
            );
            for relative in path_tree(&mut rest) {
                let mut absolute = module.clone();
                let mut segments = relative.into_iter().peekable();
                match segments.peek().map(String::as_str) {
                    Some("crate") => {
                        absolute.clear();
                        segments.next();
                    }
                    Some("self") => {
                        segments.next();
                    }
                    _ => {}
                }
                while segments.peek().is_some_and(|s| s == "super") {
                    absolute.pop();
                    segments.next();
                }
                absolute.extend(segments.filter(|s| s != "self"));
                out.insert(absolute);
            }
        }
    }
    out
}

/// The inline modules of `code` (`mod name { … }`), outermost first, each with the byte range of
/// its body: a path inside one is relative to it.
fn inline_modules(code: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = vec![];
    for (at, _) in code.match_indices("mod ") {
        if code[..at].ends_with(ident) {
            continue;
        }
        let rest = &code[at + "mod ".len()..];
        let name_end = rest.find(|c| !ident(c)).unwrap_or(rest.len());
        let after = rest[name_end..].trim_start();
        if name_end == 0 || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        // The brace that closes the body, braces in string and character literals aside.
        let (mut depth, mut end, mut at) = (0usize, code.len(), open);
        while let Some(c) = code[at..].chars().next() {
            if let Some(len) = literal_len(&code[at..]) {
                at += len;
                continue;
            }
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at;
                        break;
                    }
                }
                _ => {}
            }
            at += c.len_utf8();
        }
        out.push((open..end, rest[..name_end].to_owned()));
    }
    out
}

/// The paths a path tree at the start of `text` spells (`a::b`, `a::{b, c::{d, self}}`, `a::*`),
/// each as its segments; `text` is left after the tree.
fn path_tree(text: &mut &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut prefix = vec![];
    loop {
        *text = text.trim_start();
        let end = text.find(|c| !ident(c)).unwrap_or(text.len());
        if end > 0 {
            prefix.push(text[..end].to_owned());
            *text = &text[end..];
        }
        let after = text.trim_start();
        let Some(next) = after.strip_prefix("::") else {
            return vec![prefix];
        };
        *text = next.trim_start();
        if let Some(group) = text.strip_prefix('{') {
            *text = group;
            let mut paths = vec![];
            loop {
                for mut inner in path_tree(text) {
                    let mut full = prefix.clone();
                    full.append(&mut inner);
                    paths.push(full);
                }
                *text = text.trim_start();
                // `b as c` names `b`.
                if let Some(renamed) = text.strip_prefix("as ") {
                    *text = renamed.trim_start();
                    let end = text.find(|c| !ident(c)).unwrap_or(text.len());
                    *text = &text[end..];
                    *text = text.trim_start();
                }
                match text.chars().next() {
                    Some(',') => *text = &text[1..],
                    Some('}') => {
                        *text = &text[1..];
                        return paths;
                    }
                    _ => return paths,
                }
                if text.trim_start().starts_with('}') {
                    *text = &text.trim_start()[1..];
                    return paths;
                }
            }
        }
        if let Some(glob) = text.strip_prefix('*') {
            *text = glob;
            return vec![prefix];
        }
    }
}

#[test]
fn paths_named_spells_out_every_way_of_naming_a_module() {
    fn check(rel: &str, code: &str, expected: &[&str]) {
        let named: Vec<String> = paths_named(rel, code)
            .into_iter()
            .map(|p| p.join("::"))
            .collect();
        assert_eq!(named, expected, "{code}");
    }
    check(
        "cli/mod.rs",
        "use crate::store::ReadOnlyStore;",
        &["store::ReadOnlyStore"],
    );
    check(
        "cli/ledger.rs",
        "use crate::{investigation::{self, Report}, store};",
        &["investigation", "investigation::Report", "store"],
    );
    check(
        "cli/ledger.rs",
        "use crate::{\n    ids::EvidenceId as Id,\n    session::{Session, SessionError},\n};",
        &[
            "ids::EvidenceId",
            "session::Session",
            "session::SessionError",
        ],
    );
    check(
        "server.rs",
        "fn f() -> crate::store::CompletionPage { crate :: session::list() }",
        &["session::list", "store::CompletionPage"],
    );
    check(
        "tools/depth.rs",
        "use super::{ToolError, Tools};",
        &["tools::ToolError", "tools::Tools"],
    );
    check("tools/depth.rs", "use super::super::store::*;", &["store"]);
    check(
        "providers/angr/render.rs",
        "use super::super::deep::Candidate; use super::protocol; use self::x::y;",
        &[
            "providers::angr::protocol",
            "providers::angr::render::x::y",
            "providers::deep::Candidate",
        ],
    );
    check(
        "providers/deep.rs",
        "use super::angr;",
        &["providers::angr"],
    );
    // Inside an inline module, paths start from it; braces in literals do not end it.
    check(
        "providers/native/analysis.rs",
        r#"mod hex { fn f<'a>() { g("}", '}', '"', r"}"); super::super::address::parse() } }
           use super::types;"#,
        &[
            "providers::native::address::parse",
            "providers::native::types",
        ],
    );
    // Comments name nothing; literals are not comments.
    let text = code("use crate::ids; // crate::store\n/* crate::session */ f(\"a//b\", '/');\n");
    assert_eq!(text, "use crate::ids; \n f(\"a//b\", '/');\n");
}

#[test]
fn the_edge_stops_at_the_facade() {
    // Besides itself, the edge uses the investigation layer and what serves prompts, completion,
    // settings and the wire; every other module it reaches through `investigation`.
    let allowed = [
        "investigation",
        "prompts",
        "completion",
        "settings",
        "transport",
        "cli",
        "tools",
        "server",
    ];
    let mut broken = vec![];
    for (rel, code) in sources() {
        if !(rel == "server.rs" || rel.starts_with("cli/") || rel.starts_with("tools/")) {
            continue;
        }
        for path in paths_named(&rel, &code) {
            match path.first() {
                Some(module) if !allowed.contains(&module.as_str()) => {
                    broken.push(format!("{rel} uses crate::{}", path.join("::")));
                }
                None => broken.push(format!("{rel} names the crate root")),
                _ => {}
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn the_providers_use_each_other_without_a_circle() {
    // Each child of `providers/` (a file or a directory) is one node; its files' uses of the
    // others, however spelled, are its edges.
    let files = sources();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, code) in &files {
        let Some(inside) = rel.strip_prefix("providers/") else {
            continue;
        };
        if inside == "mod.rs" {
            continue;
        }
        let node = inside.split(['/', '.']).next().unwrap().to_owned();
        let uses = graph.entry(node.clone()).or_default();
        for path in paths_named(rel, code) {
            if let [top, child, ..] = path.as_slice()
                && top == "providers"
                && *child != node
            {
                uses.insert(child.clone());
            }
        }
    }
    assert!(
        ["angr", "deep", "decompile", "native"]
            .iter()
            .all(|n| graph.contains_key(*n)),
        "{graph:#?}"
    );
    // Every use names a child that is there: the paths were read right.
    assert!(
        graph.values().flatten().all(|n| graph.contains_key(n)),
        "{graph:#?}"
    );
    assert_eq!(cycle(&graph), None, "{graph:#?}");
    // The one circle there was: the angr decompiler and the deep candidates it is listed among.
    assert!(!graph["angr"].contains("deep"), "{graph:#?}");
}
