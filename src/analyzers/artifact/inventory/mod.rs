//! Builds an [`Inventory`]: walks the target, records every part, reads native images, plists and
//! asar archives, resolves library edges, derives findings and pages the occurrences.
//!
//! Occurrence ids depend on the manifest id, which depends on every part, so occurrences and
//! findings are first collected by content and only given ids once the manifest is sealed.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use super::bundle::{self, PlistFacts};
use super::ids::{self, sha256_hex};
use super::image::{self, Image, Signature};
use super::macho_sig::{FLAG_ADHOC, FLAG_LINKER_SIGNED, FLAG_RUNTIME};
use super::page;
use super::resolve::{self, MachoLoader, Tree};
use super::walk::{self, file_name, parent};
use super::{
    ArtifactError, Edge, EdgeKind, Finding, FindingRule, InspectOptions, Inventory, KindGap,
    Manifest, Occurrence, OccurrenceKind, OccurrenceSet, PROVIDER_ID, Part, PartKind,
    ProviderStamp, Resolution, Severity, TargetInfo, TargetKind,
};
use crate::analyzers::asar;
use crate::fsroot::{
    Bytes, Deadline, DeadlineExceeded, Directory, FsError, Opened, RegularFile, Roots,
};
use crate::vocabulary::{Architecture, Format};

mod electron;
mod linking;
mod signing;

/// Bytes read from a file too large to parse, enough to classify it.
const HEAD_BYTES: usize = 4096;

/// Occurrence kinds derived from a native image's load commands and signature.
const IMAGE_KINDS: [OccurrenceKind; 3] = [
    OccurrenceKind::CodeSignature,
    OccurrenceKind::Entitlement,
    OccurrenceKind::Library,
];

/// An edge without its architectures: `(from, kind, target, resolution, resolved, via)`.
type EdgeKey = (
    String,
    EdgeKind,
    String,
    Resolution,
    Option<String>,
    Option<String>,
);

/// Content key of an occurrence, used to cite it before ids exist.
type OccKey = (String, OccurrenceKind, Option<String>, String);

struct PendingFinding {
    rule: FindingRule,
    severity: Severity,
    part: String,
    message: String,
    cites: Vec<OccKey>,
}

/// Linking facts of one image, resolved once every file is known.
struct PendingImage {
    file: String,
    image_part: String,
    arch: Option<Architecture>,
    is_macho: bool,
    is_main_executable_type: bool,
    has_signature: bool,
    libraries: Vec<(EdgeKind, String)>,
    rpaths: Vec<String>,
}

struct AsarFacts {
    header_sha256: Option<String>,
    unpacked_entries: usize,
    unpacked_dir: bool,
}

/// The bytes of one file, or for a file too large to parse, its digest and first bytes.
enum Content {
    Full(Bytes),
    Large { sha256: String, head: Vec<u8> },
}

struct Builder<'o> {
    options: &'o InspectOptions,
    directory_target: bool,
    /// The target directory, held open, for directory targets: an asar's `.unpacked`
    /// directory is looked up beneath it.
    root: Option<Directory>,
    parts: Vec<Part>,
    part_paths: HashSet<String>,
    occurrences: Vec<OccKey>,
    findings: Vec<PendingFinding>,
    edges: Vec<Edge>,
    images: Vec<PendingImage>,
    plists: Vec<(String, PlistFacts)>,
    asars: BTreeMap<String, AsarFacts>,
    tree: Tree,
    gaps: Vec<KindGap>,
    reasons: BTreeSet<String>,
    limitations: BTreeSet<String>,
    manifest_complete: bool,
    total_size: u64,
}

/// Inspects a file or a directory (a `.app` bundle or any directory the caller admits) at
/// `target` as the system resolves it (no roots; the regular-file rules apply).
///
/// The result is reproducible: the same bytes give the same manifest id, whatever the target's
/// location or modification times.
pub fn inspect(target: &Path, options: &InspectOptions) -> Result<Inventory, ArtifactError> {
    let opened = Roots::none().open(target).map_err(|e| match e {
        FsError::NotRegular { .. } => ArtifactError::NotFileOrDirectory {
            path: target.to_path_buf(),
        },
        FsError::Io { source, .. } => ArtifactError::Unreadable {
            path: target.to_path_buf(),
            source,
        },
        FsError::NotFound { .. } => ArtifactError::Unreadable {
            path: target.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        },
        other => ArtifactError::File(other),
    })?;
    // The name as given (a symbolic link keeps its own name), else the resolved one for
    // paths such as `.`.
    let name = match target.file_name().or_else(|| opened.path().file_name()) {
        None => String::from("/"),
        Some(name) => name
            .to_str()
            .ok_or_else(|| ArtifactError::NonUtf8Name {
                path: target.to_path_buf(),
            })?
            .to_string(),
    };
    inspect_opened(&opened, &name, options, &Deadline::analysis())
}

/// Inspects an opened file or directory named `name` (the last component of the path it was
/// opened by). Every file is read through a descriptor: the target's own, or one opened beneath
/// the target directory with no link followed.
pub fn inspect_opened(
    target: &Opened,
    name: &str,
    options: &InspectOptions,
    deadline: &Deadline,
) -> Result<Inventory, ArtifactError> {
    let name = name.to_string();
    let mut options = options.clone();
    if options.page_size == 0 {
        options.page_size = InspectOptions::default().page_size;
    }
    match target {
        Opened::File(file) => {
            let size = file.len();
            let content = read_content(file, options.max_parse_bytes, deadline)?;
            let sha256 = match &content {
                Content::Full(bytes) => sha256_hex(bytes),
                Content::Large { sha256, .. } => sha256.clone(),
            };
            let mut builder = Builder::new(&options, None);
            builder.total_size = size;
            builder.add_file(&name, file, size, content);
            let info = TargetInfo {
                name,
                kind: TargetKind::File,
                sha256: Some(sha256),
                size,
            };
            builder.finish(info)
        }
        Opened::Dir(dir) => {
            let kind = if name.to_ascii_lowercase().ends_with(".app") {
                TargetKind::Bundle
            } else {
                TargetKind::Directory
            };
            let walked = walk::walk(dir, options.max_files, deadline)?;
            let mut builder = Builder::new(&options, Some(dir.clone()));
            if walked.truncated {
                builder.manifest_complete = false;
                builder.reasons.insert(format!(
                    "the walk stopped after {} files (max_files); later files are not in the manifest",
                    options.max_files
                ));
            }
            for problem in &walked.problems {
                builder.manifest_complete = false;
                builder.reasons.insert(problem.clone());
            }
            for entry in &walked.entries {
                builder.tree.insert(entry.rel.clone(), entry.link.clone());
            }
            for entry in walked.entries {
                if let Some(link) = entry.link {
                    builder.push_part(Part {
                        path: entry.rel,
                        kind: PartKind::Symlink,
                        size: entry.size,
                        sha256: Some(sha256_hex(link.as_bytes())),
                        architecture: None,
                        container: None,
                        address: None,
                        file_offset: None,
                        link_target: Some(link),
                    });
                    continue;
                }
                deadline.check(|| format!("the inventory of {}", dir.path().display()))?;
                builder.total_size = builder.total_size.saturating_add(entry.size);
                let read = dir
                    .open_file_nofollow(&entry.rel)
                    .map_err(ContentError::File)
                    .and_then(|file| {
                        let content = read_content(&file, options.max_parse_bytes, deadline)?;
                        Ok((file, content))
                    });
                match read {
                    Ok((file, content)) => builder.add_file(&entry.rel, &file, file.len(), content),
                    Err(ContentError::Stopped(d)) => return Err(ArtifactError::Stopped(d)),
                    Err(ContentError::File(e)) => {
                        builder.manifest_complete = false;
                        builder
                            .reasons
                            .insert(format!("cannot read {}: {e}", entry.rel));
                        builder.push_part(Part {
                            path: entry.rel,
                            kind: PartKind::Other,
                            size: entry.size,
                            sha256: None,
                            architecture: None,
                            container: None,
                            address: None,
                            file_offset: None,
                            link_target: None,
                        });
                    }
                }
            }
            let info = TargetInfo {
                name,
                kind,
                sha256: None,
                size: builder.total_size,
            };
            builder.finish(info)
        }
    }
}

/// Why a file's content could not be read.
enum ContentError {
    File(FsError),
    Stopped(DeadlineExceeded),
}

impl From<FsError> for ContentError {
    fn from(e: FsError) -> ContentError {
        match e {
            FsError::Stopped(d) => ContentError::Stopped(d),
            other => ContentError::File(other),
        }
    }
}

impl From<ContentError> for ArtifactError {
    fn from(e: ContentError) -> ArtifactError {
        match e {
            ContentError::File(e) => ArtifactError::File(e),
            ContentError::Stopped(d) => ArtifactError::Stopped(d),
        }
    }
}

/// A file's bytes, mapped, when it is small enough to parse; else its digest and head, read in
/// chunks. Either way exactly the size it had when opened.
fn read_content(
    file: &RegularFile,
    max_parse_bytes: u64,
    deadline: &Deadline,
) -> Result<Content, ContentError> {
    if file.len() <= max_parse_bytes {
        return Ok(Content::Full(file.bytes(0, file.len())?));
    }
    let digest = file.digest(HEAD_BYTES, deadline)?;
    Ok(Content::Large {
        sha256: digest.sha256,
        head: digest.head,
    })
}

fn bool_text(flag: bool) -> String {
    flag.to_string()
}

impl<'o> Builder<'o> {
    fn new(options: &'o InspectOptions, root: Option<Directory>) -> Builder<'o> {
        Builder {
            options,
            directory_target: root.is_some(),
            root,
            parts: Vec::new(),
            part_paths: HashSet::new(),
            occurrences: Vec::new(),
            findings: Vec::new(),
            edges: Vec::new(),
            images: Vec::new(),
            plists: Vec::new(),
            asars: BTreeMap::new(),
            tree: Tree::default(),
            gaps: Vec::new(),
            reasons: BTreeSet::new(),
            limitations: BTreeSet::new(),
            manifest_complete: true,
            total_size: 0,
        }
    }

    /// Returns `path`, or `path~2`, `path~3`, … when it is taken (duplicate section names).
    fn unique_path(&self, path: String) -> String {
        if !self.part_paths.contains(&path) {
            return path;
        }
        (2u32..)
            .map(|n| format!("{path}~{n}"))
            .find(|candidate| !self.part_paths.contains(candidate))
            .unwrap_or(path)
    }

    fn push_part(&mut self, part: Part) {
        self.part_paths.insert(part.path.clone());
        self.parts.push(part);
    }

    fn occ(&mut self, part: &str, kind: OccurrenceKind, key: Option<&str>, value: &str) -> OccKey {
        let occ = (
            part.to_string(),
            kind,
            key.filter(|k| !k.is_empty()).map(str::to_string),
            value.to_string(),
        );
        self.occurrences.push(occ.clone());
        occ
    }

    fn finding(
        &mut self,
        rule: FindingRule,
        severity: Severity,
        part: &str,
        message: String,
        cites: Vec<OccKey>,
    ) {
        self.findings.push(PendingFinding {
            rule,
            severity,
            part: part.to_string(),
            message,
            cites,
        });
    }

    fn gap(&mut self, kind: OccurrenceKind, part: &str, reason: String) {
        self.gaps.push(KindGap {
            kind,
            part: Some(part.to_string()),
            reason,
        });
    }

    fn add_file(&mut self, rel: &str, file: &RegularFile, size: u64, content: Content) {
        let (bytes, sha256) = match content {
            Content::Full(bytes) => {
                let sha = sha256_hex(&bytes);
                (bytes, sha)
            }
            Content::Large { sha256, head } => {
                let kind = walk::classify(rel, &head, image::sniff(&head, size));
                self.reasons.insert(format!(
                    "{rel} ({size} bytes) is larger than max_parse_bytes and was hashed but not parsed"
                ));
                self.push_part(Part {
                    path: rel.to_string(),
                    kind,
                    size,
                    sha256: Some(sha256),
                    architecture: None,
                    container: None,
                    address: None,
                    file_offset: None,
                    link_target: None,
                });
                return;
            }
        };
        let head = &bytes[..bytes.len().min(HEAD_BYTES)];
        let sniffed = image::sniff(head, bytes.len() as u64);
        let mut kind = walk::classify(rel, head, sniffed);
        let with_regions = !self.directory_target;
        let images = if sniffed == Format::Raw {
            None
        } else {
            image::analyze(&bytes, with_regions)
        };
        let Some(images) = images else {
            self.push_part(Part {
                path: rel.to_string(),
                kind,
                size,
                sha256: Some(sha256),
                architecture: None,
                container: None,
                address: None,
                file_offset: None,
                link_target: None,
            });
            self.add_data_file(rel, file, kind, &bytes);
            return;
        };
        let thin_arch = if images.universal {
            None
        } else {
            images.images.first().map(|image| image.arch)
        };
        if let (false, Some(first)) = (images.universal, images.images.first())
            && kind == PartKind::MachoOther
        {
            kind = first.kind;
        }
        self.push_part(Part {
            path: rel.to_string(),
            kind,
            size,
            sha256: Some(sha256),
            architecture: thin_arch,
            container: None,
            address: None,
            file_offset: None,
            link_target: None,
        });
        for error in &images.errors {
            self.reasons.insert(format!("{rel}: {error}"));
        }
        if kind == PartKind::FrameworkBinary && file_name(rel) == "Electron Framework" {
            self.occ(
                rel,
                OccurrenceKind::Electron,
                Some("framework"),
                "Electron Framework",
            );
        }
        for image in &images.images {
            let image_part = match image.slice {
                Some((offset, slice_size)) => {
                    // The name open_binary gives the slice's document, so a part, a document
                    // and a claim about either are spelled one way.
                    let mut path = format!("{rel} ({})", image.arch);
                    let mut copy = 2;
                    while self.part_paths.contains(&path) {
                        path = format!("{rel} ({} #{copy})", image.arch);
                        copy += 1;
                    }
                    let digest = usize::try_from(offset)
                        .ok()
                        .zip(usize::try_from(slice_size).ok())
                        .and_then(|(start, len)| bytes.get(start..start.checked_add(len)?))
                        .map(sha256_hex);
                    self.push_part(Part {
                        path: path.clone(),
                        kind: image.kind,
                        size: slice_size,
                        sha256: digest,
                        architecture: Some(image.arch),
                        container: Some(rel.to_string()),
                        address: None,
                        file_offset: Some(offset),
                        link_target: None,
                    });
                    path
                }
                None => rel.to_string(),
            };
            for region in &image.regions {
                let path = self.unique_path(format!("{image_part}/{}", region.name));
                self.push_part(Part {
                    path,
                    kind: region.kind,
                    size: region.size,
                    sha256: region.sha256.clone(),
                    architecture: Some(image.arch),
                    container: Some(image_part.clone()),
                    address: Some(format!("0x{:x}", region.address)),
                    file_offset: region.file_offset,
                    link_target: None,
                });
            }
            self.add_image_facts(rel, &image_part, image, images.universal);
        }
    }

    /// Plists and asar archives.
    fn add_data_file(&mut self, rel: &str, file: &RegularFile, kind: PartKind, bytes: &[u8]) {
        match kind {
            PartKind::Plist | PartKind::BinaryPlist if file_name(rel) == "Info.plist" => {
                match bundle::info_plist_facts(bytes) {
                    Ok(facts) => {
                        self.add_plist_facts(rel, &facts);
                        self.plists.push((rel.to_string(), facts));
                    }
                    Err(e) => {
                        self.limitations
                            .insert(format!("{rel} could not be read as a property list: {e}"));
                        self.gap(
                            OccurrenceKind::InfoPlist,
                            rel,
                            format!("{rel} could not be read as a property list: {e}"),
                        );
                    }
                }
            }
            PartKind::Asar => self.add_asar(rel, file),
            _ => {}
        }
    }

    fn add_plist_facts(&mut self, rel: &str, facts: &PlistFacts) {
        for (key, value) in &facts.entries {
            let occ = self.occ(rel, OccurrenceKind::InfoPlist, Some(key), value);
            if key == "NSAppTransportSecurity.NSAllowsArbitraryLoads" && value == "true" {
                self.finding(
                    FindingRule::AtsArbitraryLoads,
                    Severity::Medium,
                    rel,
                    format!(
                        "{rel} sets NSAllowsArbitraryLoads: App Transport Security allows plain-HTTP and weak-TLS connections"
                    ),
                    vec![occ],
                );
            }
        }
    }

    fn add_image_facts(&mut self, file: &str, part: &str, image: &Image, universal: bool) {
        for error in &image.errors {
            let reason = format!("{part}: {error}");
            self.limitations.insert(reason.clone());
            for kind in IMAGE_KINDS
                .into_iter()
                .chain([OccurrenceKind::ExportedSymbol])
            {
                self.gap(kind, part, reason.clone());
            }
        }
        if image.is_macho {
            self.add_signature_facts(part, image);
        }
        self.add_capped(
            part,
            OccurrenceKind::Url,
            &image.urls,
            self.options.max_urls_per_part,
        );
        let hosts: BTreeSet<String> = image
            .urls
            .iter()
            .filter_map(|u| image::url_host(u))
            .collect();
        let hosts: Vec<String> = hosts.into_iter().collect();
        self.add_capped(
            part,
            OccurrenceKind::Hostname,
            &hosts,
            self.options.max_urls_per_part,
        );
        self.add_capped(
            part,
            OccurrenceKind::ExportedSymbol,
            &image.exports,
            self.options.max_symbols_per_part,
        );
        if let Some(wire) = &image.fuse_wire {
            self.occ(
                part,
                OccurrenceKind::ElectronFuse,
                Some("wire-version"),
                &wire.version.to_string(),
            );
            for (index, byte) in wire.fuses.iter().enumerate() {
                let name = bundle::fuse_name(index);
                let state = bundle::fuse_state(*byte);
                let occ = self.occ(part, OccurrenceKind::ElectronFuse, Some(&name), &state);
                if let Some((severity, why)) = bundle::insecure_fuse(&name, &state) {
                    self.finding(
                        FindingRule::InsecureElectronFuse,
                        severity,
                        part,
                        format!("Electron fuse {name} is {state} in {part}: {why}"),
                        vec![occ],
                    );
                }
            }
        }
        self.limitations.insert(String::from(
            "URLs are searched in ASCII strings of executable images only; UTF-16 strings and compressed data are not read",
        ));
        if image.kind == PartKind::Pe {
            self.limitations
                .insert(String::from("PE Authenticode signatures are not examined"));
        }
        self.images.push(PendingImage {
            file: file.to_string(),
            image_part: part.to_string(),
            arch: universal.then_some(image.arch),
            is_macho: image.is_macho,
            is_main_executable_type: image.is_main_executable_type,
            has_signature: matches!(
                image.signature,
                Signature::Present(_) | Signature::Malformed(_)
            ),
            libraries: image.libraries.clone(),
            rpaths: image.rpaths.clone(),
        });
    }

    /// Records the first `cap` values (already sorted) and a gap when more exist.
    fn add_capped(&mut self, part: &str, kind: OccurrenceKind, values: &[String], cap: usize) {
        for value in values.iter().take(cap) {
            self.occ(part, kind, None, value);
        }
        if values.len() > cap {
            self.gap(
                kind,
                part,
                format!(
                    "{part}: {} {} values found, only the first {cap} (sorted) are kept",
                    values.len(),
                    kind.as_str()
                ),
            );
        }
    }

    fn finish(mut self, target: TargetInfo) -> Result<Inventory, ArtifactError> {
        self.parts.sort_by(|a, b| a.path.cmp(&b.path));
        let manifest_id = ids::manifest_id(&target, self.manifest_complete, &self.parts)
            .map_err(|reason| ArtifactError::Canonical { reason })?;
        self.link();
        self.edges.sort_by(|a, b| {
            (
                &a.from,
                a.kind,
                &a.target,
                a.resolution,
                &a.resolved,
                &a.via,
            )
                .cmp(&(
                    &b.from,
                    b.kind,
                    &b.target,
                    b.resolution,
                    &b.resolved,
                    &b.via,
                ))
        });
        self.edges.dedup();

        let unique: BTreeSet<OccKey> = self.occurrences.drain(..).collect();
        let occurrences: Vec<Occurrence> = unique
            .into_iter()
            .map(|(part, kind, key, value)| Occurrence {
                id: ids::occurrence_id(&manifest_id, &part, kind, key.as_deref(), &value),
                part,
                kind,
                key,
                value,
            })
            .collect();
        let id_of = |key: &OccKey| {
            ids::occurrence_id(&manifest_id, &key.0, key.1, key.2.as_deref(), &key.3)
        };
        let known: HashSet<&super::OccurrenceId> = occurrences.iter().map(|o| &o.id).collect();
        let mut findings: Vec<Finding> = self
            .findings
            .iter()
            .map(|pending| Finding {
                rule: pending.rule,
                severity: pending.severity,
                part: pending.part.clone(),
                message: pending.message.clone(),
                occurrence_ids: pending
                    .cites
                    .iter()
                    .map(id_of)
                    .filter(|id| known.contains(id))
                    .collect(),
            })
            .collect();
        findings.sort_by(|a, b| (a.rule, &a.part, &a.message).cmp(&(b.rule, &b.part, &b.message)));
        findings.dedup();

        if !self.manifest_complete {
            self.reasons.insert(String::from(
                "the manifest is incomplete, so parts may be missing",
            ));
        }
        self.gaps
            .sort_by(|a, b| (a.kind, &a.part, &a.reason).cmp(&(b.kind, &b.part, &b.reason)));
        self.gaps.dedup();
        let complete = self.gaps.is_empty() && self.reasons.is_empty();
        let total = occurrences.len() as u64;
        let pages = page::paginate(&manifest_id, occurrences, self.options.page_size, complete);
        let occurrence_set = OccurrenceSet {
            complete,
            total,
            pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
            page_size: u32::try_from(self.options.page_size).unwrap_or(u32::MAX),
            incomplete_kinds: self.gaps,
            reasons: self.reasons.into_iter().collect(),
        };
        for gap in &occurrence_set.incomplete_kinds {
            self.limitations.insert(gap.reason.clone());
        }
        Ok(Inventory {
            provider: ProviderStamp {
                id: PROVIDER_ID.to_string(),
                version: self.options.provider_version.clone(),
            },
            manifest: Manifest {
                id: manifest_id,
                target,
                complete: self.manifest_complete,
                parts: self.parts,
            },
            edges: self.edges,
            findings,
            occurrence_set,
            pages,
            limitations: self.limitations.into_iter().collect(),
        })
    }
}

/// Builds an inventory whose only part, `image`, carries the given XML entitlements, so the
/// entitlement rules can be tested without a signed fixture that has any.
#[cfg(test)]
pub(crate) fn entitlement_inventory_for_tests(xml: &[u8], options: &InspectOptions) -> Inventory {
    let mut builder = Builder::new(options, None);
    builder.push_part(Part {
        path: String::from("image"),
        kind: PartKind::MachoExecutable,
        size: 0,
        sha256: None,
        architecture: None,
        container: None,
        address: None,
        file_offset: None,
        link_target: None,
    });
    builder.add_entitlements("image", xml);
    let target = TargetInfo {
        name: String::from("image"),
        kind: TargetKind::File,
        sha256: None,
        size: 0,
    };
    match builder.finish(target) {
        Ok(inventory) => inventory,
        Err(e) => panic!("test inventory: {e}"),
    }
}
