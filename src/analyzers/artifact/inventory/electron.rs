//! An app's asar archive: its header read beside the unpacked folder, and the integrity hash its
//! Info.plist records checked against it.

use super::*;

impl Builder<'_> {
    pub(super) fn add_asar(&mut self, rel: &str, file: &RegularFile) {
        // Beside the archive in the target (no link followed), or beside a single-file target.
        let unpacked = match &self.root {
            Some(root) => root.open_dir_nofollow(format!("{rel}.unpacked")).ok(),
            None => file.sibling_dir(".unpacked").ok(),
        };
        let unpacked_dir = unpacked.is_some();
        if file_name(rel) == "app.asar" {
            self.occ(rel, OccurrenceKind::Electron, Some("app-asar"), "present");
        }
        let abs = file.path();
        match asar::Archive::from_file(file.clone(), unpacked) {
            Ok(archive) => {
                let sha = archive.header_sha256();
                self.occ(
                    rel,
                    OccurrenceKind::Electron,
                    Some("asar-header-sha256"),
                    &sha,
                );
                let entries = archive.entries();
                let unpacked_entries = entries.iter().filter(|e| e.unpacked).count();
                self.occ(
                    rel,
                    OccurrenceKind::Electron,
                    Some("asar-entries"),
                    &entries.len().to_string(),
                );
                self.occ(
                    rel,
                    OccurrenceKind::Electron,
                    Some("asar-unpacked-entries"),
                    &unpacked_entries.to_string(),
                );
                self.asars.insert(
                    rel.to_string(),
                    AsarFacts {
                        header_sha256: Some(sha),
                        unpacked_entries,
                        unpacked_dir,
                    },
                );
            }
            Err(e) => {
                // The reader names the archive by its absolute path; the inventory must not
                // depend on where the target is stored.
                let message = e.to_string().replace(abs.to_string_lossy().as_ref(), rel);
                self.occ(
                    rel,
                    OccurrenceKind::Electron,
                    Some("asar-unreadable"),
                    &message,
                );
                self.limitations.insert(format!(
                    "{rel} could not be read as an asar archive: {message}"
                ));
                self.asars.insert(
                    rel.to_string(),
                    AsarFacts {
                        header_sha256: None,
                        unpacked_entries: 0,
                        unpacked_dir,
                    },
                );
            }
        }
    }

    pub(super) fn check_asar_integrity(
        &mut self,
        plist: &str,
        content_dir: &str,
        integrity: &bundle::AsarIntegrity,
    ) {
        let key_hash = format!("ElectronAsarIntegrity.{}.hash", integrity.archive);
        let archive = resolve::join(content_dir, &integrity.archive).unwrap_or_default();
        let electron = OccurrenceKind::Electron;
        let Some(facts) = self.asars.get(&archive) else {
            self.occ(
                plist,
                electron,
                Some("asar-integrity"),
                &format!("missing-archive:{archive}"),
            );
            return;
        };
        let Some(header) = facts.header_sha256.clone() else {
            self.occ(
                &archive,
                electron,
                Some("asar-integrity"),
                "unreadable-archive",
            );
            return;
        };
        let algorithm_ok = integrity
            .algorithm
            .as_deref()
            .is_some_and(|a| a.eq_ignore_ascii_case("SHA256"));
        let Some(hash) = integrity.hash.as_deref().filter(|_| algorithm_ok) else {
            self.occ(
                &archive,
                electron,
                Some("asar-integrity"),
                "unsupported-algorithm",
            );
            return;
        };
        if hash.eq_ignore_ascii_case(&header) {
            self.occ(&archive, electron, Some("asar-integrity"), "match");
            return;
        }
        let status = self.occ(&archive, electron, Some("asar-integrity"), "mismatch");
        let recorded = (
            plist.to_string(),
            OccurrenceKind::InfoPlist,
            Some(key_hash),
            hash.to_string(),
        );
        let actual = (
            archive.clone(),
            electron,
            Some("asar-header-sha256".to_string()),
            header.clone(),
        );
        self.finding(
            FindingRule::AsarIntegrityMismatch,
            Severity::High,
            &archive,
            format!(
                "{plist} records SHA-256 {hash} for {archive}, but the archive's header hashes to {header}: the archive was changed after the app was built, or the record is stale"
            ),
            vec![recorded, actual, status],
        );
    }
}
