//! Occurrence pages: splitting an inventory's occurrences into pages, and the schema check a
//! stored page must pass before it may feed completion ([`validate_page`]).

use std::collections::BTreeSet;

use serde::Deserialize;

use super::ids::{ManifestId, OccurrenceId, occurrence_id};
use super::{Occurrence, OccurrenceKind, OccurrencePage, SchemaError};

/// Splits sorted occurrences into pages of `page_size` (at least one page, possibly empty).
pub(crate) fn paginate(
    manifest_id: &ManifestId,
    occurrences: Vec<Occurrence>,
    page_size: usize,
    complete: bool,
) -> Vec<OccurrencePage> {
    let page_size = page_size.max(1);
    let total = occurrences.len() as u64;
    let chunks: Vec<Vec<Occurrence>> = if occurrences.is_empty() {
        vec![Vec::new()]
    } else {
        occurrences
            .chunks(page_size)
            .map(<[Occurrence]>::to_vec)
            .collect()
    };
    let pages = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, occurrences)| OccurrencePage {
            manifest_id: manifest_id.clone(),
            page: u32::try_from(index).unwrap_or(u32::MAX),
            pages,
            total,
            complete,
            occurrences,
        })
        .collect()
}

/// The stored shape, with ids as plain text so each defect gets its own error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPage {
    manifest_id: String,
    page: u32,
    pages: u32,
    total: u64,
    complete: bool,
    occurrences: Vec<RawOccurrence>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOccurrence {
    id: String,
    part: String,
    kind: OccurrenceKind,
    #[serde(default)]
    key: Option<String>,
    value: String,
}

/// Validates a stored occurrence page: the shape, `agm_`/`occ_` + 64 hex ids, `page < pages`,
/// no more occurrences than the set's total, no duplicates, and every occurrence id recomputing
/// from its manifest id, part, kind, key and value.
pub fn validate_page(value: &serde_json::Value) -> Result<OccurrencePage, SchemaError> {
    let raw = RawPage::deserialize(value).map_err(|e| SchemaError::Malformed {
        reason: e.to_string(),
    })?;
    let manifest_id = ManifestId::parse(&raw.manifest_id)
        .ok()
        .filter(|id| id.as_str() == raw.manifest_id)
        .ok_or_else(|| SchemaError::BadManifestId {
            value: raw.manifest_id.clone(),
        })?;
    if raw.pages == 0 || raw.page >= raw.pages {
        return Err(SchemaError::PageOutOfRange {
            page: raw.page,
            pages: raw.pages,
        });
    }
    if raw.occurrences.len() as u64 > raw.total {
        return Err(SchemaError::TotalExceeded {
            found: raw.occurrences.len() as u64,
            total: raw.total,
        });
    }
    let mut seen = BTreeSet::new();
    let mut occurrences = Vec::with_capacity(raw.occurrences.len());
    for (index, occurrence) in raw.occurrences.into_iter().enumerate() {
        // Only the normalized (lowercase) form is accepted in storage, so ids compare as text.
        let id = OccurrenceId::parse(&occurrence.id)
            .ok()
            .filter(|id| id.as_str() == occurrence.id)
            .ok_or_else(|| SchemaError::BadOccurrenceId {
                index,
                value: occurrence.id.clone(),
            })?;
        let key = occurrence.key.filter(|key| !key.is_empty());
        let computed = occurrence_id(
            &manifest_id,
            &occurrence.part,
            occurrence.kind,
            key.as_deref(),
            &occurrence.value,
        );
        if computed != id {
            return Err(SchemaError::OccurrenceIdMismatch {
                index,
                stored: id.to_string(),
                computed: computed.to_string(),
            });
        }
        if !seen.insert(id.clone()) {
            return Err(SchemaError::DuplicateOccurrence {
                index,
                id: id.to_string(),
            });
        }
        occurrences.push(Occurrence {
            id,
            part: occurrence.part,
            kind: occurrence.kind,
            key,
            value: occurrence.value,
        });
    }
    Ok(OccurrencePage {
        manifest_id,
        page: raw.page,
        pages: raw.pages,
        total: raw.total,
        complete: raw.complete,
        occurrences,
    })
}

/// Checks that `pages` are exactly pages `0..n` of one set for `manifest_id`, each valid, whose
/// occurrence count equals `total`.
pub(crate) fn check_page_set(
    manifest_id: &ManifestId,
    total: u64,
    pages: &[OccurrencePage],
) -> Result<(), SchemaError> {
    let inconsistent = |reason: String| SchemaError::InconsistentPageSet { reason };
    let expected = u32::try_from(pages.len())
        .map_err(|_| inconsistent(format!("{} pages is too many", pages.len())))?;
    let mut count = 0u64;
    let mut seen = BTreeSet::new();
    for (index, page) in pages.iter().enumerate() {
        let value = serde_json::to_value(page).map_err(|e| SchemaError::Malformed {
            reason: e.to_string(),
        })?;
        let page = validate_page(&value)?;
        if page.manifest_id != *manifest_id {
            return Err(inconsistent(format!(
                "page {index} belongs to manifest {}",
                page.manifest_id
            )));
        }
        if page.page as usize != index || page.pages != expected || page.total != total {
            return Err(inconsistent(format!(
                "page at position {index} says page {} of {} with total {}, expected page {index} of {expected} with total {total}",
                page.page, page.pages, page.total
            )));
        }
        for occurrence in &page.occurrences {
            if !seen.insert(occurrence.id.clone()) {
                return Err(inconsistent(format!(
                    "occurrence {} appears on more than one page",
                    occurrence.id
                )));
            }
        }
        count += page.occurrences.len() as u64;
    }
    if pages.is_empty() || count != total {
        return Err(inconsistent(format!(
            "the pages hold {count} occurrences but the set's total is {total}"
        )));
    }
    Ok(())
}
