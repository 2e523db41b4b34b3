//! Identifier newtypes: the Evidence, manifest, occurrence and unknown ids, and code addresses.
//!
//! Each parses the forms agents send (any letter case; digest ids also surrounding whitespace) into
//! one canonical lowercase form, so that what is stored, compared and completed is always the same
//! text. An address is only ever `0x`-hex: no other form is guessed at.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// Why a text is not an identifier of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not {expected}")]
pub struct IdError {
    /// The text that was offered.
    pub text: String,
    /// What was expected, in words.
    pub expected: &'static str,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

macro_rules! digest_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $expected:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// The id's prefix, including the underscore.
            pub const PREFIX: &'static str = $prefix;

            /// The id whose digest is the SHA-256 of `bytes`.
            pub fn from_digest_of(bytes: &[u8]) -> Self {
                Self(format!("{}{}", $prefix, sha256_hex(bytes)))
            }

            /// Whether this id is the one of `bytes`: their SHA-256 is its digest. Compares
            /// without building the other id (ledger checks run it on every row).
            pub fn is_digest_of(&self, bytes: &[u8]) -> bool {
                self.is_digest(&Sha256::digest(bytes).into())
            }

            /// Whether this id's digest is `digest` (a SHA-256 computed elsewhere).
            pub fn is_digest(&self, digest: &[u8; 32]) -> bool {
                let mut hex = [0u8; 64];
                // 32 bytes always fit 64 hex digits.
                let encoded = hex::encode_to_slice(digest, &mut hex).is_ok();
                encoded && self.0.as_bytes().get($prefix.len()..) == Some(&hex[..])
            }

            /// Parses an id in any letter case; the digest must be 64 hex digits.
            pub fn parse(text: &str) -> Result<Self, IdError> {
                // Ids read back from the ledger are already canonical: kept as they are.
                let canonical = text.len() == $prefix.len() + 64
                    && text.starts_with($prefix)
                    && text.bytes().skip($prefix.len()).all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                if canonical {
                    return Ok(Self(text.to_owned()));
                }
                let lower = text.trim().to_ascii_lowercase();
                let digest = lower.strip_prefix($prefix);
                match digest {
                    Some(d) if d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()) => {
                        Ok(Self(lower))
                    }
                    _ => Err(IdError { text: text.to_owned(), expected: $expected }),
                }
            }

            /// The canonical text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": concat!("^", $prefix, "[0-9a-fA-F]{64}$"),
                    "description": $expected,
                })
            }
        }
    };
}

digest_id!(
    /// `ev_` + SHA-256 of the Evidence record's canonical JSON.
    EvidenceId, "ev_", "an Evidence id (ev_ followed by 64 hex digits)"
);
digest_id!(
    /// `agm_` + SHA-256 of an artifact manifest's canonical JSON.
    ManifestId, "agm_", "an artifact manifest id (agm_ followed by 64 hex digits)"
);
digest_id!(
    /// `occ_` + SHA-256 of the manifest id, part and item of an artifact occurrence.
    OccurrenceId, "occ_", "an artifact occurrence id (occ_ followed by 64 hex digits)"
);

impl OccurrenceId {
    /// The id of an item found in a part: `occ_` + SHA-256 of
    /// `manifest \0 part \0 kind \0 key \0 value`, an absent key hashed as the empty string. The
    /// one formula for every occurrence, of an artifact inventory or of a JavaScript application
    /// graph; the key is part of it because `(part, kind, value)` alone is not unique.
    pub fn of(
        manifest: &ManifestId,
        part: &str,
        kind: &str,
        key: Option<&str>,
        value: &str,
    ) -> OccurrenceId {
        let item = [manifest.as_str(), part, kind, key.unwrap_or(""), value].join("\0");
        OccurrenceId::from_digest_of(item.as_bytes())
    }
}

/// A residual unknown's stable id: `unk_` followed by 16 to 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct UnknownId(#[schemars(regex(pattern = r"^unk_[0-9a-fA-F]{16,64}$"))] String);

impl UnknownId {
    /// Parses an unknown id in any letter case.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let lower = text.trim().to_ascii_lowercase();
        match lower.strip_prefix("unk_") {
            Some(d) if (16..=64).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Ok(Self(lower))
            }
            _ => Err(IdError {
                text: text.to_owned(),
                expected: "a residual unknown id (unk_ followed by hex digits)",
            }),
        }
    }

    /// A new id derived from the given seed bytes (the question and the time of recording).
    pub fn derive(seed: &[u8]) -> Self {
        Self(format!("unk_{}", &sha256_hex(seed)[..24]))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UnknownId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for UnknownId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An annotation's stable id: `ann_` followed by 16 to 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct AnnotationId(#[schemars(regex(pattern = r"^ann_[0-9a-fA-F]{16,64}$"))] String);

impl AnnotationId {
    /// Parses an annotation id in any letter case.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let lower = text.trim().to_ascii_lowercase();
        match lower.strip_prefix("ann_") {
            Some(d) if (16..=64).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Ok(Self(lower))
            }
            _ => Err(IdError {
                text: text.to_owned(),
                expected: "an annotation id (ann_ followed by hex digits)",
            }),
        }
    }

    /// A new id derived from the given seed bytes (what it is about and the time of recording).
    pub fn derive(seed: &[u8]) -> Self {
        Self(format!("ann_{}", &sha256_hex(seed)[..24]))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AnnotationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AnnotationId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An analyst name shown beside a file's name (never in its place): the text of the live `name`
/// annotation of the place, and that annotation's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnalystName {
    /// The analyst's name (an annotation, authority analyst-inference), beside the file's `name`.
    pub analyst_name: String,
    /// The annotation that gives it.
    #[schemars(with = "String")]
    pub annotation_id: AnnotationId,
}

/// A virtual address in a document. Its canonical text is lowercase `0x` hex without padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address(pub u64);

impl Address {
    /// The refusal of any form but `0x`-hex, in words that say the form.
    const FORM: &'static str = "an address: an address is 0x followed by 1 to 16 hex digits, \
                                such as 0x1f00";

    /// Parses `0x1F` or `0x1f`: `0x` (or `0X`) and 1 to 16 hex digits, nothing around them.
    /// Digits without `0x` are refused rather than guessed: `16384` could mean 0x4000 or
    /// 0x16384, and reading it either way shows the caller bytes it did not ask for.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let refuse = |expected: &'static str| IdError {
            text: text.to_owned(),
            expected,
        };
        if text.trim() != text {
            return Err(refuse(
                "an address: it has spaces around it; an address is 0x followed by 1 to 16 hex \
                 digits, such as 0x1f00",
            ));
        }
        let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) else {
            return Err(
                if !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit()) {
                    refuse(
                        "an address: digits without 0x are not read as one (decimal or hex?); an \
                     address is 0x followed by 1 to 16 hex digits, such as 0x1f00",
                    )
                } else {
                    refuse(Self::FORM)
                },
            );
        };
        // Hex digits only: `from_str_radix` alone would take a sign (`0x+1f`).
        if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(refuse(Self::FORM));
        }
        u64::from_str_radix(digits, 16)
            .map(Address)
            .map_err(|_| refuse(Self::FORM))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Address {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Address".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^0[xX][0-9a-fA-F]{1,16}$",
            "description": "a virtual address in hex, such as 0x1f00",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_id_parses_any_case_into_lowercase() {
        let hex = "AB".repeat(32);
        let id = EvidenceId::parse(&format!(" EV_{hex} ")).unwrap();
        assert_eq!(id.as_str(), format!("ev_{}", hex.to_lowercase()));
        assert!(EvidenceId::parse("ev_123").is_err());
        assert!(EvidenceId::parse(&format!("agm_{hex}")).is_err());
    }

    #[test]
    fn addresses_have_one_canonical_text() {
        assert_eq!(Address::parse("0X1F").unwrap().to_string(), "0x1f");
        assert_eq!(Address::parse("0x1f00").unwrap().to_string(), "0x1f00");
        assert_eq!(Address(0).to_string(), "0x0");
        assert!(Address::parse("0x").is_err());
        assert!(Address::parse("0x1_0000_0000_0000_0000").is_err());
        assert!(Address::parse("12345678901234567").is_err());
        // Only 0x-hex is an address: nothing is guessed, and the refusal says the form.
        for (text, says) in [
            ("16384", "digits without 0x"),
            ("1f00", "digits without 0x"),
            (" 0x4000", "spaces around it"),
            ("0x4000\n", "spaces around it"),
            ("#4000", "0x followed by 1 to 16 hex digits"),
            ("4000h", "0x followed by 1 to 16 hex digits"),
            ("", "0x followed by 1 to 16 hex digits"),
        ] {
            let e = Address::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        for signed in ["0x+1f", "+1f", "0x-1", "-1"] {
            assert!(Address::parse(signed).is_err(), "{signed}");
        }
    }
}
