//! Symbol names: demangling (Rust, C++) and the choice of one name among aliases at an address.

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
    pub(crate) raw: String,
}

impl NameCandidate {
    /// Sort key: better names sort first. Among names from the same source, a name with fewer
    /// leading underscores wins (`malloc` over `__libc_malloc`), then the shorter, then the
    /// lexicographically smaller, so the choice never depends on table order.
    fn key(&self) -> (NameSource, usize, usize, &str) {
        let underscores = self.raw.bytes().take_while(|&b| b == b'_').count();
        (self.source, underscores, self.raw.len(), self.raw.as_str())
    }
}

/// Picks the best of several candidate names.
pub(crate) fn best_name(candidates: &[NameCandidate]) -> Option<&NameCandidate> {
    candidates.iter().min_by(|a, b| a.key().cmp(&b.key()))
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

/// The displayed name and, when it differs, the stored name.
pub(crate) fn display_names(raw: &str) -> (String, Option<String>) {
    match demangle(raw) {
        Some(name) if name != raw => (name, Some(raw.to_string())),
        _ => (raw.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn prefers_public_short_names() {
        let c = |source, raw: &str| NameCandidate {
            source,
            raw: raw.to_string(),
        };
        let all = [
            c(NameSource::Global, "__libc_malloc"),
            c(NameSource::Global, "malloc"),
            c(NameSource::Local, "a"),
        ];
        assert_eq!(best_name(&all).unwrap().raw, "malloc");
        assert!(best_name(&[]).is_none());
    }
}
