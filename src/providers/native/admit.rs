//! Admission: turns a path into a [`Target`] (file or `.app` bundle) with its documents.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::format::{self, FatSlice, HEAD_LEN};
use super::types::{AdmitError, BundleInfo, DocumentSpec, Target};
use crate::vocabulary::{Architecture, DocumentRole, Format};

/// Bundles with more files than this are refused: inventorying them would take minutes and the
/// digest would be meaningless to a person anyway.
const MAX_BUNDLE_FILES: usize = 500_000;

/// Directory nesting deeper than this inside a bundle is not walked (a crafted tree, not an app).
const MAX_BUNDLE_DEPTH: usize = 64;

/// Admits a file of any format, or a macOS `.app` bundle directory; refuses other directories.
pub fn admit(path: &Path) -> Result<Target, AdmitError> {
    let canonical = fs::canonicalize(path).map_err(|e| io_error(path, e))?;
    let meta = fs::metadata(&canonical).map_err(|e| io_error(&canonical, e))?;
    if meta.is_dir() {
        if is_app_bundle(&canonical) {
            return admit_bundle(&canonical);
        }
        // Which analysis applies instead is the investigation layer's to say: reading binaries
        // knows nothing of the analyses above it.
        return Err(AdmitError::UnsupportedDirectory {
            path: canonical,
            suggestion: None,
        });
    }
    if !meta.is_file() {
        return Err(AdmitError::NotAFile { path: canonical });
    }
    admit_file(&canonical)
}

fn io_error(path: &Path, source: io::Error) -> AdmitError {
    if source.kind() == io::ErrorKind::NotFound {
        AdmitError::NotFound {
            path: path.to_path_buf(),
        }
    } else {
        AdmitError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

fn is_app_bundle(dir: &Path) -> bool {
    let named_app = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".app"))
        .unwrap_or(false);
    named_app && dir.join("Contents").is_dir()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

/// Hashes a whole file while keeping its first [`HEAD_LEN`] bytes for classification.
fn hash_file(path: &Path) -> io::Result<(String, Vec<u8>, u64)> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut head = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buffer[..n];
        hasher.update(chunk);
        if head.len() < HEAD_LEN {
            let take = (HEAD_LEN - head.len()).min(n);
            head.extend_from_slice(&chunk[..take]);
        }
        total += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), head, total))
}

fn admit_file(path: &Path) -> Result<Target, AdmitError> {
    let (sha256, head, len) = hash_file(path).map_err(|e| io_error(path, e))?;
    let name = file_name(path);
    let kind = format::sniff(&head, len);
    let documents = file_documents(path, &name, &head, len, kind, DocumentRole::File)
        .map_err(|e| io_error(path, e))?;
    let architecture = match kind {
        Format::MachOUniversal => combined_architecture(&documents),
        _ => format::thin_architecture(kind, &head),
    };
    Ok(Target {
        path: path.to_path_buf(),
        name,
        sha256,
        format: kind,
        architecture,
        documents,
        bundle: None,
    })
}

/// The documents of one file: one per universal slice, or the file itself.
fn file_documents(
    path: &Path,
    name: &str,
    head: &[u8],
    len: u64,
    kind: Format,
    role: DocumentRole,
) -> io::Result<Vec<DocumentSpec>> {
    if kind != Format::MachOUniversal {
        return Ok(vec![DocumentSpec {
            name: name.to_string(),
            file: path.to_path_buf(),
            offset: 0,
            size: len,
            format: kind,
            architecture: format::thin_architecture(kind, head),
            role,
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
        let slice_head = format::read_at_most(path, offset, 64)?;
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
            file: path.to_path_buf(),
            offset,
            size,
            format: slice_kind,
            architecture,
            role: slice_role,
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

/// Every regular file under `root` (symlinks are not followed), as sorted `/`-joined paths.
fn walk_regular_files(root: &Path) -> Result<Vec<(String, PathBuf)>, AdmitError> {
    let mut files = Vec::new();
    let mut stack = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        if depth > MAX_BUNDLE_DEPTH {
            continue;
        }
        let entries = fs::read_dir(&dir).map_err(|e| io_error(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
            let file_type = entry.file_type().map_err(|e| io_error(&entry.path(), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if file_type.is_dir() {
                stack.push((entry.path(), rel, depth + 1));
            } else if file_type.is_file() {
                files.push((rel, entry.path()));
                if files.len() > MAX_BUNDLE_FILES {
                    return Err(AdmitError::TooManyFiles {
                        path: root.to_path_buf(),
                        limit: MAX_BUNDLE_FILES,
                    });
                }
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

fn read_info_plist(bundle: &Path) -> BundleInfo {
    let plist_path = bundle.join("Contents").join("Info.plist");
    let value = match plist::Value::from_file(&plist_path) {
        Ok(value) => value,
        Err(e) => {
            return BundleInfo {
                info_plist_error: Some(format!("{}: {e}", plist_path.display())),
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

fn admit_bundle(bundle: &Path) -> Result<Target, AdmitError> {
    let mut info = read_info_plist(bundle);
    let main_rel = info
        .executable
        .as_ref()
        .map(|exe| format!("Contents/MacOS/{exe}"))
        .filter(|rel| bundle.join(rel).is_file());
    info.main_executable = main_rel.clone();

    let files = walk_regular_files(bundle)?;
    let mut listing = String::new();
    let mut documents = Vec::new();
    for (rel, path) in &files {
        let (digest, head, len) = hash_file(path).map_err(|e| io_error(path, e))?;
        listing.push_str(rel);
        listing.push('\0');
        listing.push_str(&digest);
        listing.push('\n');
        if is_executable_image(&head, len) {
            let kind = format::sniff(&head, len);
            let role = bundle_role(rel, main_rel.as_deref());
            let docs =
                file_documents(path, rel, &head, len, kind, role).map_err(|e| io_error(path, e))?;
            documents.extend(docs);
        }
    }
    documents.sort_by(|a, b| a.name.cmp(&b.name));
    let sha256 = hex::encode(Sha256::digest(listing.as_bytes()));
    Ok(Target {
        path: bundle.to_path_buf(),
        name: file_name(bundle),
        sha256,
        format: Format::AppBundle,
        architecture: combined_architecture(&documents),
        documents,
        bundle: Some(info),
    })
}

#[cfg(test)]
mod tests {
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
