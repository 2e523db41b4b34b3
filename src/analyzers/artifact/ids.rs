//! Manifest (`agm_`) and occurrence (`occ_`) identifiers: newtypes that parse what agents send,
//! and the functions that derive them from content.

use serde::Serialize;

use super::{OccurrenceKind, Part, TargetInfo};

pub(crate) use crate::ids::sha256_hex;
pub use crate::ids::{ManifestId, OccurrenceId};

/// Computes an occurrence id: `occ_` + SHA-256 of
/// `manifest_id \0 part \0 kind \0 key \0 value`, with an absent key hashed as the empty string.
///
/// The key is part of the input because `(part, kind, value)` alone is not unique: two
/// entitlements of one image are both `true`.
pub fn occurrence_id(
    manifest: &ManifestId,
    part: &str,
    kind: OccurrenceKind,
    key: Option<&str>,
    value: &str,
) -> OccurrenceId {
    OccurrenceId::of(manifest, part, kind.as_str(), key, value)
}

/// The manifest's hashed body; the id itself is left out.
#[derive(Serialize)]
struct ManifestBody<'a> {
    target: &'a TargetInfo,
    complete: bool,
    parts: &'a [Part],
}

/// Computes a manifest id from the canonical JSON (RFC 8785) of `{target, complete, parts}`.
pub(crate) fn manifest_id(
    target: &TargetInfo,
    complete: bool,
    parts: &[Part],
) -> Result<ManifestId, String> {
    let body = ManifestBody {
        target,
        complete,
        parts,
    };
    let canonical = serde_jcs::to_vec(&body).map_err(|e| e.to_string())?;
    Ok(ManifestId::from_digest_of(&canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_normalize() {
        let upper = format!("agm_{}", "AB".repeat(32));
        let id = ManifestId::parse(&upper).expect("upper-case hex is accepted");
        assert_eq!(id.as_str(), format!("agm_{}", "ab".repeat(32)));
        assert!(ManifestId::parse("agm_1234").is_err());
        assert!(ManifestId::parse(&format!("occ_{}", "a".repeat(64))).is_err());
        assert!(OccurrenceId::parse(&format!("occ_{}", "g".repeat(64))).is_err());
        let parsed: Result<ManifestId, _> = serde_json::from_str("\"agm_x\"");
        assert!(parsed.is_err());
    }

    #[test]
    fn occurrence_id_depends_on_every_field() {
        let manifest = ManifestId::parse(&format!("agm_{}", "0".repeat(64))).unwrap();
        let base = occurrence_id(&manifest, "a", OccurrenceKind::Url, None, "v");
        assert_ne!(
            base,
            occurrence_id(&manifest, "b", OccurrenceKind::Url, None, "v")
        );
        assert_ne!(
            base,
            occurrence_id(&manifest, "a", OccurrenceKind::Hostname, None, "v")
        );
        assert_ne!(
            base,
            occurrence_id(&manifest, "a", OccurrenceKind::Url, Some("k"), "v")
        );
        assert_ne!(
            base,
            occurrence_id(&manifest, "a", OccurrenceKind::Url, None, "w")
        );
        // The separator keeps field boundaries: "a\0b" is not "ab".
        assert_ne!(
            occurrence_id(&manifest, "ab", OccurrenceKind::Url, None, "c"),
            occurrence_id(&manifest, "a", OccurrenceKind::Url, None, "bc")
        );
        let expected = {
            let mut text = manifest.as_str().as_bytes().to_vec();
            text.extend_from_slice(b"\0a\0url\0\0v");
            format!("occ_{}", sha256_hex(&text))
        };
        assert_eq!(base.as_str(), expected);
    }
}
