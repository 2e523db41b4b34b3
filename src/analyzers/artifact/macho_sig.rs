//! Parser for the embedded code signature of a Mach-O image (the `LC_CODE_SIGNATURE` SuperBlob):
//! CodeDirectory facts, the XML entitlements blob and whether a CMS signature is present.
//!
//! All fields of the SuperBlob are big-endian. Every offset and length is bounds-checked against
//! the blob that contains it, so a crafted signature yields an error, never a panic.

/// `CSMAGIC_EMBEDDED_SIGNATURE`: the SuperBlob.
const MAGIC_EMBEDDED_SIGNATURE: u32 = 0xfade_0cc0;
/// `CSMAGIC_CODEDIRECTORY`.
const MAGIC_CODEDIRECTORY: u32 = 0xfade_0c02;
/// `CSMAGIC_EMBEDDED_ENTITLEMENTS`: an XML property list.
const MAGIC_ENTITLEMENTS: u32 = 0xfade_7171;
/// `CSMAGIC_EMBEDDED_DER_ENTITLEMENTS`.
const MAGIC_DER_ENTITLEMENTS: u32 = 0xfade_7172;
/// `CSMAGIC_BLOBWRAPPER`: wraps the CMS signature.
const MAGIC_BLOBWRAPPER: u32 = 0xfade_0b01;

/// Slot of the primary CodeDirectory.
const SLOT_CODEDIRECTORY: u32 = 0;
/// First slot of alternate CodeDirectories (SHA-256 next to a SHA-1 primary).
const SLOT_ALTERNATE_FIRST: u32 = 0x1000;
/// One past the last alternate CodeDirectory slot.
const SLOT_ALTERNATE_END: u32 = 0x1005;
/// Slot of the CMS signature wrapper.
const SLOT_SIGNATURE: u32 = 0x1_0000;

/// `CS_ADHOC`: signed without an identity.
pub(crate) const FLAG_ADHOC: u32 = 0x0000_0002;
/// `CS_RUNTIME`: hardened runtime.
pub(crate) const FLAG_RUNTIME: u32 = 0x0001_0000;
/// `CS_LINKER_SIGNED`: ad-hoc signature written by the linker.
pub(crate) const FLAG_LINKER_SIGNED: u32 = 0x0002_0000;

/// The CodeDirectory version from which the team identifier offset exists.
const VERSION_TEAM_ID: u32 = 0x20200;

/// Facts read from a code signature.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SignatureInfo {
    /// Signing identifier of the primary CodeDirectory.
    pub identifier: Option<String>,
    /// Team identifier, when the CodeDirectory carries one.
    pub team_id: Option<String>,
    /// CodeDirectory flags.
    pub flags: u32,
    /// Hash type names of the primary and alternate CodeDirectories, in slot order.
    pub hash_types: Vec<String>,
    /// Whether a non-empty CMS signature is present (an identity signed it).
    pub has_cms: bool,
    /// The XML entitlements property list, when present.
    pub entitlements_xml: Option<Vec<u8>>,
    /// Whether DER entitlements are present (not decoded).
    pub has_der_entitlements: bool,
}

/// What is wrong with a code signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignatureError(pub String);

fn be_u32(data: &[u8], at: usize) -> Result<u32, SignatureError> {
    at.checked_add(4)
        .and_then(|end| data.get(at..end))
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| SignatureError(format!("truncated at offset {at}")))
}

/// Reads a NUL-terminated string starting at `at` inside `blob`.
fn c_string(blob: &[u8], at: usize) -> Result<String, SignatureError> {
    let tail = blob
        .get(at..)
        .ok_or_else(|| SignatureError(format!("string offset {at} is outside the blob")))?;
    let end = tail
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| SignatureError(format!("string at offset {at} is not terminated")))?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

fn hash_type_name(value: u8) -> String {
    match value {
        1 => "sha1".to_string(),
        2 => "sha256".to_string(),
        3 => "sha256-truncated".to_string(),
        4 => "sha384".to_string(),
        other => format!("unknown-{other}"),
    }
}

/// Parses a SuperBlob (the bytes `LC_CODE_SIGNATURE` points at).
pub(crate) fn parse(data: &[u8]) -> Result<SignatureInfo, SignatureError> {
    let magic = be_u32(data, 0)?;
    if magic != MAGIC_EMBEDDED_SIGNATURE {
        return Err(SignatureError(format!(
            "SuperBlob magic is 0x{magic:08x}, expected 0x{MAGIC_EMBEDDED_SIGNATURE:08x}"
        )));
    }
    let length = be_u32(data, 4)? as usize;
    // The SuperBlob may be shorter than the padded region the load command reserves.
    let blob = data.get(..length).ok_or_else(|| {
        SignatureError(format!(
            "SuperBlob length {length} exceeds the {} bytes available",
            data.len()
        ))
    })?;
    let count = be_u32(blob, 8)? as usize;
    // Each index entry is 8 bytes; a count that cannot fit is rejected before looping.
    if count
        .checked_mul(8)
        .and_then(|n| n.checked_add(12))
        .is_none_or(|end| end > blob.len())
    {
        return Err(SignatureError(format!(
            "blob count {count} does not fit the SuperBlob"
        )));
    }
    let mut info = SignatureInfo::default();
    let mut primary_seen = false;
    for index in 0..count {
        let entry = 12 + index * 8;
        let slot = be_u32(blob, entry)?;
        let offset = be_u32(blob, entry + 4)? as usize;
        let blob_magic = be_u32(blob, offset)?;
        let blob_length = be_u32(blob, offset.saturating_add(4))? as usize;
        let inner = offset
            .checked_add(blob_length)
            .and_then(|end| blob.get(offset..end))
            .ok_or_else(|| {
                SignatureError(format!(
                    "blob in slot 0x{slot:x} (offset {offset}, length {blob_length}) exceeds the SuperBlob"
                ))
            })?;
        match (slot, blob_magic) {
            (SLOT_CODEDIRECTORY, MAGIC_CODEDIRECTORY) => {
                let directory = code_directory(inner)?;
                info.identifier = Some(directory.identifier);
                info.team_id = directory.team_id;
                info.flags = directory.flags;
                info.hash_types.insert(0, directory.hash_type);
                primary_seen = true;
            }
            (SLOT_ALTERNATE_FIRST..SLOT_ALTERNATE_END, MAGIC_CODEDIRECTORY) => {
                let directory = code_directory(inner)?;
                info.hash_types.push(directory.hash_type);
            }
            (_, MAGIC_ENTITLEMENTS) => {
                info.entitlements_xml = Some(inner.get(8..).unwrap_or_default().to_vec());
            }
            (_, MAGIC_DER_ENTITLEMENTS) => info.has_der_entitlements = true,
            (SLOT_SIGNATURE, MAGIC_BLOBWRAPPER) => info.has_cms = blob_length > 8,
            _ => {}
        }
    }
    if !primary_seen {
        return Err(SignatureError("no CodeDirectory in slot 0".to_string()));
    }
    Ok(info)
}

struct CodeDirectory {
    identifier: String,
    team_id: Option<String>,
    flags: u32,
    hash_type: String,
}

/// Reads the fixed CodeDirectory header fields this inventory reports.
fn code_directory(blob: &[u8]) -> Result<CodeDirectory, SignatureError> {
    let version = be_u32(blob, 8)?;
    let flags = be_u32(blob, 12)?;
    let ident_offset = be_u32(blob, 20)? as usize;
    let hash_type = *blob
        .get(37)
        .ok_or_else(|| SignatureError("CodeDirectory header is truncated".to_string()))?;
    let identifier = c_string(blob, ident_offset)?;
    let team_id = if version >= VERSION_TEAM_ID {
        match be_u32(blob, 48)? as usize {
            0 => None,
            offset => Some(c_string(blob, offset)?),
        }
    } else {
        None
    };
    Ok(CodeDirectory {
        identifier,
        team_id,
        flags,
        hash_type: hash_type_name(hash_type),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a SuperBlob with the given (slot, blob) pairs.
    fn superblob(blobs: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let header = 12 + blobs.len() * 8;
        let mut index = Vec::new();
        let mut body = Vec::new();
        for (slot, blob) in blobs {
            index.extend_from_slice(&slot.to_be_bytes());
            index.extend_from_slice(&((header + body.len()) as u32).to_be_bytes());
            body.extend_from_slice(blob);
        }
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC_EMBEDDED_SIGNATURE.to_be_bytes());
        out.extend_from_slice(&((header + body.len()) as u32).to_be_bytes());
        out.extend_from_slice(&(blobs.len() as u32).to_be_bytes());
        out.extend_from_slice(&index);
        out.extend_from_slice(&body);
        out
    }

    fn code_directory_blob(flags: u32, ident: &str, team: Option<&str>) -> Vec<u8> {
        let mut blob = vec![0u8; 88];
        blob[0..4].copy_from_slice(&MAGIC_CODEDIRECTORY.to_be_bytes());
        blob[8..12].copy_from_slice(&0x20400u32.to_be_bytes());
        blob[12..16].copy_from_slice(&flags.to_be_bytes());
        blob[20..24].copy_from_slice(&88u32.to_be_bytes());
        blob[37] = 2;
        blob.extend_from_slice(ident.as_bytes());
        blob.push(0);
        if let Some(team) = team {
            let at = blob.len() as u32;
            blob[48..52].copy_from_slice(&at.to_be_bytes());
            blob.extend_from_slice(team.as_bytes());
            blob.push(0);
        }
        let length = blob.len() as u32;
        blob[4..8].copy_from_slice(&length.to_be_bytes());
        blob
    }

    #[test]
    fn parses_directory_entitlements_and_cms() {
        let mut ents = MAGIC_ENTITLEMENTS.to_be_bytes().to_vec();
        let xml = b"<plist><dict/></plist>";
        ents.extend_from_slice(&((8 + xml.len()) as u32).to_be_bytes());
        ents.extend_from_slice(xml);
        let mut cms = MAGIC_BLOBWRAPPER.to_be_bytes().to_vec();
        cms.extend_from_slice(&12u32.to_be_bytes());
        cms.extend_from_slice(&[1, 2, 3, 4]);
        let data = superblob(&[
            (
                0,
                code_directory_blob(FLAG_RUNTIME, "com.example.tool", Some("ABCDE12345")),
            ),
            (5, ents),
            (SLOT_SIGNATURE, cms),
        ]);
        let info = parse(&data).expect("well-formed signature parses");
        assert_eq!(info.identifier.as_deref(), Some("com.example.tool"));
        assert_eq!(info.team_id.as_deref(), Some("ABCDE12345"));
        assert_eq!(info.flags, FLAG_RUNTIME);
        assert_eq!(info.hash_types, vec!["sha256".to_string()]);
        assert!(info.has_cms);
        assert_eq!(info.entitlements_xml.as_deref(), Some(&xml[..]));
    }

    #[test]
    fn hostile_signatures_are_errors() {
        assert!(parse(&[]).is_err());
        assert!(parse(&[0xfa, 0xde, 0x0c, 0xc0]).is_err());
        let mut huge_count = superblob(&[]);
        huge_count[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(&huge_count).is_err());
        let mut bad_offset = superblob(&[(0, code_directory_blob(0, "x", None))]);
        bad_offset[16..20].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        assert!(parse(&bad_offset).is_err());
        let mut directory = code_directory_blob(0, "x", None);
        directory[20..24].copy_from_slice(&0x7fff_0000u32.to_be_bytes());
        assert!(parse(&superblob(&[(0, directory)])).is_err());
        // Every truncation of a valid signature is an error or a parse, never a panic.
        let valid = superblob(&[(0, code_directory_blob(2, "id", Some("T")))]);
        for end in 0..valid.len() {
            let _ = parse(&valid[..end]);
        }
    }
}
