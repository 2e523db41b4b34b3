//! Deep provider candidates: heavier analyzers on PATH that fit the target's format, found by
//! looking, never by starting them.

use std::ffi::OsStr;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A deep analyzer found on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    /// Provider id to pass as provider_id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Where it was found.
    pub path: PathBuf,
}

/// Candidates on PATH for `format` (`any` for every format), sorted by id.
pub fn candidates(format: &str, path_env: Option<&OsStr>) -> Vec<Candidate> {
    let path = path_env.map(|p| p.to_owned()).or_else(|| std::env::var_os("PATH")).unwrap_or_default();
    let known: [(&str, &str, &[&str]); 3] = [
        ("objdump", "GNU objdump", &["elf", "pe"]),
        ("llvm-objdump", "LLVM objdump", &["elf", "pe", "macho", "macho-universal", "app-bundle"]),
        ("gdb", "GNU gdb", &["elf"]),
    ];
    let mut out: Vec<Candidate> = vec![];
    for dir in std::env::split_paths(&path) {
        for (id, name, formats) in known {
            if format != "any" && !formats.contains(&format) {
                continue;
            }
            let p = dir.join(id);
            if p.is_file() && !out.iter().any(|c| c.id == id) {
                out.push(Candidate { id: id.into(), name: name.into(), path: p });
            }
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}
