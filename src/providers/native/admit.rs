//! Admission: turns an opened path into a [`Target`] (file or `.app` bundle) with its documents.
//!
//! Everything is read through descriptors: the target as opened beneath the allowed roots, and
//! the files of a bundle opened beneath the bundle with no link followed (links are not part of
//! a bundle's digest), so nothing outside the target is read and nothing read can be swapped.
//! Sizes are checked before anything is hashed.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::format::{self, FatSlice, HEAD_LEN};
use super::types::{AdmitError, BundleInfo, DocumentSource, DocumentSpec, Target};
use crate::fsroot::{Deadline, Directory, EntryKind, Opened, RegularFile, Roots};
use crate::vocabulary::{Architecture, DocumentRole, Format};

/// Bundles with more files than this are refused: inventorying them would take minutes and the
/// digest would be meaningless to a person anyway.
const MAX_BUNDLE_FILES: usize = 500_000;

/// Directory nesting deeper than this inside a bundle is not walked (a crafted tree, not an app).
const MAX_BUNDLE_DEPTH: usize = 64;

/// Files larger than this are refused before they are hashed: the native reader loads documents
/// up to this size, and hashing a 100 GB sparse file took 78 s only to be refused afterwards.
pub(crate) const MAX_FILE_BYTES: u64 = 4 << 30;

/// The most bytes hashed for one bundle (its digest covers every file).
const MAX_BUNDLE_BYTES: u64 = 16 << 30;

/// Images of one bundle whose files stay open for the life of the target; the others are
/// reopened beneath the bundle and checked against the device and inode admitted.
const MAX_KEPT_DOCUMENTS: usize = 256;

/// An `Info.plist` larger than this is not read.
const MAX_INFO_PLIST_BYTES: u64 = 16 << 20;

/// Admits a file of any format, or a macOS `.app` bundle directory, at `path` as the system
/// resolves it (no roots; the regular-file rules apply). Tools admit what
/// [`Roots::open`] opened, with [`admit_opened`].
pub fn admit(path: &Path) -> Result<Target, AdmitError> {
    admit_opened(&Roots::none().open(path)?)
}

/// The documents of the file or `.app` bundle at `path`, for a listing that names no subject
/// (`rea procedures`): a single file is sniffed from its head and not hashed, so listing its
/// procedures reads it once, when they are parsed from its mapping; a bundle is admitted whole.
pub fn documents_of(path: &Path) -> Result<Vec<DocumentSpec>, AdmitError> {
    Ok(match admit_unhashed(&Roots::none().open(path)?)? {
        Admitted::Hashed(target) => target.documents,
        Admitted::Unhashed(unhashed) => unhashed.target.documents,
    })
}

/// Admits an opened file or `.app` bundle directory; refuses other directories. The target keeps
/// the descriptor, and every later read goes through it.
pub fn admit_opened(opened: &Opened) -> Result<Target, AdmitError> {
    admit_with(opened, &Deadline::analysis())
}

/// [`admit_opened`] with an explicit deadline.
pub fn admit_with(opened: &Opened, deadline: &Deadline) -> Result<Target, AdmitError> {
    match opened {
        Opened::Dir(dir) => {
            if is_app_bundle(dir) {
                return admit_bundle(opened, dir, deadline);
            }
            // Which analysis applies instead is the investigation layer's to say: reading binaries
            // knows nothing of the analyses above it.
            Err(AdmitError::UnsupportedDirectory {
                path: dir.path().to_path_buf(),
                suggestion: None,
            })
        }
        Opened::File(file) => admit_file(opened, file, deadline),
    }
}

fn is_app_bundle(dir: &Directory) -> bool {
    let named_app = dir
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".app"))
        .unwrap_or(false);
    named_app && dir.is_dir("Contents")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

fn check_size(file: &RegularFile) -> Result<u64, AdmitError> {
    let len = file.len();
    if len > MAX_FILE_BYTES {
        return Err(AdmitError::TooLarge {
            path: file.path().to_path_buf(),
            size: len,
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(len)
}

fn admit_file(
    opened: &Opened,
    file: &RegularFile,
    deadline: &Deadline,
) -> Result<Target, AdmitError> {
    check_size(file)?;
    let digest = file.digest(HEAD_LEN, deadline)?;
    file_target(opened, file, &digest.head, digest.sha256)
}

/// The target of one file whose first bytes are `head`.
fn file_target(
    opened: &Opened,
    file: &RegularFile,
    head: &[u8],
    sha256: String,
) -> Result<Target, AdmitError> {
    let path = file.path();
    let name = file_name(path);
    let kind = format::sniff(head, file.len());
    let source = DocumentSource::Kept(file.clone());
    let documents = file_documents(&source, file, &name, head, kind, DocumentRole::File)?;
    let architecture = match kind {
        Format::MachOUniversal => combined_architecture(&documents),
        _ => format::thin_architecture(kind, head),
    };
    Ok(Target {
        path: path.to_path_buf(),
        name,
        sha256,
        format: kind,
        architecture,
        documents,
        bundle: None,
        opened: Some(opened.clone()),
    })
}

/// A target admitted by [`admit_unhashed`].
pub enum Admitted {
    /// A bundle: hashed already (its hash is over every file in it).
    Hashed(Target),
    /// A single file whose SHA-256 is still to be taken, by [`Unhashed::hasher`].
    Unhashed(Unhashed),
}

/// A file admitted from its first bytes, its SHA-256 not yet taken: `open_binary` hashes it on
/// one core while it lists the procedures on the other.
pub struct Unhashed {
    target: Target,
    file: RegularFile,
    head: Vec<u8>,
}

/// Takes an [`Unhashed`] file's SHA-256 (on any thread).
pub struct Hasher {
    file: RegularFile,
    head: Vec<u8>,
}

impl Unhashed {
    /// The target as admitted; its `sha256` is empty until [`Unhashed::finish`].
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// What takes the file's SHA-256.
    pub fn hasher(&self) -> Hasher {
        Hasher {
            file: self.file.clone(),
            head: self.head.clone(),
        }
    }

    /// The target with the SHA-256 [`Hasher::digest`] took.
    pub fn finish(self, sha256: String) -> Target {
        Target {
            sha256,
            ..self.target
        }
    }
}

impl Hasher {
    /// The file's SHA-256 (as [`admit_opened`] takes it), refused when the file no longer starts
    /// with the bytes it was admitted from.
    pub fn digest(&self) -> Result<String, AdmitError> {
        Ok(self
            .file
            .digest_expecting(&self.head, &Deadline::analysis())?)
    }
}

/// [`admit_opened`], except that a single file is admitted from its first bytes and hashed
/// later, by the caller ([`Unhashed::hasher`]); a bundle is admitted whole.
pub fn admit_unhashed(opened: &Opened) -> Result<Admitted, AdmitError> {
    let Opened::File(file) = opened else {
        return admit_opened(opened).map(Admitted::Hashed);
    };
    check_size(file)?;
    let head = file
        .read_head(0, HEAD_LEN)
        .map_err(|source| AdmitError::Io {
            path: file.path().to_path_buf(),
            source,
        })?;
    let target = file_target(opened, file, &head, String::new())?;
    Ok(Admitted::Unhashed(Unhashed {
        target,
        file: file.clone(),
        head,
    }))
}

/// The documents of one file: one per universal slice, or the file itself.
fn file_documents(
    source: &DocumentSource,
    file: &RegularFile,
    name: &str,
    head: &[u8],
    kind: Format,
    role: DocumentRole,
) -> Result<Vec<DocumentSpec>, AdmitError> {
    let len = file.len();
    if kind != Format::MachOUniversal {
        return Ok(vec![DocumentSpec {
            name: name.to_string(),
            file: file.path().to_path_buf(),
            offset: 0,
            size: len,
            format: kind,
            architecture: format::thin_architecture(kind, head),
            role,
            source: Some(source.clone()),
        }]);
    }
    let slices = format::fat_slices(head, len).unwrap_or_default();
    let slice_role = if role == DocumentRole::File {
        DocumentRole::Slice
    } else {
        role
    };
    let mut documents: Vec<DocumentSpec> = Vec::with_capacity(slices.len());
    for FatSlice {
        offset,
        size,
        cputype,
        cpusubtype,
    } in slices
    {
        let slice_head = file
            .read_head(offset, 64)
            .map_err(|source| AdmitError::Io {
                path: file.path().to_path_buf(),
                source,
            })?;
        let slice_kind = match format::sniff(&slice_head, size) {
            Format::MachO => Format::MachO,
            _ => Format::Raw,
        };
        let architecture = format::macho_cpu_name(cputype, cpusubtype);
        let mut doc_name = format!("{name} ({architecture})");
        let mut copy = 2;
        while documents.iter().any(|d| d.name == doc_name) {
            doc_name = format!("{name} ({architecture} #{copy})");
            copy += 1;
        }
        documents.push(DocumentSpec {
            name: doc_name,
            file: file.path().to_path_buf(),
            offset,
            size,
            format: slice_kind,
            architecture,
            role: slice_role,
            source: Some(source.clone()),
        });
    }
    documents.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(documents)
}

/// One architecture when all documents agree, `multi` when they differ, `unknown` when empty.
fn combined_architecture(documents: &[DocumentSpec]) -> Architecture {
    let mut archs: Vec<Architecture> = documents.iter().map(|d| d.architecture).collect();
    archs.sort_unstable();
    archs.dedup();
    match archs.as_slice() {
        [] => Architecture::Unknown,
        [one] => *one,
        _ => Architecture::Multi,
    }
}

/// Reads `Contents/Info.plist` beneath the bundle: a link is followed only while it stays inside
/// the bundle, and only a regular file is read (a FIFO there hung admission).
fn read_info_plist(bundle: &Directory) -> BundleInfo {
    let rel = "Contents/Info.plist";
    let bytes = match bundle
        .open_file(rel)
        .and_then(|f| f.read_all(MAX_INFO_PLIST_BYTES))
    {
        Ok(bytes) => bytes,
        Err(e) => {
            return BundleInfo {
                info_plist_error: Some(e.to_string()),
                ..BundleInfo::default()
            };
        }
    };
    let value = match plist::Value::from_reader(std::io::Cursor::new(bytes)) {
        Ok(value) => value,
        Err(e) => {
            return BundleInfo {
                info_plist_error: Some(format!("{}: {e}", bundle.path().join(rel).display())),
                ..BundleInfo::default()
            };
        }
    };
    let Some(dict) = value.as_dictionary() else {
        return BundleInfo {
            info_plist_error: Some("Info.plist is not a dictionary".to_string()),
            ..BundleInfo::default()
        };
    };
    let text = |key: &str| {
        dict.get(key)
            .and_then(|v| v.as_string())
            .map(str::to_string)
    };
    BundleInfo {
        executable: text("CFBundleExecutable"),
        identifier: text("CFBundleIdentifier"),
        short_version: text("CFBundleShortVersionString"),
        version: text("CFBundleVersion"),
        bundle_name: text("CFBundleName"),
        main_executable: None,
        info_plist_error: None,
    }
}

/// Whether a file head is a Mach-O image worth analyzing: an executable, dylib or bundle, or a
/// universal file (object files and archives are build leftovers, not shipped code).
fn is_executable_image(head: &[u8], len: u64) -> bool {
    match format::sniff(head, len) {
        Format::MachO => matches!(format::macho_filetype(head), Some(2 | 6 | 8)),
        Format::MachOUniversal => true,
        _ => false,
    }
}

/// The role of an image inside a bundle, from where it sits.
fn bundle_role(rel: &str, main: Option<&str>) -> DocumentRole {
    if Some(rel) == main {
        return DocumentRole::MainExecutable;
    }
    let inner = rel.strip_prefix("Contents/").unwrap_or(rel);
    if inner.contains(".app/Contents/MacOS/") || inner.starts_with("Helpers/") {
        DocumentRole::Helper
    } else if inner.starts_with("XPCServices/") || inner.contains(".xpc/") {
        DocumentRole::XpcService
    } else if inner.starts_with("PlugIns/") || inner.contains(".appex/") {
        DocumentRole::PlugIn
    } else if inner.starts_with("Frameworks/") && inner.contains(".framework/") {
        DocumentRole::Framework
    } else if inner.ends_with(".node") {
        DocumentRole::NativeModule
    } else if inner.starts_with("Frameworks/") || inner.ends_with(".dylib") {
        DocumentRole::Library
    } else {
        DocumentRole::Image
    }
}

/// Walks the bundle (no link followed; directories reopened beneath the bundle by their relative
/// path, so only the directories on the way are open), hashing every regular file and keeping
/// the executable images as documents.
fn admit_bundle(
    opened: &Opened,
    bundle: &Directory,
    deadline: &Deadline,
) -> Result<Target, AdmitError> {
    let mut info = read_info_plist(bundle);
    let main_rel = info
        .executable
        .as_ref()
        .map(|exe| format!("Contents/MacOS/{exe}"))
        .filter(|rel| bundle.is_file(rel));
    info.main_executable = main_rel.clone();

    let mut listing: Vec<(String, String)> = Vec::new();
    let mut documents = Vec::new();
    let mut hashed = 0u64;
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((rel_dir, depth)) = stack.pop() {
        if depth > MAX_BUNDLE_DEPTH {
            continue;
        }
        let dir = if rel_dir.is_empty() {
            bundle.clone()
        } else {
            bundle.open_dir_nofollow(&rel_dir)?
        };
        for entry in dir.entries()? {
            let name = entry.name.to_string_lossy().into_owned();
            let rel = if rel_dir.is_empty() {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            match entry.kind {
                EntryKind::Dir => stack.push((rel, depth + 1)),
                EntryKind::File => {
                    if listing.len() >= MAX_BUNDLE_FILES {
                        return Err(AdmitError::TooManyFiles {
                            path: bundle.path().to_path_buf(),
                            limit: MAX_BUNDLE_FILES,
                        });
                    }
                    deadline.check(|| format!("admission of {}", bundle.path().display()))?;
                    let file = dir.open_file_nofollow(&entry.name)?;
                    let len = check_size(&file)?;
                    hashed = hashed.saturating_add(len);
                    if hashed > MAX_BUNDLE_BYTES {
                        return Err(AdmitError::TooLarge {
                            path: bundle.path().to_path_buf(),
                            size: hashed,
                            limit: MAX_BUNDLE_BYTES,
                        });
                    }
                    let digest = file.digest(HEAD_LEN, deadline)?;
                    if is_executable_image(&digest.head, len) {
                        let source = if documents.len() < MAX_KEPT_DOCUMENTS {
                            DocumentSource::Kept(file.clone())
                        } else {
                            DocumentSource::Beneath {
                                bundle: bundle.clone(),
                                rel: rel.clone(),
                                id: file.id(),
                            }
                        };
                        let kind = format::sniff(&digest.head, len);
                        let role = bundle_role(&rel, main_rel.as_deref());
                        documents.extend(file_documents(
                            &source,
                            &file,
                            &rel,
                            &digest.head,
                            kind,
                            role,
                        )?);
                    }
                    listing.push((rel, digest.sha256));
                }
                // Links and special files are not part of the bundle's contents.
                _ => {}
            }
        }
    }
    listing.sort();
    let mut text = String::new();
    for (rel, digest) in &listing {
        text.push_str(rel);
        text.push('\0');
        text.push_str(digest);
        text.push('\n');
    }
    documents.sort_by(|a, b| a.name.cmp(&b.name));
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    Ok(Target {
        path: bundle.path().to_path_buf(),
        name: file_name(bundle.path()),
        sha256,
        format: Format::AppBundle,
        architecture: combined_architecture(&documents),
        documents,
        bundle: Some(info),
        opened: Some(opened.clone()),
    })
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use super::*;
    use crate::providers::native::test_support::fixtures;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rea-native-admit-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn admits_universal_fsevents_as_two_slices() {
        let target = admit(&fixtures().join("fsevents/package/fsevents.node")).unwrap();
        assert_eq!(target.format, "macho-universal");
        assert_eq!(target.architecture, "multi");
        assert_eq!(target.name, "fsevents.node");
        let names: Vec<_> = target.documents.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["fsevents.node (arm64)", "fsevents.node (x86_64)"]);
        assert!(
            target
                .documents
                .iter()
                .all(|d| d.role == "slice" && d.format == "macho")
        );
        assert_eq!(target.sha256.len(), 64);
    }

    #[test]
    fn admits_four_slice_universal_with_powerpc() {
        let path = fixtures().join("py2app/py2app/apptemplate/prebuilt/main-universal");
        let target = admit(&path).unwrap();
        let archs: Vec<_> = target
            .documents
            .iter()
            .map(|d| d.architecture.as_str())
            .collect();
        assert_eq!(archs, ["ppc", "ppc64", "x86", "x86_64"]);
        assert_eq!(target.architecture, "multi");
    }

    #[test]
    fn admits_thin_files_and_raw_data() {
        let ls = admit(Path::new("/usr/bin/ls")).unwrap();
        assert_eq!(
            (ls.format.as_str(), ls.architecture.as_str()),
            ("elf", "x86_64")
        );
        assert_eq!(ls.documents.len(), 1);
        assert_eq!(ls.documents[0].role, "file");
        let exe =
            admit(&fixtures().join("node-notifier/package/vendor/snoreToast/snoretoast-x64.exe"))
                .unwrap();
        assert_eq!(
            (exe.format.as_str(), exe.architecture.as_str()),
            ("pe", "x86_64")
        );
        let empty = admit(&fixtures().join("delocate/delocate/tests/data/empty")).unwrap();
        assert_eq!(empty.format, "raw");
        assert_eq!(
            empty.sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let arm = admit(&fixtures().join("delocate/delocate/tests/data/libam1.dylib")).unwrap();
        assert_eq!(
            (arm.format.as_str(), arm.architecture.as_str()),
            ("macho", "arm64")
        );
    }

    #[test]
    fn admits_the_terminal_notifier_bundle() {
        let path =
            fixtures().join("node-notifier/package/vendor/mac.noindex/terminal-notifier.app");
        let target = admit(&path).unwrap();
        assert_eq!(target.format, "app-bundle");
        assert_eq!(target.name, "terminal-notifier.app");
        assert_eq!(target.architecture, "x86_64");
        let names: Vec<_> = target.documents.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["Contents/MacOS/terminal-notifier"]);
        assert_eq!(target.documents[0].role, "main-executable");
        let info = target.bundle.unwrap();
        assert_eq!(info.executable.as_deref(), Some("terminal-notifier"));
        assert_eq!(
            info.identifier.as_deref(),
            Some("nl.superalloy.oss.terminal-notifier")
        );
        assert_eq!(info.short_version.as_deref(), Some("1.7.2"));
        assert_eq!(info.version.as_deref(), Some("17"));
        assert_eq!(
            info.main_executable.as_deref(),
            Some("Contents/MacOS/terminal-notifier")
        );
    }

    #[test]
    fn bundle_digest_covers_names_and_contents() {
        let dir = scratch("digest");
        let app = dir.join("Demo.app");
        fs::create_dir_all(app.join("Contents/MacOS")).unwrap();
        fs::create_dir_all(app.join("Contents/Frameworks")).unwrap();
        let plist = plist::Value::Dictionary(
            [
                ("CFBundleExecutable".to_string(), plist::Value::from("Demo")),
                (
                    "CFBundleIdentifier".to_string(),
                    plist::Value::from("org.example.demo"),
                ),
                (
                    "CFBundleShortVersionString".to_string(),
                    plist::Value::from("1.2.3"),
                ),
            ]
            .into_iter()
            .collect(),
        );
        // A binary plist, to prove both encodings are read.
        plist
            .to_file_binary(app.join("Contents/Info.plist"))
            .unwrap();
        let universal = fixtures().join("py2app/py2app/apptemplate/prebuilt/main-universal2");
        fs::copy(&universal, app.join("Contents/MacOS/Demo")).unwrap();
        let dylib = fixtures().join("delocate/delocate/tests/data/liba_both.dylib");
        fs::copy(&dylib, app.join("Contents/Frameworks/liba_both.dylib")).unwrap();
        fs::write(app.join("Contents/PkgInfo"), b"APPL????").unwrap();
        let target = admit(&app).unwrap();
        let info = target.bundle.clone().unwrap();
        assert_eq!(info.identifier.as_deref(), Some("org.example.demo"));
        assert_eq!(info.short_version.as_deref(), Some("1.2.3"));
        let names: Vec<_> = target.documents.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Contents/Frameworks/liba_both.dylib (arm64)",
                "Contents/Frameworks/liba_both.dylib (x86_64)",
                "Contents/MacOS/Demo (arm64)",
                "Contents/MacOS/Demo (x86_64)",
            ]
        );
        assert_eq!(target.documents[2].role, "main-executable");
        assert_eq!(target.documents[0].role, "library");
        assert_eq!(target.architecture, "multi");

        // The digest is over the sorted listing of relative paths and file digests.
        let mut expected = String::new();
        let mut rels = vec![
            "Contents/Frameworks/liba_both.dylib",
            "Contents/Info.plist",
            "Contents/MacOS/Demo",
            "Contents/PkgInfo",
        ];
        rels.sort();
        for rel in rels {
            let digest = hex::encode(Sha256::digest(fs::read(app.join(rel)).unwrap()));
            expected.push_str(&format!("{rel}\0{digest}\n"));
        }
        assert_eq!(
            target.sha256,
            hex::encode(Sha256::digest(expected.as_bytes()))
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn bundle_roles_follow_the_layout() {
        let main = Some("Contents/MacOS/App");
        let cases = [
            ("Contents/MacOS/App", "main-executable"),
            (
                "Contents/Frameworks/Electron Framework.framework/Versions/A/Electron Framework",
                "framework",
            ),
            (
                "Contents/Frameworks/App Helper (GPU).app/Contents/MacOS/App Helper (GPU)",
                "helper",
            ),
            ("Contents/Frameworks/libffmpeg.dylib", "library"),
            ("Contents/Helpers/tool", "helper"),
            (
                "Contents/PlugIns/Share.appex/Contents/MacOS/Share",
                "plug-in",
            ),
            (
                "Contents/XPCServices/Fetch.xpc/Contents/MacOS/Fetch",
                "xpc-service",
            ),
            (
                "Contents/Resources/app.asar.unpacked/node_modules/x/build/Release/x.node",
                "native-module",
            ),
            ("Contents/Library/LoginItems/Launcher", "image"),
        ];
        for (rel, role) in cases {
            assert_eq!(bundle_role(rel, main), role, "{rel}");
        }
    }

    #[test]
    fn refuses_other_directories() {
        let js = fixtures().join("nativefier/package/app");
        assert!(matches!(
            admit(&js),
            Err(AdmitError::UnsupportedDirectory { .. })
        ));
        // An `.app` without Contents/ is just a directory.
        let plain = scratch("plain");
        let fake = plain.join("Fake.app");
        fs::create_dir_all(&fake).unwrap();
        fs::write(fake.join("index.js"), "1").unwrap();
        assert!(matches!(
            admit(&fake),
            Err(AdmitError::UnsupportedDirectory { .. })
        ));
        let _ = fs::remove_dir_all(&plain);
    }

    #[test]
    fn missing_paths_and_symlink_loops_are_clear_errors() {
        assert!(matches!(
            admit(Path::new("/nonexistent/rea/file")),
            Err(AdmitError::NotFound { .. })
        ));
        let dir = scratch("loop");
        let a = dir.join("a");
        let b = dir.join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = admit(&a).unwrap_err();
        assert!(matches!(err, AdmitError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("cannot read"));
        assert!(matches!(
            admit(Path::new("/dev/null")),
            Err(AdmitError::NotAFile { .. })
        ));
        let _ = fs::remove_dir_all(&dir);
    }
}
