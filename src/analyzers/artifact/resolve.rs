//! Resolves library names written in images (`@executable_path/…`, `@loader_path/…`, `@rpath/…`,
//! absolute paths, bare ELF/PE names) to parts of the target, following the target's own
//! symbolic links but never leaving it.

use std::collections::BTreeMap;

use super::Resolution;
use super::walk::{file_name, parent};

/// Most symbolic links followed while resolving one path (the kernel's own limit is similar).
const MAX_LINK_HOPS: usize = 40;

/// The files of a directory target: part path → symbolic-link text (None for regular files).
#[derive(Debug, Default)]
pub(crate) struct Tree {
    entries: BTreeMap<String, Option<String>>,
}

impl Tree {
    /// Records a regular file or a symbolic link.
    pub fn insert(&mut self, rel: String, link: Option<String>) {
        self.entries.insert(rel, link);
    }

    /// Resolves `path` (already normalized) through the tree's symbolic links to a regular file.
    pub fn lookup(&self, path: &str) -> Option<String> {
        let mut current = path.to_string();
        for _ in 0..MAX_LINK_HOPS {
            match self.first_link(&current) {
                None => {
                    return matches!(self.entries.get(&current), Some(None)).then_some(current);
                }
                Some((prefix_len, link)) => {
                    if link.starts_with('/') {
                        return None;
                    }
                    let prefix = &current[..prefix_len];
                    let rest = &current[prefix_len..];
                    let target = join(parent(prefix), &link)?;
                    current = if rest.is_empty() {
                        target
                    } else {
                        join(&target, rest.trim_start_matches('/'))?
                    };
                }
            }
        }
        None
    }

    /// Finds the shortest prefix of `path` (whole components) that is a symbolic link.
    fn first_link(&self, path: &str) -> Option<(usize, String)> {
        let mut end = 0;
        for component in path.split('/') {
            end += component.len();
            if let Some(Some(link)) = self.entries.get(&path[..end]) {
                return Some((end, link.clone()));
            }
            end += 1;
        }
        None
    }

    /// Finds a regular file named `name` (ASCII case-insensitive) in directory `dir`.
    pub fn find_in_dir(&self, dir: &str, name: &str) -> Option<String> {
        let wanted = if dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        if let Some(found) = self.lookup(&wanted) {
            return Some(found);
        }
        // Windows names are case-insensitive; a linear scan of one directory is bounded by it.
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        self.entries
            .range(prefix.clone()..)
            .take_while(|(rel, _)| rel.starts_with(&prefix))
            .find(|(rel, _)| parent(rel) == dir && file_name(rel).eq_ignore_ascii_case(name))
            .and_then(|(rel, _)| self.lookup(rel))
    }
}

/// Joins `relative` onto directory `base` and collapses `.` and `..`. Returns `None` when the
/// result would climb above the target root.
pub(crate) fn join(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|c| !c.is_empty()).collect();
    for component in relative.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Whether an absolute path belongs to the operating system.
pub(crate) fn is_system_path(path: &str) -> bool {
    [
        "/usr/lib/",
        "/System/",
        "/Library/Apple/",
        "/lib/",
        "/lib64/",
        "/usr/lib64/",
    ]
    .iter()
    .any(|prefix| path.starts_with(prefix))
}

/// The result of resolving one library name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub resolution: Resolution,
    pub resolved: Option<String>,
    pub via: Option<String>,
}

impl Resolved {
    fn new(resolution: Resolution) -> Resolved {
        Resolved {
            resolution,
            resolved: None,
            via: None,
        }
    }
}

/// Where a loading Mach-O image sits and what it may search.
pub(crate) struct MachoLoader<'a> {
    /// The target's files, or `None` for a single-file target.
    pub tree: Option<&'a Tree>,
    /// Part path of the file holding the loading image.
    pub loader: &'a str,
    /// Directory `@executable_path` stands for, when known.
    pub executable_dir: Option<&'a str>,
    /// The loading image's own `LC_RPATH` entries.
    pub rpaths: &'a [String],
    /// `LC_RPATH` entries of the main executable and its directory: dyld also searches the run
    /// paths of the images that loaded this one, and the executable is the usual first of them.
    pub inherited: Option<(&'a [String], &'a str)>,
}

impl MachoLoader<'_> {
    /// Expands `@executable_path/` and `@loader_path/` prefixes to a path inside the target.
    /// `Err` carries the resolution when the path cannot be inside (absolute, unknown base).
    fn expand(&self, path: &str, loader_dir: &str) -> Result<String, Resolved> {
        let (base, rest) = if let Some(rest) = path.strip_prefix("@executable_path/") {
            (self.executable_dir, rest)
        } else if let Some(rest) = path.strip_prefix("@loader_path/") {
            (Some(loader_dir), rest)
        } else if path.starts_with('/') {
            return Err(Resolved::new(if is_system_path(path) {
                Resolution::System
            } else {
                Resolution::Outside
            }));
        } else {
            return Err(Resolved::new(Resolution::Unresolved));
        };
        let Some(base) = base else {
            return Err(Resolved::new(Resolution::Unresolved));
        };
        // Climbing above the target root leaves the target.
        join(base, rest).ok_or(Resolved::new(Resolution::Outside))
    }

    fn find(&self, inside: &str) -> Option<String> {
        self.tree.and_then(|tree| tree.lookup(inside))
    }

    /// Resolves one install name.
    pub fn resolve(&self, name: &str) -> Resolved {
        let loader_dir = parent(self.loader);
        if let Some(rest) = name.strip_prefix("@rpath/") {
            let mut fallback: Option<Resolved> = None;
            let own = self.rpaths.iter().map(|rpath| (rpath, loader_dir));
            let inherited = self
                .inherited
                .into_iter()
                .flat_map(|(rpaths, dir)| rpaths.iter().map(move |rpath| (rpath, dir)));
            for (rpath, dir) in own.chain(inherited) {
                let candidate = format!("{}/{rest}", rpath.trim_end_matches('/'));
                match self.expand(&candidate, dir) {
                    Ok(inside) => {
                        if let Some(found) = self.find(&inside) {
                            return Resolved {
                                resolution: Resolution::Internal,
                                resolved: Some(found),
                                via: Some(rpath.clone()),
                            };
                        }
                    }
                    Err(other)
                        if fallback.is_none() && other.resolution != Resolution::Unresolved =>
                    {
                        fallback = Some(Resolved {
                            via: Some(rpath.clone()),
                            ..other
                        });
                    }
                    Err(_) => {}
                }
            }
            return fallback.unwrap_or_else(|| Resolved::new(Resolution::Unresolved));
        }
        match self.expand(name, loader_dir) {
            Ok(inside) => match self.find(&inside) {
                Some(found) => Resolved {
                    resolution: Resolution::Internal,
                    resolved: Some(found),
                    via: None,
                },
                None => Resolved::new(Resolution::Unresolved),
            },
            Err(other) => other,
        }
    }
}

/// Resolves an ELF `DT_NEEDED` or PE import name: a file of that name beside the loading image
/// is internal; otherwise the loader's search path finds it at run time.
pub(crate) fn resolve_bare(tree: Option<&Tree>, loader: &str, name: &str) -> Resolved {
    if name.starts_with('/') {
        return Resolved::new(if is_system_path(name) {
            Resolution::System
        } else {
            Resolution::Outside
        });
    }
    let found = tree.and_then(|tree| {
        if name.contains('/') {
            join(parent(loader), name).and_then(|path| tree.lookup(&path))
        } else {
            tree.find_in_dir(parent(loader), name)
        }
    });
    match found {
        Some(found) => Resolved {
            resolution: Resolution::Internal,
            resolved: Some(found),
            via: None,
        },
        None => Resolved::new(Resolution::SearchPath),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framework_tree() -> Tree {
        let mut tree = Tree::default();
        let fw = "Contents/Frameworks/E.framework";
        tree.insert(format!("{fw}/E"), Some("Versions/Current/E".into()));
        tree.insert(format!("{fw}/Versions/Current"), Some("A".into()));
        tree.insert(format!("{fw}/Versions/A/E"), None);
        tree.insert("Contents/MacOS/app".into(), None);
        tree.insert("Contents/Frameworks/libz.dylib".into(), None);
        tree.insert("loop".into(), Some("loop".into()));
        tree
    }

    #[test]
    fn join_collapses_and_refuses_escape() {
        assert_eq!(
            join("Contents/MacOS", "../Frameworks/x").as_deref(),
            Some("Contents/Frameworks/x")
        );
        assert_eq!(join("", "a/./b").as_deref(), Some("a/b"));
        assert_eq!(join("Contents", "../../x"), None);
    }

    #[test]
    fn lookup_follows_links_inside_only() {
        let tree = framework_tree();
        assert_eq!(
            tree.lookup("Contents/Frameworks/E.framework/E").as_deref(),
            Some("Contents/Frameworks/E.framework/Versions/A/E")
        );
        assert_eq!(tree.lookup("loop"), None);
        assert_eq!(tree.lookup("Contents/MacOS"), None);
    }

    #[test]
    fn rpath_and_prefix_resolution() {
        let tree = framework_tree();
        let rpaths = vec!["@executable_path/../Frameworks".to_string()];
        let loader = MachoLoader {
            tree: Some(&tree),
            loader: "Contents/MacOS/app",
            executable_dir: Some("Contents/MacOS"),
            rpaths: &rpaths,
            inherited: None,
        };
        let found = loader.resolve("@rpath/E.framework/E");
        assert_eq!(found.resolution, Resolution::Internal);
        assert_eq!(
            found.resolved.as_deref(),
            Some("Contents/Frameworks/E.framework/Versions/A/E")
        );
        assert_eq!(found.via.as_deref(), Some("@executable_path/../Frameworks"));
        assert_eq!(
            loader
                .resolve("@loader_path/../Frameworks/libz.dylib")
                .resolved
                .as_deref(),
            Some("Contents/Frameworks/libz.dylib")
        );
        assert_eq!(
            loader.resolve("/usr/lib/libSystem.B.dylib").resolution,
            Resolution::System
        );
        assert_eq!(
            loader.resolve("/opt/homebrew/lib/libfoo.dylib").resolution,
            Resolution::Outside
        );
        assert_eq!(
            loader.resolve("@rpath/missing.dylib").resolution,
            Resolution::Unresolved
        );
        assert_eq!(
            loader.resolve("@executable_path/../../../x").resolution,
            Resolution::Outside
        );
        let outside = vec!["/opt/lib".to_string()];
        let loader = MachoLoader {
            rpaths: &outside,
            ..loader
        };
        let found = loader.resolve("@rpath/libq.dylib");
        assert_eq!(found.resolution, Resolution::Outside);
        assert_eq!(found.via.as_deref(), Some("/opt/lib"));
    }

    #[test]
    fn bare_names() {
        let mut tree = Tree::default();
        tree.insert("bin/Helper.DLL".into(), None);
        assert_eq!(
            resolve_bare(Some(&tree), "bin/app.exe", "helper.dll")
                .resolved
                .as_deref(),
            Some("bin/Helper.DLL")
        );
        assert_eq!(
            resolve_bare(Some(&tree), "bin/app.exe", "KERNEL32.dll").resolution,
            Resolution::SearchPath
        );
        assert_eq!(
            resolve_bare(None, "x", "/lib/ld.so").resolution,
            Resolution::System
        );
    }
}
