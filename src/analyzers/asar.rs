//! Reads Electron `asar` archives in place: the header is parsed and checked once, and file
//! contents are read on demand through the descriptor opened with the archive, so nothing is
//! ever extracted to disk and nothing swapped in after the check is read.
//!
//! Layout (as written by `@electron/asar` 3.x): bytes 0..16 hold four little-endian `u32`s — the
//! size-pickle payload length (always 4), the header pickle size, the header pickle payload
//! size and the JSON string length. The JSON header starts at byte 16 and the packed file data
//! starts at `8 + header pickle size`. File offsets in the JSON are decimal strings relative to
//! that data start. Files marked `unpacked` live in the sibling directory `<archive>.unpacked/`.
//!
//! The header is parsed as a stream straight into entries (no JSON tree is built, which cost
//! 1.9 GiB for a million entries), its size is bounded by [`MAX_HEADER_LEN`], and packed entries
//! whose bytes overlap are refused.

use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fsroot::{Directory, FsError, RegularFile};

/// The most entries (files and links) one archive may declare; real applications hold a few
/// hundred thousand at most, so more than this is treated as hostile.
pub const MAX_ENTRIES: usize = 1_000_000;

/// The deepest directory nesting accepted. `node_modules` trees rarely exceed 30 levels.
pub const MAX_DEPTH: usize = 48;

/// The largest JSON header accepted (64 MiB). Real headers are a few megabytes (a 100,000-file
/// application's is about 15 MB); a million minimal entries fit below this.
pub const MAX_HEADER_LEN: u64 = 64 * 1024 * 1024;

/// How many symbolic links `read` follows before giving up, so a link cycle cannot loop forever.
const MAX_LINK_HOPS: usize = 32;

/// The JSON nesting accepted before parsing; checked by a byte scan so that hostile nesting
/// gets a clear error rather than the parser's generic recursion message.
const MAX_JSON_NESTING: usize = 2 * MAX_DEPTH + 8;

/// Why an archive could not be opened or a file in it could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AsarError {
    /// The archive or an unpacked file could not be read from disk.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is shorter than the 16-byte asar preamble.
    #[error(
        "{archive}: not an asar archive: {len} bytes is shorter than the 16-byte header preamble"
    )]
    TooSmall { archive: PathBuf, len: u64 },
    /// The first `u32` must be 4 (the payload size of the size pickle).
    #[error("{archive}: not an asar archive: first header word is {found}, expected 4")]
    BadMagic { archive: PathBuf, found: u32 },
    /// The declared header extends past the end of the file.
    #[error(
        "{archive}: header of {header_size} bytes (plus the 8-byte size pickle) extends past the end of the {file_len}-byte file"
    )]
    HeaderPastEnd {
        archive: PathBuf,
        header_size: u64,
        file_len: u64,
    },
    /// The three header sizes do not nest (JSON inside payload inside pickle).
    #[error(
        "{archive}: inconsistent header sizes: pickle {pickle_size}, payload {payload_size}, JSON {json_len} (JSON must fit in the payload and the payload in the pickle)"
    )]
    InconsistentHeader {
        archive: PathBuf,
        pickle_size: u32,
        payload_size: u32,
        json_len: u32,
    },
    /// The JSON header is larger than `MAX_HEADER_LEN`.
    #[error("{archive}: JSON header of {json_len} bytes exceeds the {limit}-byte limit")]
    HeaderTooLarge {
        archive: PathBuf,
        json_len: u64,
        limit: u64,
    },
    /// The JSON header is not UTF-8 or not valid JSON.
    #[error("{archive}: header is not valid JSON: {message}")]
    HeaderJson { archive: PathBuf, message: String },
    /// A header node has the wrong shape (for example a directory whose `files` is not an object).
    #[error("{archive}: malformed header entry {entry:?}: {reason}")]
    MalformedEntry {
        archive: PathBuf,
        entry: String,
        reason: String,
    },
    /// A packed file's bytes lie (partly) beyond the end of the archive.
    #[error(
        "{archive}: entry {entry:?} declares offset {offset} and size {size}, past the end of the {data_len}-byte data area"
    )]
    OffsetPastEnd {
        archive: PathBuf,
        entry: String,
        offset: u64,
        size: u64,
        data_len: u64,
    },
    /// A declared size or offset is not a whole number within `u32` (sizes) or `u64` (offsets).
    #[error("{archive}: entry {entry:?} declares an impossible {field}: {value}")]
    BadNumber {
        archive: PathBuf,
        entry: String,
        field: &'static str,
        value: String,
    },
    /// A name in the header would escape the archive root (`..`, `.`, empty, or holds a separator).
    #[error("{archive}: entry {entry:?} has an unsafe path component {component:?}")]
    UnsafePath {
        archive: PathBuf,
        entry: String,
        component: String,
    },
    /// Directories nest deeper than `MAX_DEPTH`.
    #[error("{archive}: header nests deeper than {limit} levels (at {entry:?})")]
    TooDeep {
        archive: PathBuf,
        entry: String,
        limit: usize,
    },
    /// The header declares more than `MAX_ENTRIES` files.
    #[error("{archive}: header declares more than {limit} entries")]
    TooManyEntries { archive: PathBuf, limit: usize },
    /// No file of that path exists in the archive.
    #[error("{archive}: no file {entry:?} in the archive")]
    NotFound { archive: PathBuf, entry: String },
    /// Following symbolic links did not reach a file within `MAX_LINK_HOPS` hops.
    #[error("{archive}: link {entry:?} does not resolve to a file (cycle or dangling link)")]
    BadLink { archive: PathBuf, entry: String },
    /// Two packed entries share bytes of the data area. `@electron/asar` never writes that; a
    /// header that does makes every alias cost a read of the same payload.
    #[error(
        "{archive}: entries {entry:?} and {other:?} overlap in the data area; refusing the archive"
    )]
    Overlapping {
        archive: PathBuf,
        entry: String,
        other: String,
    },
    /// The archive, or its `.unpacked` directory, could not be opened as a regular file or
    /// directory beneath where it was found.
    #[error(transparent)]
    File(#[from] FsError),
    /// An unpacked file on disk does not have the size the header declares.
    #[error("{path}: unpacked file is {actual} bytes but the archive header declares {declared}")]
    UnpackedSizeMismatch {
        path: PathBuf,
        declared: u64,
        actual: u64,
    },
}

/// One file or symbolic link stored in an archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entry {
    /// Path relative to the archive root, components joined with `/` (no leading slash).
    pub path: String,
    /// Declared size in bytes (0 for links).
    pub size: u64,
    /// Offset of the bytes within the archive's data area; `None` for unpacked files and links.
    pub offset: Option<u64>,
    /// True when the file lives in the sibling `<archive>.unpacked/` directory.
    pub unpacked: bool,
    /// True when the header marks the file executable.
    pub executable: bool,
    /// For a symbolic link: its target, relative to the archive root.
    pub link: Option<String>,
    /// The whole-file integrity hash (lowercase hex, SHA-256 in asar 3.x) when the header has one.
    pub integrity: Option<String>,
}

/// An opened asar archive: its parsed header, the descriptor of its file and of its
/// `.unpacked` directory.
///
/// Cloning shares the descriptors; reads use positioned reads, so an `Archive` can be shared
/// freely between threads.
#[derive(Debug, Clone)]
pub struct Archive {
    path: PathBuf,
    file: RegularFile,
    unpacked: Option<Directory>,
    header_json: String,
    data_start: u64,
    file_len: u64,
    /// Sorted by path (searched by bisection).
    entries: Vec<Entry>,
}

impl Archive {
    /// Opens `path` as the system resolves it (no roots), with its `.unpacked` sibling.
    pub fn open(path: &Path) -> Result<Archive, AsarError> {
        let file = RegularFile::open(path)?;
        let unpacked = file.sibling_dir(".unpacked").ok();
        Archive::from_file(file, unpacked)
    }

    /// Reads and validates the header of an opened archive file and lists its entries;
    /// `unpacked` is its `.unpacked` directory, when there is one.
    ///
    /// Every packed entry is checked against the file length and against the other entries, so
    /// a later `read` can neither be sent past the end of the archive nor made to read the same
    /// bytes for many names.
    pub fn from_file(file: RegularFile, unpacked: Option<Directory>) -> Result<Archive, AsarError> {
        let path = file.path().to_path_buf();
        let io = |source| AsarError::Io {
            path: path.clone(),
            source,
        };
        let file_len = file.len();
        if file_len < 16 {
            return Err(AsarError::TooSmall {
                archive: path,
                len: file_len,
            });
        }
        let preamble = file.read_range(0, 16).map_err(io)?;
        let word = |i: usize| {
            u32::from_le_bytes([
                preamble[i * 4],
                preamble[i * 4 + 1],
                preamble[i * 4 + 2],
                preamble[i * 4 + 3],
            ])
        };
        let (size_payload, pickle_size, payload_size, json_len) =
            (word(0), word(1), word(2), word(3));
        Self::check_preamble(
            &path,
            file_len,
            size_payload,
            pickle_size,
            payload_size,
            json_len,
        )?;

        let raw = file.read_range(16, u64::from(json_len)).map_err(io)?;
        let header_json = String::from_utf8(raw).map_err(|e| AsarError::HeaderJson {
            archive: path.clone(),
            message: format!("not UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        })?;
        let data_start = 8 + u64::from(pickle_size);
        let data_len = file_len - data_start;
        let entries = parse_header(&path, &header_json, data_len)?;
        Ok(Archive {
            path,
            file,
            unpacked,
            header_json,
            data_start,
            file_len,
            entries,
        })
    }

    /// Checks that the four preamble words describe a header that nests and fits in the file.
    fn check_preamble(
        path: &Path,
        file_len: u64,
        size_payload: u32,
        pickle_size: u32,
        payload_size: u32,
        json_len: u32,
    ) -> Result<(), AsarError> {
        if size_payload != 4 {
            return Err(AsarError::BadMagic {
                archive: path.to_path_buf(),
                found: size_payload,
            });
        }
        if 8 + u64::from(pickle_size) > file_len {
            return Err(AsarError::HeaderPastEnd {
                archive: path.to_path_buf(),
                header_size: u64::from(pickle_size),
                file_len,
            });
        }
        // The header pickle is its own 4-byte length followed by the payload, and the payload is
        // the 4-byte string length followed by the JSON (padded to 4 bytes).
        let nests = u64::from(payload_size) + 4 <= u64::from(pickle_size)
            && u64::from(json_len) + 4 <= u64::from(payload_size);
        if !nests {
            return Err(AsarError::InconsistentHeader {
                archive: path.to_path_buf(),
                pickle_size,
                payload_size,
                json_len,
            });
        }
        if u64::from(json_len) > MAX_HEADER_LEN {
            return Err(AsarError::HeaderTooLarge {
                archive: path.to_path_buf(),
                json_len: u64::from(json_len),
                limit: MAX_HEADER_LEN,
            });
        }
        Ok(())
    }

    /// The archive's path on disk.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The JSON header exactly as stored; its SHA-256 is Electron's `ElectronAsarIntegrity` hash.
    pub fn header_json(&self) -> &str {
        &self.header_json
    }

    /// Lowercase hex SHA-256 of the JSON header string.
    pub fn header_sha256(&self) -> String {
        hex::encode(Sha256::digest(self.header_json.as_bytes()))
    }

    /// Byte offset in the archive file where packed data begins.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }

    /// Every file and link, sorted by path.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry at `path` (relative, `/`-separated; a leading `/` or `./` is ignored).
    pub fn entry(&self, path: &str) -> Option<&Entry> {
        let path = normalize(path);
        self.entries
            .binary_search_by(|e| e.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The sibling directory that holds unpacked files: `<archive file name>.unpacked`.
    pub fn unpacked_dir(&self) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".unpacked");
        self.path.with_file_name(name)
    }

    /// Reads the whole contents of the file at `path`, following links inside the archive.
    ///
    /// Packed files come from the archive itself; unpacked files come from the sibling
    /// `<archive>.unpacked/` directory and must have the declared size.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, AsarError> {
        let entry = self.resolve(path)?;
        match entry.offset {
            Some(offset) if !entry.unpacked => self.read_packed(entry, offset),
            _ => self.read_unpacked(entry),
        }
    }

    /// Follows links from `path` to a file entry.
    fn resolve(&self, path: &str) -> Result<&Entry, AsarError> {
        let mut current = normalize(path).to_string();
        for _ in 0..MAX_LINK_HOPS {
            let entry = self.entry(&current).ok_or_else(|| AsarError::NotFound {
                archive: self.path.clone(),
                entry: current.clone(),
            })?;
            match &entry.link {
                None => return Ok(entry),
                Some(target) => current = target.clone(),
            }
        }
        Err(AsarError::BadLink {
            archive: self.path.clone(),
            entry: normalize(path).to_string(),
        })
    }

    fn read_packed(&self, entry: &Entry, offset: u64) -> Result<Vec<u8>, AsarError> {
        // `from_file` checked this against the file length; checked again in case of arithmetic
        // doubt.
        let start = self
            .data_start
            .checked_add(offset)
            .filter(|s| {
                s.checked_add(entry.size)
                    .is_some_and(|end| end <= self.file_len)
            })
            .ok_or_else(|| AsarError::OffsetPastEnd {
                archive: self.path.clone(),
                entry: entry.path.clone(),
                offset,
                size: entry.size,
                data_len: self.file_len.saturating_sub(self.data_start),
            })?;
        self.file
            .read_range(start, entry.size)
            .map_err(|source| AsarError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Reads an unpacked file beneath the `.unpacked` directory opened with the archive: links
    /// in it are followed only while they stay inside it, and only a regular file of the
    /// declared size is read.
    fn read_unpacked(&self, entry: &Entry) -> Result<Vec<u8>, AsarError> {
        let mut disk = self.unpacked_dir();
        for part in entry.path.split('/') {
            disk.push(part);
        }
        let dir = self.unpacked.as_ref().ok_or_else(|| AsarError::Io {
            path: disk.clone(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        let file = dir.open_file(&entry.path)?;
        if file.len() != entry.size {
            return Err(AsarError::UnpackedSizeMismatch {
                path: disk,
                declared: entry.size,
                actual: file.len(),
            });
        }
        Ok(file.read_all(entry.size)?)
    }
}

/// Strips a leading `/` or `./` so callers may pass either form.
fn normalize(path: &str) -> &str {
    let p = path.strip_prefix("./").unwrap_or(path);
    p.trim_start_matches('/')
}

/// Rejects JSON nested deeper than `MAX_JSON_NESTING` before handing it to the parser.
fn check_json_nesting(archive: &Path, json: &str) -> Result<(), AsarError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for b in json.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_NESTING {
                    return Err(AsarError::TooDeep {
                        archive: archive.to_path_buf(),
                        entry: String::new(),
                        limit: MAX_DEPTH,
                    });
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses the JSON header into a sorted list of entries, checking every name, size and offset,
/// and that no two packed entries share bytes.
fn parse_header(archive: &Path, json: &str, data_len: u64) -> Result<Vec<Entry>, AsarError> {
    check_json_nesting(archive, json)?;
    let mut walker = Walker {
        archive,
        data_len,
        entries: Vec::new(),
        error: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let parsed = RootSeed(&mut walker)
        .deserialize(&mut deserializer)
        .and_then(|found| deserializer.end().map(|()| found));
    if let Some(e) = walker.error.take() {
        return Err(e);
    }
    let found = parsed.map_err(|e| AsarError::HeaderJson {
        archive: archive.to_path_buf(),
        message: e.to_string(),
    })?;
    if !found {
        return Err(walker.malformed("", "the root has no \"files\" object"));
    }
    let mut entries = walker.entries;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(pair) = entries.windows(2).find(|w| w[0].path == w[1].path) {
        return Err(walker_malformed(archive, &pair[0].path, "declared twice"));
    }
    check_overlaps(archive, &entries)?;
    Ok(entries)
}

/// Refuses packed entries whose byte ranges overlap (empty entries overlap nothing).
fn check_overlaps(archive: &Path, entries: &[Entry]) -> Result<(), AsarError> {
    let mut packed: Vec<(u64, u64, &str)> = entries
        .iter()
        .filter(|e| e.size > 0)
        .filter_map(|e| e.offset.map(|o| (o, o + e.size, e.path.as_str())))
        .collect();
    packed.sort_unstable();
    let mut last: Option<(u64, &str)> = None;
    for &(start, end, path) in &packed {
        if let Some((last_end, last_path)) = last
            && start < last_end
        {
            return Err(AsarError::Overlapping {
                archive: archive.to_path_buf(),
                entry: path.to_string(),
                other: last_path.to_string(),
            });
        }
        if last.is_none_or(|(e, _)| end > e) {
            last = Some((end, path));
        }
    }
    Ok(())
}

fn walker_malformed(archive: &Path, entry: &str, reason: &str) -> AsarError {
    AsarError::MalformedEntry {
        archive: archive.to_path_buf(),
        entry: entry.to_string(),
        reason: reason.to_string(),
    }
}

/// Collects entries while the header streams through the deserializer. An error of ours is kept
/// here and the deserializer is stopped with a placeholder error.
struct Walker<'a> {
    archive: &'a Path,
    data_len: u64,
    entries: Vec<Entry>,
    error: Option<AsarError>,
}

/// The fields of a file node, as found; checked once the node ends.
#[derive(Default)]
struct FileFields {
    size: Option<serde_json::Value>,
    offset: Option<serde_json::Value>,
    unpacked: bool,
    executable: bool,
    link: Option<serde_json::Value>,
    integrity: Option<String>,
}

/// `integrity` of a file node: only `hash` is kept; anything else (the block list) is skipped.
#[derive(Deserialize)]
struct Integrity {
    #[serde(default)]
    hash: Option<serde_json::Value>,
}

impl Walker<'_> {
    fn malformed(&self, entry: &str, reason: &str) -> AsarError {
        walker_malformed(self.archive, entry, reason)
    }

    /// Keeps `error` and returns the placeholder that stops the deserializer.
    fn fail<E: de::Error>(&mut self, error: AsarError) -> E {
        if self.error.is_none() {
            self.error = Some(error);
        }
        E::custom("stopped")
    }

    fn child_path(&self, prefix: &str, name: &str) -> Result<String, AsarError> {
        let unsafe_name =
            name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']);
        if unsafe_name {
            return Err(AsarError::UnsafePath {
                archive: self.archive.to_path_buf(),
                entry: format!("{prefix}/{name}")
                    .trim_start_matches('/')
                    .to_string(),
                component: name.to_string(),
            });
        }
        Ok(if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        })
    }

    fn push_file(&mut self, path: String, fields: FileFields) -> Result<(), AsarError> {
        if self.entries.len() >= MAX_ENTRIES {
            return Err(AsarError::TooManyEntries {
                archive: self.archive.to_path_buf(),
                limit: MAX_ENTRIES,
            });
        }
        let FileFields {
            size,
            offset,
            unpacked,
            executable,
            link,
            integrity,
        } = fields;
        if let Some(link) = link {
            let target = link
                .as_str()
                .ok_or_else(|| self.malformed(&path, "\"link\" is not a string"))?;
            let target = self.check_link(&path, target)?;
            self.entries.push(Entry {
                path,
                size: 0,
                offset: None,
                unpacked,
                executable,
                link: Some(target),
                integrity,
            });
            return Ok(());
        }
        let size = self.size(&path, size.as_ref())?;
        let offset = if unpacked {
            None
        } else {
            let offset = self.offset(&path, offset.as_ref())?;
            let past_end = offset
                .checked_add(size)
                .is_none_or(|end| end > self.data_len);
            if past_end {
                return Err(AsarError::OffsetPastEnd {
                    archive: self.archive.to_path_buf(),
                    entry: path,
                    offset,
                    size,
                    data_len: self.data_len,
                });
            }
            Some(offset)
        };
        self.entries.push(Entry {
            path,
            size,
            offset,
            unpacked,
            executable,
            link: None,
            integrity,
        });
        Ok(())
    }

    /// Sizes are JSON numbers; anything but a whole number up to `u32::MAX` is refused, matching
    /// what Electron's own reader accepts.
    fn size(&self, path: &str, value: Option<&serde_json::Value>) -> Result<u64, AsarError> {
        let value = value.ok_or_else(|| self.malformed(path, "file has no \"size\""))?;
        value
            .as_u64()
            .filter(|&s| s <= u64::from(u32::MAX))
            .ok_or_else(|| AsarError::BadNumber {
                archive: self.archive.to_path_buf(),
                entry: path.to_string(),
                field: "size",
                value: value.to_string(),
            })
    }

    /// Offsets are decimal strings (asar writes them from a BigInt); a plain number is accepted too.
    fn offset(&self, path: &str, value: Option<&serde_json::Value>) -> Result<u64, AsarError> {
        let value = value.ok_or_else(|| self.malformed(path, "packed file has no \"offset\""))?;
        let parsed = match value {
            serde_json::Value::String(s)
                if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) =>
            {
                s.parse::<u64>().ok()
            }
            serde_json::Value::Number(n) => n.as_u64(),
            _ => None,
        };
        parsed.ok_or_else(|| AsarError::BadNumber {
            archive: self.archive.to_path_buf(),
            entry: path.to_string(),
            field: "offset",
            value: value.to_string(),
        })
    }

    /// Link targets are relative to the archive root and may not climb out of it.
    fn check_link(&self, path: &str, target: &str) -> Result<String, AsarError> {
        let target = target.replace('\\', "/");
        let mut parts = Vec::new();
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    return Err(AsarError::UnsafePath {
                        archive: self.archive.to_path_buf(),
                        entry: path.to_string(),
                        component: "..".to_string(),
                    });
                }
                p => parts.push(p),
            }
        }
        Ok(parts.join("/"))
    }
}

/// The header's root object: only its `files` matter. Yields whether it had them.
struct RootSeed<'w, 'a>(&'w mut Walker<'a>);

impl<'de> DeserializeSeed<'de> for RootSeed<'_, '_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RootSeed<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object with \"files\"")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "files" && !found {
                map.next_value_seed(DirSeed {
                    walker: &mut *self.0,
                    prefix: String::new(),
                    depth: 1,
                })?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A `files` object: names to nodes.
struct DirSeed<'w, 'a> {
    walker: &'w mut Walker<'a>,
    prefix: String,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for DirSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Implements the non-object cases of a visitor as "not an object" errors of the walker.
macro_rules! not_an_object {
    ($reason:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(self.not_object($reason))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.not_object($reason))
        }
    };
}

impl DirSeed<'_, '_> {
    fn not_object<E: de::Error>(self, reason: &str) -> E {
        let error = self.walker.malformed(&self.prefix, reason);
        self.walker.fail(error)
    }
}

impl<'de> Visitor<'de> for DirSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a files object")
    }

    not_an_object!("\"files\" is not an object");

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        if self.depth > MAX_DEPTH {
            let error = AsarError::TooDeep {
                archive: self.walker.archive.to_path_buf(),
                entry: self.prefix.clone(),
                limit: MAX_DEPTH,
            };
            return Err(self.walker.fail(error));
        }
        while let Some(name) = map.next_key::<String>()? {
            let path = match self.walker.child_path(&self.prefix, &name) {
                Ok(path) => path,
                Err(e) => return Err(self.walker.fail(e)),
            };
            map.next_value_seed(NodeSeed {
                walker: &mut *self.walker,
                path,
                depth: self.depth,
            })?;
        }
        Ok(())
    }
}

/// One node: a directory (it has `files`) or a file or link.
struct NodeSeed<'w, 'a> {
    walker: &'w mut Walker<'a>,
    path: String,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl NodeSeed<'_, '_> {
    fn not_object<E: de::Error>(self, reason: &str) -> E {
        let error = self.walker.malformed(&self.path, reason);
        self.walker.fail(error)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a header node")
    }

    not_an_object!("node is not an object");

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut directory = false;
        let mut fields = FileFields::default();
        let flag = |v: serde_json::Value| v.as_bool().unwrap_or(false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "files" if !directory => {
                    map.next_value_seed(DirSeed {
                        walker: &mut *self.walker,
                        prefix: self.path.clone(),
                        depth: self.depth + 1,
                    })?;
                    directory = true;
                }
                "size" => fields.size = Some(map.next_value()?),
                "offset" => fields.offset = Some(map.next_value()?),
                "link" => fields.link = Some(map.next_value()?),
                "unpacked" => fields.unpacked = flag(map.next_value()?),
                "executable" => fields.executable = flag(map.next_value()?),
                "integrity" => {
                    // Anything but an object with a string `hash` records no integrity.
                    let value: serde_json::Value = map.next_value()?;
                    fields.integrity = serde_json::from_value::<Integrity>(value)
                        .ok()
                        .and_then(|i| i.hash)
                        .and_then(|h| h.as_str().map(str::to_ascii_lowercase));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if directory {
            return Ok(());
        }
        match self.walker.push_file(self.path, fields) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.walker.fail(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds archive bytes the way `@electron/asar` does: size pickle, header pickle, data.
    fn craft(json: &str, data: &[u8]) -> Vec<u8> {
        let json_len = json.len() as u32;
        let payload = (4 + json_len).div_ceil(4) * 4;
        let pickle = payload + 4;
        let mut out = Vec::new();
        for w in [4u32, pickle, payload, json_len] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(json.as_bytes());
        out.resize(8 + pickle as usize, 0);
        out.extend_from_slice(data);
        out
    }

    /// An archive written to its own temporary directory, removed when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn write_temp(name: &str, bytes: &[u8]) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rea-asar-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("app.asar");
        std::fs::write(&path, bytes).expect("write archive");
        Scratch(path)
    }

    /// Opens a crafted archive; the file is gone afterwards, so only header facts can be used.
    fn open_crafted(name: &str, json: &str, data: &[u8]) -> Result<Archive, AsarError> {
        Archive::open(&write_temp(name, &craft(json, data)))
    }

    #[test]
    fn reads_packed_files_links_and_metadata() {
        let json = r#"{"files":{"b.txt":{"size":3,"offset":"5","executable":true},"a":{"files":{"x.js":{"size":5,"offset":"0","integrity":{"algorithm":"SHA256","hash":"ABCD","blockSize":4194304,"blocks":["abcd"]}}}},"l":{"link":"a/x.js"}}}"#;
        let file = write_temp("ok", &craft(json, b"hellobye"));
        let archive = Archive::open(&file).expect("opens");
        let paths: Vec<_> = archive.entries().iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a/x.js", "b.txt", "l"]);
        assert_eq!(archive.read("a/x.js").expect("read"), b"hello");
        assert_eq!(archive.read("/b.txt").expect("read"), b"bye");
        assert_eq!(archive.read("l").expect("link"), b"hello");
        let x = archive.entry("a/x.js").expect("entry");
        assert_eq!(x.integrity.as_deref(), Some("abcd"));
        assert_eq!(x.offset, Some(0));
        assert!(archive.entry("b.txt").expect("entry").executable);
        assert_eq!(archive.header_json(), json);
        assert_eq!(
            archive.header_sha256(),
            hex::encode(Sha256::digest(json.as_bytes()))
        );
        assert!(matches!(
            archive.read("missing"),
            Err(AsarError::NotFound { .. })
        ));
    }

    #[test]
    fn reads_unpacked_files_from_sibling_directory() {
        let json = r#"{"files":{"lib":{"files":{"n.node":{"size":4,"unpacked":true}}}}}"#;
        let path = write_temp("unpacked", &craft(json, b""));
        let side = path.with_file_name("app.asar.unpacked").join("lib");
        std::fs::create_dir_all(&side).expect("mkdir");
        std::fs::write(side.join("n.node"), b"\x7fELF").expect("write");
        let archive = Archive::open(&path).expect("opens");
        assert_eq!(archive.read("lib/n.node").expect("read"), b"\x7fELF");
        std::fs::write(side.join("n.node"), b"\x7fELF!").expect("write");
        assert!(matches!(
            archive.read("lib/n.node"),
            Err(AsarError::UnpackedSizeMismatch {
                declared: 4,
                actual: 5,
                ..
            })
        ));
    }

    #[test]
    fn rejects_short_and_bad_preambles() {
        let err = Archive::open(&write_temp("short", b"\x04\0\0\0")).expect_err("short");
        assert!(matches!(err, AsarError::TooSmall { len: 4, .. }), "{err}");

        let mut bytes = craft(r#"{"files":{}}"#, b"");
        bytes[0] = 5;
        let err = Archive::open(&write_temp("magic", &bytes)).expect_err("magic");
        assert!(matches!(err, AsarError::BadMagic { found: 5, .. }), "{err}");
    }

    #[test]
    fn rejects_header_past_end_of_file() {
        let mut bytes = craft(r#"{"files":{}}"#, b"");
        bytes[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = Archive::open(&write_temp("past", &bytes)).expect_err("past end");
        assert!(
            matches!(err, AsarError::HeaderPastEnd { header_size, .. } if header_size == u64::from(u32::MAX)),
            "{err}"
        );
        assert!(err.to_string().contains("past the end"));
    }

    #[test]
    fn rejects_json_length_larger_than_pickle() {
        let mut bytes = craft(r#"{"files":{}}"#, b"");
        bytes[12..16].copy_from_slice(&1000u32.to_le_bytes());
        let err = Archive::open(&write_temp("jsonlen", &bytes)).expect_err("inconsistent");
        assert!(
            matches!(err, AsarError::InconsistentHeader { json_len: 1000, .. }),
            "{err}"
        );
    }

    #[test]
    fn rejects_malformed_json() {
        let err = open_crafted("badjson", r#"{"files":{"a":"#, b"").expect_err("bad json");
        assert!(matches!(err, AsarError::HeaderJson { .. }), "{err}");
        let err = open_crafted("nofiles", r#"{"x":1}"#, b"").expect_err("no files");
        assert!(matches!(err, AsarError::MalformedEntry { .. }), "{err}");
        let err =
            open_crafted("nosize", r#"{"files":{"a":{"offset":"0"}}}"#, b"").expect_err("no size");
        assert!(matches!(err, AsarError::MalformedEntry { .. }), "{err}");
    }

    #[test]
    fn rejects_offsets_past_end_and_huge_sizes() {
        let err = open_crafted(
            "offset",
            r#"{"files":{"a":{"size":4,"offset":"2"}}}"#,
            b"abcd",
        )
        .expect_err("past end");
        assert!(
            matches!(
                err,
                AsarError::OffsetPastEnd {
                    offset: 2,
                    size: 4,
                    data_len: 4,
                    ..
                }
            ),
            "{err}"
        );
        let err = open_crafted(
            "overflow",
            r#"{"files":{"a":{"size":4,"offset":"18446744073709551615"}}}"#,
            b"abcd",
        )
        .expect_err("overflow");
        assert!(matches!(err, AsarError::OffsetPastEnd { .. }), "{err}");
        let err = open_crafted(
            "huge",
            r#"{"files":{"a":{"size":4294967296,"offset":"0"}}}"#,
            b"",
        )
        .expect_err("huge");
        assert!(
            matches!(err, AsarError::BadNumber { field: "size", .. }),
            "{err}"
        );
        let err = open_crafted("neg", r#"{"files":{"a":{"size":-1,"offset":"0"}}}"#, b"")
            .expect_err("negative");
        assert!(
            matches!(err, AsarError::BadNumber { field: "size", .. }),
            "{err}"
        );
        let err = open_crafted("stroff", r#"{"files":{"a":{"size":0,"offset":"-1"}}}"#, b"")
            .expect_err("bad offset");
        assert!(
            matches!(
                err,
                AsarError::BadNumber {
                    field: "offset",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn rejects_traversal_names_and_links() {
        let err = open_crafted(
            "dotdot",
            r#"{"files":{"..":{"files":{"x":{"size":0,"offset":"0"}}}}}"#,
            b"",
        )
        .expect_err("dotdot");
        assert!(matches!(err, AsarError::UnsafePath { .. }), "{err}");
        let err = open_crafted(
            "slash",
            r#"{"files":{"a/../../b":{"size":0,"offset":"0"}}}"#,
            b"",
        )
        .expect_err("slash");
        assert!(matches!(err, AsarError::UnsafePath { .. }), "{err}");
        let err = open_crafted(
            "link",
            r#"{"files":{"l":{"link":"../../etc/passwd"}}}"#,
            b"",
        )
        .expect_err("link");
        assert!(matches!(err, AsarError::UnsafePath { .. }), "{err}");
    }

    #[test]
    fn rejects_deep_nesting() {
        let mut json = String::new();
        for _ in 0..MAX_DEPTH + 1 {
            json.push_str(r#"{"files":{"d":"#);
        }
        json.push_str(r#"{"files":{}}"#);
        for _ in 0..MAX_DEPTH + 1 {
            json.push_str("}}");
        }
        let err = open_crafted("deep", &json, b"").expect_err("deep");
        assert!(matches!(err, AsarError::TooDeep { .. }), "{err}");
        // Nesting far beyond the parser's own limit still gets the clear error.
        let json = "[".repeat(10_000);
        let err = open_crafted("deeper", &json, b"").expect_err("deeper");
        assert!(matches!(err, AsarError::TooDeep { .. }), "{err}");
    }

    #[test]
    fn reads_real_archive_from_electron_asar_3_4_1() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("src/analyzers/javascript/testdata/app.asar");
        let archive = Archive::open(&path).expect("opens");
        assert_eq!(
            archive.header_sha256(),
            "2e115ce4aeb40575a5f199455c0f8833390d3f8e37e1db6da7fa925ad27a0bcf"
        );
        assert_eq!(archive.header_json().len(), 3177);
        assert_eq!(archive.data_start(), 8 + 3188);
        let paths: Vec<_> = archive.entries().iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "electron-builder.yml",
                "electron.vite.config.mjs",
                "eslint.config.mjs",
                "package.json",
                "src/main/index.js",
                "src/preload/index.js",
                "src/renderer/assets/base.css",
                "src/renderer/assets/electron.svg",
                "src/renderer/assets/main.css",
                "src/renderer/assets/wavy-lines.svg",
                "src/renderer/index.html",
                "src/renderer/src/renderer.js",
            ]
        );
        // Every file's bytes hash to the integrity the packer recorded, packed or unpacked.
        for entry in archive.entries() {
            let bytes = archive.read(&entry.path).expect("read");
            assert_eq!(bytes.len() as u64, entry.size, "{}", entry.path);
            let digest = hex::encode(Sha256::digest(&bytes));
            assert_eq!(Some(digest), entry.integrity, "{}", entry.path);
            assert_eq!(entry.unpacked, entry.path == "src/preload/index.js");
        }
    }

    #[test]
    fn link_cycles_are_reported() {
        let archive = open_crafted(
            "cycle",
            r#"{"files":{"a":{"link":"b"},"b":{"link":"a"}}}"#,
            b"",
        )
        .expect("opens");
        assert!(matches!(archive.read("a"), Err(AsarError::BadLink { .. })));
    }
}
