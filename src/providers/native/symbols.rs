//! Symbol names: demangling (Rust, C++), symbol versions, Mach-O's leading underscore, and the
//! choice of one primary name among the aliases of an address.

/// Mangled names longer than this are kept as stored: demangling them costs time and stack, and
/// a name that long is unreadable either way.
const MAX_DEMANGLE_LEN: usize = 4096;

/// Where a name came from; earlier variants win when several names share an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum NameSource {
    /// An exported or global symbol: the name other code links against.
    Global,
    /// A local (file-static) symbol.
    Local,
    /// A name synthesized from import relocations, such as `free@plt`.
    Stub,
    /// A name from Go's pclntab.
    GoPclntab,
}

/// A candidate name for a procedure, before aliases are resolved.
#[derive(Debug, Clone)]
pub(crate) struct NameCandidate {
    pub(crate) source: NameSource,
    /// The name as `nm -D` prints it: an ELF dynamic symbol with its version (`memcpy@@GLIBC_2.14`
    /// for the default version, `memcpy@GLIBC_2.2.5` for another), a Mach-O symbol with its
    /// leading underscore.
    pub(crate) raw: String,
    /// Whether the symbol is a GNU indirect function (its value is the resolver's address).
    pub(crate) ifunc: bool,
    /// Whether the name is a Mach-O symbol, whose C-level name drops one leading underscore.
    pub(crate) macho: bool,
}

impl NameCandidate {
    /// The name shown for this candidate.
    pub(crate) fn display(&self) -> String {
        display_name(&self.raw, self.macho)
    }

    /// Sort key of the candidate shown as `display`: better names sort first. A non-default
    /// symbol version (`name@VERSION`) loses to any plain or default-version name, an IFUNC
    /// symbol wins over its resolver's own name; then a name with fewer leading underscores wins
    /// (`malloc` over `__libc_malloc`), then the shorter, then the lexicographically smaller, so
    /// the choice never depends on table order.
    fn key<'a>(&self, display: &'a str) -> (NameSource, bool, bool, usize, usize, &'a str) {
        let underscores = display.bytes().take_while(|&b| b == b'_').count();
        (
            self.source,
            hidden_version(&self.raw),
            !self.ifunc,
            underscores,
            display.len(),
            display,
        )
    }
}

/// Whether `raw` names a non-default symbol version (`name@VERSION`, not `@@`, not `@plt`).
fn hidden_version(raw: &str) -> bool {
    match raw.split_once('@') {
        Some((base, rest)) => !base.is_empty() && !rest.starts_with('@') && rest != "plt",
        None => false,
    }
}

/// The names of one address: the primary name, the stored form of it when that differs, and
/// the other names as aliases (displayed, sorted, without duplicates or the primary name).
pub(crate) struct Names {
    pub(crate) name: Option<String>,
    pub(crate) raw_name: Option<String>,
    pub(crate) aliases: Vec<String>,
}

/// Resolves the candidates of one address into a primary name and aliases. Of several stored
/// forms of the primary name (a `.symtab` `memcpy` and a `.dynsym` `memcpy@@GLIBC_2.14`), the
/// versioned one is kept as `raw_name`, so stripped and unstripped builds agree.
pub(crate) fn resolve(candidates: &[NameCandidate]) -> Names {
    // Each candidate is demangled once: a name that long may cost microseconds, and a large
    // file has tens of thousands.
    let shown: Vec<String> = candidates.iter().map(NameCandidate::display).collect();
    let Some(best) = (0..candidates.len()).min_by(|&a, &b| {
        candidates[a]
            .key(&shown[a])
            .cmp(&candidates[b].key(&shown[b]))
    }) else {
        return Names {
            name: None,
            raw_name: None,
            aliases: Vec::new(),
        };
    };
    let name = &shown[best];
    let raw = candidates
        .iter()
        .zip(&shown)
        .find(|(c, d)| *d == name && c.raw.contains("@@"))
        .map_or(&candidates[best], |(c, _)| c)
        .raw
        .clone();
    let mut aliases: Vec<String> = shown.iter().filter(|d| *d != name).cloned().collect();
    aliases.sort();
    aliases.dedup();
    let name = shown[best].clone();
    Names {
        raw_name: (raw != name).then_some(raw),
        name: Some(name),
        aliases,
    }
}

/// A name as rea shows it: every control character (a newline, a tab, an escape) written as its
/// Rust escape (`\n`, `\t`, `\u{1b}`), so a name read from a file is always one line of plain
/// text in a listing, an assembly line or pseudo-code, and cannot forge the lines around it.
/// Names are escaped where they are read from the file, so every view shows the same text and a
/// caller names the procedure by it; this is idempotent on names that have no control character.
pub(crate) fn escape_controls(name: &str) -> String {
    if !has_controls(name) {
        return name.to_owned();
    }
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Whether `name` has a character [`escape_controls`] escapes.
fn has_controls(name: &str) -> bool {
    name.chars().any(char::is_control)
}

/// The displayed form of a stored name: demangled (Rust, C++), without Mach-O's leading
/// underscore for C names, and without the `@@VERSION` of a default ELF symbol version (the
/// plain name binds to it); a non-default `@VERSION` and suffixes such as `@plt` stay.
pub(crate) fn display_name(raw: &str, macho: bool) -> String {
    let (base, suffix) = match raw.find('@') {
        Some(at) if at > 0 => {
            let rest = &raw[at..];
            (&raw[..at], if rest.starts_with("@@") { "" } else { rest })
        }
        _ => (raw, ""),
    };
    let mut shown = match demangle(base) {
        Some(demangled) => demangled,
        None if macho => base.strip_prefix('_').unwrap_or(base).to_string(),
        None => base.to_string(),
    };
    shown.push_str(suffix);
    if has_controls(&shown) {
        escape_controls(&shown)
    } else {
        shown
    }
}

/// Demangles a Rust (legacy or v0) or Itanium C++ symbol; `None` when it is not mangled or does
/// not parse. Mach-O's extra leading underscore is accepted. A `@plt`/`@…` suffix is kept.
pub(crate) fn demangle(raw: &str) -> Option<String> {
    if raw.len() > MAX_DEMANGLE_LEN {
        return None;
    }
    let (base, suffix) = match raw.find('@') {
        Some(at) if at > 0 => (&raw[..at], &raw[at..]),
        _ => (raw, ""),
    };
    if !(base.starts_with("_Z")
        || base.starts_with("__Z")
        || base.starts_with("_R")
        || base.starts_with("__R"))
    {
        return None;
    }
    if let Ok(rust) = rustc_demangle::try_demangle(base) {
        return Some(format!("{rust:#}{suffix}"));
    }
    let itanium = base
        .strip_prefix('_')
        .filter(|b| b.starts_with("_Z"))
        .unwrap_or(base);
    if !itanium.starts_with("_Z") {
        return None;
    }
    // The demangler is a large recursive parser; a crafted name must cost a name, not the process.
    let demangled = std::panic::catch_unwind(|| {
        let symbol = cpp_demangle::Symbol::new(itanium.as_bytes()).ok()?;
        symbol
            .demangle(&cpp_demangle::DemangleOptions::default())
            .ok()
    })
    .ok()
    .flatten()?;
    Some(format!("{demangled}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_names_are_escaped_regression_25() {
        assert_eq!(escape_controls("evil\nname"), "evil\\nname");
        assert_eq!(
            escape_controls("tab\there\u{1b}[2J"),
            "tab\\there\\u{1b}[2J"
        );
        assert_eq!(escape_controls("plain_größe"), "plain_größe");
        assert_eq!(display_name("_evil\rname", true), "evil\\rname");
    }

    #[test]
    fn demangles_cpp_rust_and_macho_forms() {
        assert_eq!(demangle("_ZN3foo3barEv").as_deref(), Some("foo::bar()"));
        assert_eq!(demangle("__ZN3foo3barEv").as_deref(), Some("foo::bar()"));
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE").as_deref(),
            Some("core::fmt::write")
        );
        assert_eq!(
            demangle("_Znwm@plt").as_deref(),
            Some("operator new(unsigned long)@plt")
        );
        assert_eq!(demangle("malloc"), None);
        assert_eq!(demangle("_Z"), None);
        assert_eq!(demangle("_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"), None);
    }

    fn c(source: NameSource, raw: &str) -> NameCandidate {
        NameCandidate {
            source,
            raw: raw.to_string(),
            ifunc: false,
            macho: false,
        }
    }

    #[test]
    fn prefers_public_short_names_and_keeps_the_others_as_aliases() {
        let all = [
            c(NameSource::Global, "__libc_malloc@@GLIBC_2.2.5"),
            c(NameSource::Global, "malloc@@GLIBC_2.2.5"),
            c(NameSource::Local, "a"),
        ];
        let names = resolve(&all);
        assert_eq!(names.name.as_deref(), Some("malloc"));
        assert_eq!(names.raw_name.as_deref(), Some("malloc@@GLIBC_2.2.5"));
        assert_eq!(names.aliases, ["__libc_malloc", "a"]);
        assert!(resolve(&[]).name.is_none());
    }

    #[test]
    fn versions_ifuncs_and_macho_underscores() {
        // The default version is the plain name; a compat version keeps `@VERSION` and loses
        // to any other name of the same address.
        assert_eq!(display_name("memcpy@@GLIBC_2.14", false), "memcpy");
        assert_eq!(
            display_name("memcpy@GLIBC_2.2.5", false),
            "memcpy@GLIBC_2.2.5"
        );
        assert_eq!(display_name("free@plt", false), "free@plt");
        assert_eq!(display_name("_ZN3foo3barEv@@V1", false), "foo::bar()");
        let names = resolve(&[
            c(NameSource::Global, "memcpy@GLIBC_2.2.5"),
            c(NameSource::Global, "__memcpy_compat"),
            c(NameSource::Local, "measure_v1"),
        ]);
        assert_eq!(names.name.as_deref(), Some("__memcpy_compat"));
        assert_eq!(names.aliases, ["measure_v1", "memcpy@GLIBC_2.2.5"]);
        // The IFUNC symbol names its resolver.
        let mut ifunc = c(NameSource::Global, "compute@@VERS_1.0");
        ifunc.ifunc = true;
        let names = resolve(&[c(NameSource::Global, "resolve_compute"), ifunc]);
        assert_eq!(names.name.as_deref(), Some("compute"));
        assert_eq!(names.aliases, ["resolve_compute"]);
        // Mach-O C names drop one underscore; the stored name stays as raw_name.
        let mut macho = c(NameSource::Global, "_AesCbc_Decode");
        macho.macho = true;
        let names = resolve(&[macho.clone()]);
        assert_eq!(names.name.as_deref(), Some("AesCbc_Decode"));
        assert_eq!(names.raw_name.as_deref(), Some("_AesCbc_Decode"));
        macho.raw = "__ZN3foo3barEv".into();
        assert_eq!(macho.display(), "foo::bar()");
        macho.raw = "-[AppDelegate run]".into();
        assert_eq!(macho.display(), "-[AppDelegate run]");
    }
}
