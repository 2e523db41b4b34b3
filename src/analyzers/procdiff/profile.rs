//! What the matcher knows about each procedure of one side: its body facts from the native
//! provider, and from its dossier the procedures and imports it calls, who calls it, and the
//! strings it refers to.

use crate::providers::native::{BodyFacts, Image, ProviderError};

/// A callee as one side sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Callee {
    /// Another procedure of the same document, by index.
    Procedure(u32),
    /// An import, by name (stable across builds).
    Import(String),
    /// A direct call to an address that starts no known procedure.
    Address(u64),
}

/// One procedure with everything the passes compare.
#[derive(Debug, Clone)]
pub(super) struct Profile {
    pub(super) address: u64,
    pub(super) name: Option<String>,
    pub(super) facts: BodyFacts,
    /// Sorted and deduplicated.
    pub(super) callees: Vec<Callee>,
    /// Indices of the procedures that call or tail-jump here, sorted and deduplicated.
    pub(super) callers: Vec<u32>,
    /// Texts of the strings referred to, sorted and deduplicated.
    pub(super) strings: Vec<String>,
}

/// Profiles of every procedure of an image, in the image's (address) order.
pub(super) fn profiles(image: &Image) -> Result<Vec<Profile>, ProviderError> {
    let procedures = image.procedures();
    let index_of = |address: u64| {
        procedures
            .binary_search_by_key(&address, |p| p.address)
            .ok()
            .map(|i| i as u32)
    };
    let mut out = Vec::with_capacity(procedures.len());
    for procedure in procedures {
        let facts = image.body_facts(procedure.address)?;
        let dossier = image.function_dossier(procedure.address)?;
        let mut callees: Vec<Callee> = dossier
            .callees
            .iter()
            .map(|edge| match edge.kind.as_str() {
                "import" => Callee::Import(edge.name.clone().unwrap_or_default()),
                "procedure" => {
                    index_of(edge.target).map_or(Callee::Address(edge.target), Callee::Procedure)
                }
                _ => Callee::Address(edge.target),
            })
            .collect();
        callees.sort();
        callees.dedup();
        let mut callers: Vec<u32> = dossier
            .callers
            .iter()
            .filter_map(|c| index_of(c.procedure))
            .collect();
        callers.sort_unstable();
        callers.dedup();
        let mut strings: Vec<String> = dossier
            .strings
            .into_iter()
            .filter(|s| !holds_pointer(image, s.address, &s.text))
            .map(|s| s.text)
            .collect();
        strings.sort();
        strings.dedup();
        out.push(Profile {
            address: procedure.address,
            name: procedure.name.clone(),
            facts,
            callees,
            callers,
            strings,
        });
    }
    Ok(out)
}

/// Whether a short "string" is really an aligned pointer into the image whose low bytes happen
/// to be printable (a table of string pointers read as text): such texts change whenever the
/// layout does, so they would make identical procedures look changed.
fn holds_pointer(image: &Image, address: u64, text: &str) -> bool {
    let size = u64::from(image.pointer_size);
    if text.len() as u64 >= size || !address.is_multiple_of(size) {
        return false;
    }
    let Some(raw) = image.bytes_at(address, size) else {
        return false;
    };
    let mut value = 0u64;
    for (i, &b) in raw.iter().enumerate() {
        let shift = if image.big_endian {
            size as usize - 1 - i
        } else {
            i
        };
        value |= u64::from(b) << (8 * shift);
    }
    image.section_at(value).is_some()
}
