//! Finding angr by looking: the interpreter named by `REA_ANGR_PYTHON` (or `rea.toml`'s
//! `[providers.angr] python`) and an `angr` distribution in its environment's site-packages,
//! read from the file system. Nothing is started to find it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The environment variable naming the Python interpreter whose environment holds angr.
pub const PYTHON_VARIABLE: &str = "REA_ANGR_PYTHON";

/// The angr release rea's worker is written and tested against, with the two pins it needs to
/// import on CPython 3.11.
pub const PINNED: &str = "angr==9.2.213 bitstring==4.1.4 pycparser==3.0";

/// How to install angr where rea finds it: the exact commands.
pub fn install_hint() -> String {
    format!(
        "Install it into a venv and name its interpreter: python3 -m venv ~/.local/share/rea/angr && \
         ~/.local/share/rea/angr/bin/pip install {PINNED} && \
         export {PYTHON_VARIABLE}=~/.local/share/rea/angr/bin/python \
         (or set python = \"...\" in the [providers.angr] table of $REA_CONFIG_DIR/rea.toml); \
         in a checkout of rea, `bash .ci/angr-venv.sh` creates the pinned venv .venv-angr"
    )
}

/// Where the interpreter's name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `$REA_ANGR_PYTHON`.
    Environment,
    /// `[providers.angr] python` in `rea.toml`.
    Config,
}

/// An angr installation found on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// The interpreter, as named (not resolved: a venv's `bin/python` is a symlink whose
    /// target belongs to another environment).
    pub python: PathBuf,
    /// The site-packages directory holding angr.
    pub site_packages: PathBuf,
    /// angr's version from its distribution metadata.
    pub version: String,
    /// Where the interpreter's name came from.
    pub origin: Origin,
}

/// Why no angr installation was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// Neither the variable nor the config names an interpreter.
    #[error(
        "no Python interpreter is named for angr (neither ${PYTHON_VARIABLE} nor [providers.angr] python in rea.toml)"
    )]
    NotConfigured,
    /// The named interpreter is not an executable file.
    #[error("{} is not an executable Python interpreter", path.display())]
    NoInterpreter {
        /// The path as named.
        path: PathBuf,
    },
    /// The interpreter's environment holds no angr distribution.
    #[error("the environment of {} holds no angr package (looked in {})", python.display(), looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoPackage {
        /// The interpreter.
        python: PathBuf,
        /// The site-packages directories searched.
        looked: Vec<PathBuf>,
    },
    /// `rea.toml` could not be read as TOML.
    #[error("{}: {reason}", path.display())]
    BadConfig {
        /// The file.
        path: PathBuf,
        /// What the parser rejected.
        reason: String,
    },
}

/// The part of `rea.toml` this module reads; other tables belong to other modules.
#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    providers: Providers,
}

#[derive(Deserialize, Default)]
struct Providers {
    #[serde(default)]
    angr: Option<AngrTable>,
}

#[derive(Deserialize)]
struct AngrTable {
    python: Option<PathBuf>,
}

/// The interpreter named in a `rea.toml` text, if any.
pub fn python_from_config(text: &str) -> Result<Option<PathBuf>, String> {
    let file: ConfigFile = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(file.providers.angr.and_then(|t| t.python))
}

/// Looks for angr from the process's environment: `$REA_ANGR_PYTHON`, else `rea.toml` in
/// `$REA_CONFIG_DIR`.
pub fn locate() -> Result<Installation, Missing> {
    let variable = std::env::var_os(PYTHON_VARIABLE);
    let config_dir = std::env::var_os("REA_CONFIG_DIR").filter(|v| !v.is_empty());
    locate_with(variable.as_deref(), config_dir.as_deref().map(Path::new))
}

/// [`locate`] with the variable's value and the config directory given (tests use it).
/// The variable wins over the config file; an empty value counts as unset.
pub fn locate_with(
    variable: Option<&OsStr>,
    config_dir: Option<&Path>,
) -> Result<Installation, Missing> {
    let (python, origin) = match variable.filter(|v| !v.is_empty()) {
        Some(v) => (PathBuf::from(v), Origin::Environment),
        None => {
            let named = match config_dir {
                Some(dir) => {
                    let path = dir.join(crate::settings::CONFIG_FILE_NAME);
                    match std::fs::read_to_string(&path) {
                        Ok(text) => python_from_config(&text)
                            .map_err(|reason| Missing::BadConfig { path, reason })?,
                        Err(_) => None,
                    }
                }
                None => None,
            };
            match named {
                Some(p) => (p, Origin::Config),
                None => return Err(Missing::NotConfigured),
            }
        }
    };
    inspect(&python, origin)
}

/// Checks that `python` is an executable file and that its environment holds angr.
pub fn inspect(python: &Path, origin: Origin) -> Result<Installation, Missing> {
    if !python.is_absolute() || !is_executable(python) {
        return Err(Missing::NoInterpreter {
            path: python.to_path_buf(),
        });
    }
    let looked = site_packages(python);
    for dir in &looked {
        if let Some(version) = angr_version(dir) {
            return Ok(Installation {
                python: python.to_path_buf(),
                site_packages: dir.clone(),
                version,
                origin,
            });
        }
    }
    Err(Missing::NoPackage {
        python: python.to_path_buf(),
        looked,
    })
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The site-packages directories an interpreter at `python` reads, found from the layout
/// alone: a venv (`<root>/pyvenv.cfg` beside `<root>/bin/`) reads `<root>/lib/pythonX.Y/
/// site-packages` with `X.Y` from `pyvenv.cfg`; a prefix installation (`<prefix>/bin/python3`)
/// reads `<prefix>/lib/python3.*/site-packages` (and Debian's `dist-packages`).
fn site_packages(python: &Path) -> Vec<PathBuf> {
    let Some(root) = python.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let cfg = root.join("pyvenv.cfg");
    if let Ok(text) = std::fs::read_to_string(&cfg)
        && let Some(version) = pyvenv_version(&text)
    {
        out.push(
            root.join("lib")
                .join(format!("python{version}"))
                .join("site-packages"),
        );
    }
    // Every pythonX.Y folder of the prefix, newest last; for a venv without a version line too.
    if let Ok(entries) = std::fs::read_dir(root.join("lib")) {
        let mut versions: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("python3"))
            })
            .map(|e| e.path())
            .collect();
        versions.sort();
        for dir in versions {
            for leaf in ["site-packages", "dist-packages"] {
                let candidate = dir.join(leaf);
                if !out.contains(&candidate) && candidate.is_dir() {
                    out.push(candidate);
                }
            }
        }
    }
    let debian = root.join("lib").join("python3").join("dist-packages");
    if debian.is_dir() && !out.contains(&debian) {
        out.push(debian);
    }
    out
}

/// `X.Y` of `pyvenv.cfg`'s `version = X.Y.Z` (or `version_info`).
fn pyvenv_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        let key = key.trim();
        if key != "version" && key != "version_info" {
            return None;
        }
        let mut parts = value.trim().split('.');
        let major = parts.next()?.trim();
        let minor = parts.next()?.trim();
        (major.bytes().all(|b| b.is_ascii_digit()) && minor.bytes().all(|b| b.is_ascii_digit()))
            .then(|| format!("{major}.{minor}"))
    })
}

/// angr's version when `dir` holds its package and distribution metadata.
fn angr_version(dir: &Path) -> Option<String> {
    if !dir.join("angr").join("__init__.py").is_file() {
        return None;
    }
    let entries = std::fs::read_dir(dir).ok()?;
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("angr-") && n.ends_with(".dist-info"))
        })
        .collect();
    found.sort();
    let dist = found.pop()?;
    let metadata = std::fs::read_to_string(dist.join("METADATA")).ok();
    metadata
        .as_deref()
        .and_then(|m| {
            m.lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| l.strip_prefix("Version:"))
                .map(|v| v.trim().to_string())
        })
        .or_else(|| {
            // `angr-9.2.213.dist-info`
            let name = dist.file_name()?.to_str()?;
            Some(
                name.strip_prefix("angr-")?
                    .strip_suffix(".dist-info")?
                    .to_string(),
            )
        })
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake environment: `bin/python` (an executable script that fails if run, so a test
    /// that started it would notice), `pyvenv.cfg`, and optionally an angr distribution.
    fn environment(dir: &Path, venv: Option<&str>, angr: Option<&str>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let python = bin.join("python");
        let marker = dir.join("started");
        std::fs::write(
            &python,
            format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let minor = match venv {
            Some(cfg) => {
                std::fs::write(dir.join("pyvenv.cfg"), cfg).unwrap();
                pyvenv_version(cfg).unwrap_or_else(|| "3.11".into())
            }
            None => "3.12".into(),
        };
        let site = dir
            .join("lib")
            .join(format!("python{minor}"))
            .join("site-packages");
        std::fs::create_dir_all(&site).unwrap();
        if let Some(version) = angr {
            std::fs::create_dir_all(site.join("angr")).unwrap();
            std::fs::write(site.join("angr").join("__init__.py"), "").unwrap();
            let dist = site.join(format!("angr-{version}.dist-info"));
            std::fs::create_dir_all(&dist).unwrap();
            std::fs::write(
                dist.join("METADATA"),
                format!("Metadata-Version: 2.1\nName: angr\nVersion: {version}\n\nBody\n"),
            )
            .unwrap();
        }
        python
    }

    #[test]
    fn finds_angr_in_a_venv_by_reading_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let python = environment(
            dir.path(),
            Some("home = /usr/bin\nversion = 3.11.7\n"),
            Some("9.2.213"),
        );
        let found = locate_with(Some(python.as_os_str()), None).unwrap();
        assert_eq!(found.version, "9.2.213");
        assert_eq!(found.origin, Origin::Environment);
        assert_eq!(
            found.site_packages,
            dir.path().join("lib/python3.11/site-packages")
        );
        assert!(
            !dir.path().join("started").exists(),
            "discovery ran the interpreter"
        );
    }

    #[test]
    fn finds_angr_under_a_prefix_without_pyvenv_cfg() {
        let dir = tempfile::tempdir().unwrap();
        let python = environment(dir.path(), None, Some("9.2.100"));
        let found = inspect(&python, Origin::Config).unwrap();
        assert_eq!(found.version, "9.2.100");
        assert_eq!(
            found.site_packages,
            dir.path().join("lib/python3.12/site-packages")
        );
    }

    #[test]
    fn says_what_is_missing() {
        assert_eq!(locate_with(None, None), Err(Missing::NotConfigured));
        assert_eq!(
            locate_with(Some(OsStr::new("")), None),
            Err(Missing::NotConfigured)
        );
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("nope/bin/python");
        assert_eq!(
            locate_with(Some(absent.as_os_str()), None),
            Err(Missing::NoInterpreter {
                path: absent.clone()
            })
        );
        assert!(matches!(
            locate_with(Some(OsStr::new("python3")), None),
            Err(Missing::NoInterpreter { .. })
        ));
        let python = environment(dir.path(), Some("version = 3.11.7\n"), None);
        let err = locate_with(Some(python.as_os_str()), None).unwrap_err();
        assert!(
            matches!(&err, Missing::NoPackage { looked, .. } if looked == &[dir.path().join("lib/python3.11/site-packages")]),
            "{err:?}"
        );
        assert!(err.to_string().contains("holds no angr package"));
        assert!(
            install_hint().contains("pip install angr==9.2.213 bitstring==4.1.4 pycparser==3.0")
        );
    }

    #[test]
    fn the_config_names_the_interpreter_when_the_variable_does_not() {
        let env = tempfile::tempdir().unwrap();
        let python = environment(env.path(), Some("version = 3.11.7\n"), Some("9.2.213"));
        let config = tempfile::tempdir().unwrap();
        std::fs::write(
            config.path().join("rea.toml"),
            format!(
                "[capture]\nenabled = false\n\n[providers.angr]\npython = \"{}\"\n",
                python.display()
            ),
        )
        .unwrap();
        let found = locate_with(None, Some(config.path())).unwrap();
        assert_eq!(found.origin, Origin::Config);
        assert_eq!(found.python, python);
        // The variable wins over the file.
        let other = tempfile::tempdir().unwrap();
        let other_python = environment(other.path(), Some("version = 3.11.7\n"), Some("9.2.1"));
        let found = locate_with(Some(other_python.as_os_str()), Some(config.path())).unwrap();
        assert_eq!(found.version, "9.2.1");
        assert_eq!(found.origin, Origin::Environment);
        std::fs::write(config.path().join("rea.toml"), "[providers.angr\n").unwrap();
        assert!(matches!(
            locate_with(None, Some(config.path())),
            Err(Missing::BadConfig { .. })
        ));
        std::fs::write(config.path().join("rea.toml"), "[capture]\n").unwrap();
        assert_eq!(
            locate_with(None, Some(config.path())),
            Err(Missing::NotConfigured)
        );
    }
}
