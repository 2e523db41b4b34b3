//! Resolves import specifiers and path expressions to files of the application, using only the
//! list of relative `/`-separated paths, so a directory and the asar packed from it resolve alike.

use std::collections::BTreeSet;

use super::visitor::PathExpr;

/// Extensions tried, in order, after a specifier without one (Node's order, then TypeScript's).
const EXTENSIONS: [&str; 8] = [".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".mts", ".cts"];

/// The set of files in the input, for lookups.
pub(crate) struct FileSet {
    files: BTreeSet<String>,
}

impl FileSet {
    pub(crate) fn new(paths: impl IntoIterator<Item = String>) -> FileSet {
        FileSet {
            files: paths.into_iter().collect(),
        }
    }

    pub(crate) fn contains(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// Resolves a path the way Node (and bundlers for TypeScript sources) would: the exact file,
    /// the file with an added extension, a `.js` written for a `.ts` source, then `dir/index.*`.
    pub(crate) fn resolve_file(&self, path: &str) -> Option<String> {
        let path = path.trim_end_matches('/');
        if !path.is_empty() && self.contains(path) {
            return Some(path.to_string());
        }
        for ext in EXTENSIONS {
            let candidate = format!("{path}{ext}");
            if self.contains(&candidate) {
                return Some(candidate);
            }
        }
        for (written, sources) in [
            (".js", &[".ts", ".tsx"][..]),
            (".jsx", &[".tsx"][..]),
            (".mjs", &[".mts"][..]),
            (".cjs", &[".cts"][..]),
        ] {
            if let Some(stem) = path.strip_suffix(written) {
                for ext in sources {
                    let candidate = format!("{stem}{ext}");
                    if self.contains(&candidate) {
                        return Some(candidate);
                    }
                }
            }
        }
        for ext in EXTENSIONS {
            let candidate = if path.is_empty() {
                format!("index{ext}")
            } else {
                format!("{path}/index{ext}")
            };
            if self.contains(&candidate) {
                return Some(candidate);
            }
        }
        None
    }

    /// The single file whose name is `base`, if exactly one exists.
    pub(crate) fn by_basename(&self, base: &str) -> Option<String> {
        let mut found = self
            .files
            .iter()
            .filter(|f| f.rsplit('/').next() == Some(base));
        let first = found.next()?;
        found.next().is_none().then(|| first.clone())
    }
}

/// The directory part of a relative path (`""` at the root).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Joins `rel` onto `base` and normalizes `.` and `..`; `None` when the result would leave the
/// root. A `rel` starting with `/` restarts from the root.
pub(crate) fn join(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let start = if rel.starts_with('/') { "" } else { base };
    for part in start.split('/').chain(rel.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// True for specifiers that name files rather than packages.
pub(crate) fn is_relative(spec: &str) -> bool {
    spec.starts_with("./") || spec.starts_with("../") || spec == "." || spec == ".."
}

/// The package a bare specifier belongs to: `@scope/name/sub` → `@scope/name`, `a/b` → `a`.
pub(crate) fn package_name(spec: &str) -> String {
    let mut parts = spec.split('/');
    match parts.next() {
        Some(scope) if scope.starts_with('@') => match parts.next() {
            Some(name) => format!("{scope}/{name}"),
            None => scope.to_string(),
        },
        Some(name) => name.to_string(),
        None => spec.to_string(),
    }
}

/// Resolves a path expression written in `file` to a file of the application.
pub(crate) fn resolve_path_expr(files: &FileSet, file: &str, expr: &PathExpr) -> Option<String> {
    match expr {
        PathExpr::FromDir(segs) => {
            let rel = segs.join("/");
            join(parent(file), &rel).and_then(|p| files.resolve_file(&p))
        }
        PathExpr::FromRoot(segs) => join("", &segs.join("/")).and_then(|p| files.resolve_file(&p)),
        PathExpr::Literal(s) => {
            let s = s.strip_prefix("file://").unwrap_or(s);
            let s = s.split(['?', '#']).next().unwrap_or(s);
            // Electron resolves relative `loadFile` paths against the application root; try the
            // declaring file's directory second for code that relies on its working directory.
            join("", s)
                .and_then(|p| files.resolve_file(&p))
                .or_else(|| join(parent(file), s).and_then(|p| files.resolve_file(&p)))
        }
        PathExpr::Basename(base) => files.by_basename(base),
    }
}

/// How a path expression reads in a report.
pub(crate) fn describe_path_expr(expr: &PathExpr) -> String {
    match expr {
        PathExpr::Literal(s) => s.clone(),
        PathExpr::FromDir(segs) => format!("__dirname/{}", segs.join("/")),
        PathExpr::FromRoot(segs) => format!("<app>/{}", segs.join("/")),
        PathExpr::Basename(b) => format!("…/{b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> FileSet {
        FileSet::new(paths.iter().map(|s| s.to_string()))
    }

    #[test]
    fn joins_and_refuses_escape() {
        assert_eq!(
            join("src/main", "../preload/index.js").as_deref(),
            Some("src/preload/index.js")
        );
        assert_eq!(join("a", "./b/./c").as_deref(), Some("a/b/c"));
        assert_eq!(join("a", "/x").as_deref(), Some("x"));
        assert_eq!(join("a", "../../x"), None);
    }

    #[test]
    fn resolves_like_node_and_typescript() {
        let files = set(&[
            "a.js",
            "b/index.ts",
            "c.ts",
            "d.json",
            "e/index.js",
            "x/y.js",
        ]);
        assert_eq!(files.resolve_file("a").as_deref(), Some("a.js"));
        assert_eq!(files.resolve_file("b").as_deref(), Some("b/index.ts"));
        assert_eq!(files.resolve_file("c.js").as_deref(), Some("c.ts"));
        assert_eq!(files.resolve_file("d.json").as_deref(), Some("d.json"));
        assert_eq!(files.resolve_file("e/").as_deref(), Some("e/index.js"));
        assert_eq!(files.resolve_file("f"), None);
        assert_eq!(files.by_basename("y.js").as_deref(), Some("x/y.js"));
    }

    #[test]
    fn package_names() {
        assert_eq!(
            package_name("@electron-toolkit/utils/x"),
            "@electron-toolkit/utils"
        );
        assert_eq!(package_name("lodash/get"), "lodash");
        assert_eq!(package_name("node:fs"), "node:fs");
        assert!(is_relative("./a") && is_relative("..") && !is_relative("a/./b"));
    }

    #[test]
    fn path_expressions() {
        let files = set(&[
            "lib/main.js",
            "lib/preload.js",
            "index.html",
            "lib/static/login.html",
        ]);
        let from_dir = PathExpr::FromDir(vec!["preload.js".into()]);
        assert_eq!(
            resolve_path_expr(&files, "lib/main.js", &from_dir).as_deref(),
            Some("lib/preload.js")
        );
        let lit = PathExpr::Literal("index.html".into());
        assert_eq!(
            resolve_path_expr(&files, "lib/main.js", &lit).as_deref(),
            Some("index.html")
        );
        let lit = PathExpr::Literal("file://static/login.html".into());
        assert_eq!(
            resolve_path_expr(&files, "lib/main.js", &lit).as_deref(),
            Some("lib/static/login.html")
        );
    }
}
