//! A native image's code signature and entitlements as occurrences, and the findings they give
//! (unsigned or ad-hoc code, entitlements that switch off a protection).

use super::*;

/// Entitlements that switch off a hardened-runtime or debugging protection, with how much each
/// one weakens the process.
const PROTECTION_ENTITLEMENTS: [(&str, Severity, &str); 6] = [
    (
        "com.apple.security.cs.disable-library-validation",
        Severity::Medium,
        "lets the process load libraries signed by anyone",
    ),
    (
        "com.apple.security.cs.allow-unsigned-executable-memory",
        Severity::Medium,
        "lets the process create writable and executable memory without restriction",
    ),
    (
        "com.apple.security.cs.allow-dyld-environment-variables",
        Severity::High,
        "lets DYLD_* environment variables inject libraries into the process",
    ),
    (
        "com.apple.security.cs.allow-jit",
        Severity::Low,
        "lets the process map memory for just-in-time compiled code",
    ),
    (
        "com.apple.security.get-task-allow",
        Severity::Medium,
        "lets other processes attach a debugger to the process",
    ),
    (
        "com.apple.security.cs.disable-executable-page-protection",
        Severity::High,
        "turns off code-signing protection of executable pages entirely",
    ),
];

impl Builder<'_> {
    pub(super) fn add_signature_facts(&mut self, part: &str, image: &Image) {
        let kind = OccurrenceKind::CodeSignature;
        match &image.signature {
            Signature::NotApplicable => {}
            Signature::Absent => {
                let occ = self.occ(part, kind, Some("signed"), "false");
                self.finding(
                    FindingRule::UnsignedCode,
                    Severity::Medium,
                    part,
                    format!(
                        "{part} ({}) has no embedded code signature, so nothing vouches for its origin or integrity",
                        image.arch
                    ),
                    vec![occ],
                );
            }
            Signature::Malformed(reason) => {
                let signed = self.occ(part, kind, Some("signed"), "malformed");
                let detail = self.occ(part, kind, Some("malformed"), reason);
                self.finding(
                    FindingRule::UnsignedCode,
                    Severity::Medium,
                    part,
                    format!(
                        "{part} ({}) has a malformed code signature: {reason}",
                        image.arch
                    ),
                    vec![signed, detail],
                );
            }
            Signature::Present(info) => {
                self.occ(part, kind, Some("signed"), "true");
                if let Some(identifier) = &info.identifier {
                    self.occ(part, kind, Some("identifier"), identifier);
                }
                if let Some(team) = &info.team_id {
                    self.occ(part, kind, Some("team-id"), team);
                }
                self.occ(part, kind, Some("flags"), &format!("0x{:08x}", info.flags));
                self.occ(
                    part,
                    kind,
                    Some("hardened-runtime"),
                    &bool_text(info.flags & FLAG_RUNTIME != 0),
                );
                let adhoc = info.flags & FLAG_ADHOC != 0;
                let adhoc_occ = self.occ(part, kind, Some("adhoc"), &bool_text(adhoc));
                self.occ(
                    part,
                    kind,
                    Some("linker-signed"),
                    &bool_text(info.flags & FLAG_LINKER_SIGNED != 0),
                );
                if !info.hash_types.is_empty() {
                    self.occ(part, kind, Some("hash-type"), &info.hash_types.join(","));
                }
                self.occ(part, kind, Some("cms-signature"), &bool_text(info.has_cms));
                if info.has_der_entitlements {
                    self.occ(part, kind, Some("der-entitlements"), "true");
                    self.limitations.insert(String::from(
                        "DER-encoded entitlements are not decoded; the XML entitlements blob is reported",
                    ));
                }
                if adhoc {
                    self.finding(
                        FindingRule::AdhocSignature,
                        Severity::Low,
                        part,
                        format!(
                            "{part} ({}) is signed ad hoc: the signature seals its contents but names no signer",
                            image.arch
                        ),
                        vec![adhoc_occ],
                    );
                }
                if let Some(xml) = &info.entitlements_xml {
                    self.add_entitlements(part, xml);
                }
            }
        }
    }

    pub(super) fn add_entitlements(&mut self, part: &str, xml: &[u8]) {
        let parsed = plist::Value::from_reader_xml(std::io::Cursor::new(xml));
        let dict = match parsed {
            Ok(plist::Value::Dictionary(dict)) => dict,
            Ok(_) => {
                self.gap(
                    OccurrenceKind::Entitlement,
                    part,
                    format!("{part}: entitlements are not a dictionary"),
                );
                return;
            }
            Err(e) => {
                self.gap(
                    OccurrenceKind::Entitlement,
                    part,
                    format!("{part}: entitlements could not be parsed: {e}"),
                );
                return;
            }
        };
        self.occ(
            part,
            OccurrenceKind::CodeSignature,
            Some("entitlements"),
            &dict.len().to_string(),
        );
        for (key, value) in &dict {
            let text = bundle::render(value);
            let occ = self.occ(part, OccurrenceKind::Entitlement, Some(key), &text);
            let protection = PROTECTION_ENTITLEMENTS
                .iter()
                .find(|(name, _, _)| name == key);
            if let (Some((_, severity, why)), true) = (protection, text == "true") {
                self.finding(
                    FindingRule::ProtectionDisablingEntitlement,
                    *severity,
                    part,
                    format!("{part} is entitled to {key}, which {why}"),
                    vec![occ],
                );
            }
        }
    }
}
