//! Static analysis of a JavaScript/Electron application: the module graph, the main, preload
//! and renderer processes, the IPC map, window security settings and navigation calls, read from
//! a directory, an `app.asar` or a `.app` bundle entirely in memory.
//!
//! Layout:
//! - `model`: the serializable result types.
//! - `source`: opening the input and listing/reading its files (directory or asar).
//! - `visitor`: parsing one file with oxc and collecting its facts.
//! - `html`: script and `<webview>` tags in HTML pages.
//! - `nesting`: the recursion estimate that keeps crafted files from overflowing the parser.
//! - `resolve`: import and path resolution over the list of files.
//! - `findings`: security rules and Electron's defaults.
//! - `report`: the human-readable report.
//! - `tests`: end-to-end tests on nativefier, the create-electron templates and a packed asar.

mod findings;
mod html;
mod model;
mod nesting;
mod report;
mod resolve;
mod source;
mod visitor;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::analyzers::asar::AsarError;
use crate::fsroot::{Deadline, DeadlineExceeded, Directory, FsError, Opened, Roots};

pub use model::*;
pub use report::render_report;

use html::HtmlFacts;
use resolve::{FileSet, describe_path_expr, is_relative, join, package_name, parent};
use source::{FileRef, Root};
use visitor::{FileFacts, IpcRole, Loc, ParsedFile, RawWindow};

/// Source files larger than this are skipped (and reported as a limitation).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// At most this many source files are parsed.
pub const MAX_SOURCE_FILES: usize = 20_000;

/// HTML files larger than this are not scanned.
const MAX_HTML_BYTES: u64 = 4 * 1024 * 1024;

/// package.json files larger than this are not read.
const MAX_PACKAGE_JSON_BYTES: u64 = 4 * 1024 * 1024;

/// At most this many diagnostics are kept for the whole analysis.
const MAX_DIAGNOSTICS: usize = 2_000;

/// Files whose estimated parser recursion (`nesting::nesting_estimate`) exceeds this are not
/// parsed, so a crafted file cannot exhaust the parsing thread's stack. Real code estimates
/// below 100 (nativefier's 509 KB bundle: 55); in a debug build 20,000 levels of the costliest
/// constructs measured fit within `PARSE_STACK_BYTES`, so this leaves a wide margin.
const MAX_NESTING: usize = 10_000;

/// Stack for the parsing thread: oxc recurses once per nesting level.
const PARSE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Why an analysis could not start. Problems with single files are diagnostics, not errors.
#[derive(Debug, thiserror::Error)]
pub enum JsError {
    /// The input path could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The input is a directory that holds no JavaScript application.
    #[error("{path} is not a JavaScript/Electron application: {reason}")]
    NotAnApplication { path: PathBuf, reason: String },
    /// The input (or the app.asar inside it) is not a readable asar archive.
    #[error(transparent)]
    Asar(#[from] AsarError),
    /// The input is not a regular file or directory, or leads outside where it was found.
    #[error(transparent)]
    Path(FsError),
    /// The analysis ran past its deadline.
    #[error(transparent)]
    Stopped(#[from] DeadlineExceeded),
}

impl From<FsError> for JsError {
    fn from(e: FsError) -> JsError {
        match e {
            FsError::Io { path, source } => JsError::Io { path, source },
            FsError::NotFound { path } => JsError::Io {
                path,
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
            FsError::Stopped(d) => JsError::Stopped(d),
            other => JsError::Path(other),
        }
    }
}

/// True for file names the analysis parses as JavaScript or TypeScript, including Vue and
/// Svelte components (whose `<script>` blocks are parsed).
pub(crate) fn is_source_path(path: &str) -> bool {
    [".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".mts", ".cts"]
        .iter()
        .any(|ext| path.ends_with(ext))
        || is_component_path(path)
}

/// True for single-file components whose code sits in `<script>` blocks.
fn is_component_path(path: &str) -> bool {
    path.ends_with(".vue") || path.ends_with(".svelte")
}

fn is_html_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".html") || lower.ends_with(".htm")
}

/// True when `dir` looks like something `analyze` accepts: it holds a package.json, an app.asar
/// (directly, under `resources/`, or under `Contents/Resources/` of a `.app`), or JavaScript or
/// TypeScript files at its top level. An `.asar` file is accepted too.
pub fn looks_like_javascript_app(dir: &Path) -> bool {
    match Roots::none().open(dir) {
        Ok(Opened::File(_)) => dir.extension().is_some_and(|e| e == "asar"),
        Ok(Opened::Dir(d)) => looks_like_javascript_dir(&d),
        Err(_) => false,
    }
}

/// [`looks_like_javascript_app`] for an opened directory: everything is looked at beneath it.
pub fn looks_like_javascript_dir(dir: &Directory) -> bool {
    [
        "package.json",
        "app.asar",
        "resources/app.asar",
        "Contents/Resources/app.asar",
        "Contents/Resources/app/package.json",
    ]
    .iter()
    .any(|rel| dir.is_file(rel))
        || source::has_top_level_scripts(dir)
}

/// What became of one file read on the parsing thread.
enum Outcome {
    /// A JavaScript or TypeScript source.
    Parsed {
        bytes: u64,
        parsed: ParsedFile,
    },
    /// An HTML page or a `.vue`/`.svelte` component: its tags, and its parsed inline scripts.
    Page {
        bytes: u64,
        html: HtmlFacts,
        parsed: Option<ParsedFile>,
    },
    Unreadable(String),
    TooDeep {
        bytes: u64,
    },
    Crashed {
        bytes: u64,
    },
}

/// Reads and parses one file; runs on the parsing thread.
fn parse_one(root: &Root, file: &FileRef) -> Outcome {
    let page = is_html_path(&file.path);
    let cap = if page { MAX_HTML_BYTES } else { MAX_FILE_BYTES };
    let raw = match root.read(file, cap) {
        Ok(raw) => raw,
        Err(e) => return Outcome::Unreadable(e),
    };
    let bytes = raw.len() as u64;
    let text = decode(&raw);
    // The parser is not expected to panic; if it does, the file is reported, not the analysis.
    if page || is_component_path(&file.path) {
        let html = html::scan_html(&text);
        let blocks: Vec<(usize, &str, &str)> = html
            .blocks
            .iter()
            .map(|b| (b.start, b.text.as_str(), b.dialect))
            .collect();
        if blocks
            .iter()
            .any(|b| nesting::nesting_estimate(b.1) > MAX_NESTING)
        {
            return Outcome::TooDeep { bytes };
        }
        let parsed = if blocks.is_empty() {
            None
        } else {
            match std::panic::catch_unwind(|| visitor::parse_blocks(&text, &blocks)) {
                Ok(parsed) => Some(parsed),
                Err(_) => return Outcome::Crashed { bytes },
            }
        };
        return Outcome::Page {
            bytes,
            html,
            parsed,
        };
    }
    if nesting::nesting_estimate(&text) > MAX_NESTING {
        return Outcome::TooDeep { bytes };
    }
    match std::panic::catch_unwind(|| visitor::parse_file(&file.path, &text)) {
        Ok(parsed) => Outcome::Parsed { bytes, parsed },
        Err(_) => Outcome::Crashed { bytes },
    }
}

/// Files larger than this enter the application digest by path and size only: one file must
/// not hold the whole digest in memory.
const MAX_DIGEST_FILE_BYTES: u64 = 256 << 20;

/// The digest of every listed file (see [`InputInfo::files_sha256`]), and the files that entered
/// it by path and size only. One line per file, sorted by path: `path NUL size NUL sha256`, so
/// no file's bytes can pass for another's name.
fn files_digest(
    root: &Root,
    listing: &source::Listing,
    deadline: &Deadline,
) -> Result<(String, Vec<String>), JsError> {
    use sha2::{Digest, Sha256};
    let mut all = Sha256::new();
    let mut unread = Vec::new();
    for file in &listing.files {
        deadline.check(|| "the digest of the application's files".to_string())?;
        let content = match root.read(file, MAX_DIGEST_FILE_BYTES) {
            Ok(bytes) => hex::encode(Sha256::digest(&bytes)),
            Err(_) => {
                unread.push(file.path.clone());
                "unread".to_string()
            }
        };
        all.update(format!("{}\0{}\0{content}\n", file.path, file.size).as_bytes());
    }
    Ok((hex::encode(all.finalize()), unread))
}

/// UTF-8 text with a leading byte-order mark removed; invalid bytes become U+FFFD.
fn decode(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()
}

/// Analyzes the application at `input` (a directory, an `app.asar`, or a `.app` bundle).
///
/// `progress` is called once per file read. Files that cannot be read or parsed become
/// diagnostics and limitations; only an unreadable or unrecognised input is an error.
pub fn analyze(input: &Path, progress: &mut dyn FnMut(Progress)) -> Result<JsAnalysis, JsError> {
    let opened = Roots::none().open(input)?;
    analyze_opened(
        &opened,
        &input.display().to_string(),
        &Deadline::analysis(),
        progress,
    )
}

/// [`analyze`] of an input already opened (beneath the allowed roots): `given` is how the caller
/// named it. Stops with [`JsError::Stopped`] once `deadline` passes.
pub fn analyze_opened(
    input: &Opened,
    given: &str,
    deadline: &Deadline,
    progress: &mut dyn FnMut(Progress),
) -> Result<JsAnalysis, JsError> {
    let (mut info, root) = source::open_input(input, given)?;
    let listing = root.list();
    let (files_sha256, unread) = files_digest(&root, &listing, deadline)?;
    info.files_sha256 = files_sha256;
    let files = FileSet::new(listing.files.iter().map(|f| f.path.clone()));
    let mut limitations = Vec::new();
    let mut diagnostics = Vec::new();
    let mut counts = Counts {
        files: listing.files.len(),
        node_modules_dirs: listing.node_modules_dirs.len(),
        ..Counts::default()
    };

    let all_sources: Vec<&FileRef> = listing
        .files
        .iter()
        .filter(|f| is_source_path(&f.path))
        .collect();
    counts.source_files = all_sources.len();
    let mut sources: Vec<FileRef> = Vec::new();
    let mut oversized = Vec::new();
    for f in &all_sources {
        if f.size > MAX_FILE_BYTES {
            oversized.push(f.path.clone());
        } else if sources.len() < MAX_SOURCE_FILES {
            sources.push((*f).clone());
        }
    }
    counts.skipped = all_sources.len() - sources.len();
    let html_files: Vec<&FileRef> = listing
        .files
        .iter()
        .filter(|f| is_html_path(&f.path))
        .collect();
    counts.html_files = html_files.len();
    let package_ref = listing.files.iter().find(|f| f.path == "package.json");
    let files_total = sources.len() + html_files.len() + usize::from(package_ref.is_some());
    let mut done = 0usize;
    let mut report = |current: &str, progress: &mut dyn FnMut(Progress)| {
        done += 1;
        progress(Progress {
            files_done: done,
            files_total,
            current: current.to_string(),
        });
    };

    // package.json
    let package = package_ref.and_then(|f| {
        report(&f.path, progress);
        match root.read(f, MAX_PACKAGE_JSON_BYTES) {
            Ok(raw) => match package_info(&decode(&raw)) {
                Ok(p) => Some(p),
                Err(e) => {
                    diagnostics.push(Diagnostic {
                        file: f.path.clone(),
                        message: format!("package.json is not valid JSON: {e}"),
                        line: u32::try_from(e.line()).unwrap_or(0),
                        column: u32::try_from(e.column()).unwrap_or(0),
                    });
                    None
                }
            },
            Err(e) => {
                diagnostics.push(Diagnostic {
                    file: f.path.clone(),
                    message: e,
                    line: 0,
                    column: 0,
                });
                None
            }
        }
    });

    // Sources, then HTML pages, read and parsed on a thread with a large stack; progress is
    // reported from this thread.
    let jobs: Vec<FileRef> = sources
        .iter()
        .cloned()
        .chain(html_files.iter().map(|f| (*f).clone()))
        .collect();
    // Facts go into the builder as each file is parsed, so only one file's facts are held at a
    // time (a 10 MB file of 300,000 IPC calls holds hundreds of megabytes of them).
    let mut builder = Builder {
        files: &files,
        modules: Vec::new(),
        processes: Vec::new(),
        ipc: BTreeMap::new(),
        windows: Vec::new(),
        exposed: Vec::new(),
        navigation: Vec::new(),
        occurrences: Vec::new(),
        dropped: Dropped::default(),
    };
    let mut html: BTreeMap<String, HtmlFacts> = BTreeMap::new();
    let mut too_deep = Vec::new();
    let mut handle_outcome = |file: &FileRef, outcome: Outcome| {
        // Pages are not source files: they do not enter the source counts.
        let source = !is_html_path(&file.path);
        let mut add_parsed = |parsed: ParsedFile, bytes: u64| {
            if source {
                counts.bytes += bytes;
                match parsed.status {
                    ParseStatus::Ok => counts.parsed += 1,
                    ParseStatus::Recovered => counts.recovered += 1,
                    ParseStatus::Failed => counts.failed += 1,
                }
            }
            for (message, loc) in parsed.diagnostics {
                diagnostics.push(Diagnostic {
                    file: file.path.clone(),
                    message,
                    line: loc.line,
                    column: loc.column,
                });
            }
            builder.add_file(&file.path, bytes, parsed.status, &parsed.facts);
        };
        match outcome {
            Outcome::Parsed { bytes, parsed } => add_parsed(parsed, bytes),
            Outcome::Page {
                bytes,
                html: facts,
                parsed,
            } => {
                match parsed {
                    Some(parsed) => add_parsed(parsed, bytes),
                    // A component without script is still a (trivially parsed) source file.
                    None if source => add_parsed(
                        ParsedFile {
                            facts: FileFacts::default(),
                            status: ParseStatus::Ok,
                            diagnostics: Vec::new(),
                        },
                        bytes,
                    ),
                    None => {}
                }
                html.insert(file.path.clone(), facts);
            }
            Outcome::Unreadable(message) => {
                counts.failed += usize::from(source);
                diagnostics.push(Diagnostic {
                    file: file.path.clone(),
                    message: format!("could not read: {message}"),
                    line: 0,
                    column: 0,
                });
            }
            Outcome::TooDeep { bytes } | Outcome::Crashed { bytes } => {
                if source {
                    counts.failed += 1;
                    counts.bytes += bytes;
                }
                too_deep.push(file.path.clone());
                builder.add_file(
                    &file.path,
                    bytes,
                    ParseStatus::Failed,
                    &FileFacts::default(),
                );
            }
        }
    };
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
        let root_ref = &root;
        let jobs_ref = &jobs;
        let worker = std::thread::Builder::new()
            .name("rea-js-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, move || {
                for (i, f) in jobs_ref.iter().enumerate() {
                    if deadline.expired() || tx.send((i, parse_one(root_ref, f))).is_err() {
                        break;
                    }
                }
            });
        match worker {
            Ok(_) => {
                for (i, outcome) in rx {
                    let file = &jobs[i];
                    report(&file.path, progress);
                    handle_outcome(file, outcome);
                }
            }
            // Without a thread, parse here with the caller's stack.
            Err(_) => {
                for file in &jobs {
                    if deadline.expired() {
                        break;
                    }
                    report(&file.path, progress);
                    handle_outcome(file, parse_one(&root, file));
                }
            }
        }
    });
    let stopped = || "the JavaScript analysis".to_string();
    deadline.check(stopped)?;

    for (path, facts) in &html {
        builder.add_html(path, facts);
    }
    builder.modules.sort_by(|a, b| a.path.cmp(&b.path));
    builder.add_main(package.as_ref());
    builder.add_renderers(&html);
    builder.mark_reachability();

    let electron_major = package.as_ref().and_then(|p| p.electron_major);
    let electron_defaults = findings::electron_defaults(electron_major);
    let Builder {
        modules,
        mut processes,
        ipc,
        mut windows,
        mut exposed,
        mut navigation,
        mut occurrences,
        dropped,
        ..
    } = builder;
    windows.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    exposed.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    navigation.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    processes.sort_by(|a, b| {
        (a.kind, &a.path, &a.file, a.line).cmp(&(b.kind, &b.path, &b.file, b.line))
    });
    processes.dedup();
    let findings = findings::findings(&windows, &navigation, &electron_defaults, electron_major);
    occurrences.sort();
    occurrences.dedup();

    // Limitations, in the order a reader meets them.
    if !unread.is_empty() {
        limitations.push(format!(
            "{} file(s) could not be read (or exceed {} MiB) and enter files_sha256 by path and size only: {}",
            unread.len(),
            MAX_DIGEST_FILE_BYTES >> 20,
            unread.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if !listing.node_modules_dirs.is_empty() {
        let dirs: Vec<_> = listing.node_modules_dirs.iter().take(5).cloned().collect();
        limitations.push(format!(
            "{} node_modules director{} not analyzed ({}); dependencies are listed from package.json only",
            listing.node_modules_dirs.len(),
            if listing.node_modules_dirs.len() == 1 { "y was" } else { "ies were" },
            dirs.join(", ")
        ));
    }
    if listing.links_skipped > 0 {
        limitations.push(format!(
            "{} symbolic link(s) were not followed",
            listing.links_skipped
        ));
    }
    if listing.truncated {
        limitations.push(format!(
            "the input holds more than {} files; only the first {} (by path) were listed",
            source::MAX_LISTED_FILES,
            source::MAX_LISTED_FILES
        ));
    }
    if !oversized.is_empty() {
        limitations.push(format!(
            "{} source file(s) larger than {} MiB were not parsed: {}",
            oversized.len(),
            MAX_FILE_BYTES >> 20,
            oversized
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let over_count = all_sources.len() - oversized.len();
    if over_count > MAX_SOURCE_FILES {
        limitations.push(format!(
            "only the first {MAX_SOURCE_FILES} of {over_count} source files (by path) were parsed"
        ));
    }
    if !too_deep.is_empty() {
        limitations.push(format!(
            "{} file(s) were not parsed because their nesting exceeds {MAX_NESTING} levels or the parser failed: {}",
            too_deep.len(),
            too_deep.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if windows.iter().any(|w| !w.notes.is_empty()) {
        limitations.push(
            "values are followed within one file (variables, spreads, same-file helper functions); some window options could not be resolved, see each window's notes"
                .to_string(),
        );
    }
    limitations.extend(dropped.limitations());
    if diagnostics.len() > MAX_DIAGNOSTICS {
        limitations.push(format!(
            "{} diagnostics were found; only the first {MAX_DIAGNOSTICS} are listed",
            diagnostics.len()
        ));
        diagnostics.truncate(MAX_DIAGNOSTICS);
    }

    Ok(JsAnalysis {
        input: info,
        package,
        electron_defaults,
        modules,
        processes,
        ipc: ipc.into_values().collect(),
        windows,
        exposed_apis: exposed,
        navigation,
        findings,
        occurrences,
        diagnostics,
        limitations,
        counts,
    })
}

/// Reads the facts the analysis needs from package.json text.
fn package_info(text: &str) -> Result<PackageInfo, serde_json::Error> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let string = |key: &str| v.get(key).and_then(|s| s.as_str()).map(str::to_string);
    let map = |key: &str| -> BTreeMap<String, String> {
        v.get(key)
            .and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .map(|(k, val)| {
                        let val = val.as_str().map_or_else(|| val.to_string(), str::to_string);
                        (k.clone(), val)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let dependencies = map("dependencies");
    let dev_dependencies = map("devDependencies");
    let electron_version = dependencies
        .get("electron")
        .or_else(|| dev_dependencies.get("electron"))
        .cloned();
    let electron_major = electron_version.as_deref().and_then(major_version);
    Ok(PackageInfo {
        name: string("name"),
        version: string("version"),
        product_name: string("productName"),
        main: string("main"),
        electron_version,
        electron_major,
        scripts: map("scripts"),
        dependencies,
        dev_dependencies,
    })
}

/// The first number of a version range such as `^25.7.0`, `~12`, `>=13.1` or `v28.0.0`.
fn major_version(range: &str) -> Option<u32> {
    let digits: String = range
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// IPC channels listed at most; call sites on later channels are counted, not listed.
const MAX_IPC_CHANNELS: usize = 2_000;

/// Sites listed per channel and role (handlers, callers, senders, listeners).
const MAX_IPC_SITES: usize = 100;

/// Occurrences (completion values) kept at most.
const MAX_OCCURRENCES: usize = 10_000;

/// Windows, exposed APIs and navigation calls listed at most, each.
const MAX_LISTED: usize = 1_000;

/// Imports listed per module at most.
const MAX_IMPORTS: usize = 1_000;

/// What the caps left out, for the limitations. The result of an analysis is recorded whole as
/// Evidence and sent whole to the client, so it is bounded whatever the input: before the caps,
/// 300,000 handlers in 10 MB gave a 186 MB result whose serialization took 40 s and 3 GiB.
#[derive(Debug, Default)]
struct Dropped {
    channel_sites: usize,
    sites: usize,
    occurrences: usize,
    windows: usize,
    exposed: usize,
    navigation: usize,
    imports: usize,
}

impl Dropped {
    fn limitations(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut note = |n: usize, text: String| {
            if n > 0 {
                out.push(text);
            }
        };
        note(
            self.channel_sites,
            format!(
                "{} IPC call site(s) on channels beyond the first {MAX_IPC_CHANNELS} were not listed",
                self.channel_sites
            ),
        );
        note(
            self.sites,
            format!(
                "{} IPC call site(s) beyond {MAX_IPC_SITES} per channel and role were not listed",
                self.sites
            ),
        );
        note(
            self.occurrences,
            format!(
                "{} occurrence(s) beyond the first {MAX_OCCURRENCES} were not kept",
                self.occurrences
            ),
        );
        for (n, what) in [
            (self.windows, "window(s)"),
            (self.exposed, "exposed API(s)"),
            (self.navigation, "navigation call(s)"),
        ] {
            note(
                n,
                format!("{n} {what} beyond the first {MAX_LISTED} were not listed"),
            );
        }
        note(
            self.imports,
            format!(
                "{} import(s) beyond {MAX_IMPORTS} per module were not listed",
                self.imports
            ),
        );
        out
    }
}

/// Accumulates the analysis from per-file facts, within the caps above.
struct Builder<'f> {
    files: &'f FileSet,
    modules: Vec<Module>,
    processes: Vec<ProcessEntry>,
    ipc: BTreeMap<String, IpcChannel>,
    windows: Vec<Window>,
    exposed: Vec<ExposedApi>,
    navigation: Vec<Navigation>,
    occurrences: Vec<Occurrence>,
    dropped: Dropped,
}

impl Builder<'_> {
    fn occurrence(&mut self, kind: OccurrenceKind, value: &str, file: &str, loc: Loc) {
        if self.occurrences.len() >= MAX_OCCURRENCES {
            self.dropped.occurrences += 1;
            return;
        }
        self.occurrences.push(Occurrence {
            kind,
            value: value.to_string(),
            file: file.to_string(),
            line: loc.line,
            column: loc.column,
        });
    }

    fn add_file(&mut self, path: &str, bytes: u64, status: ParseStatus, facts: &FileFacts) {
        self.dropped.imports += facts.imports.len().saturating_sub(MAX_IMPORTS);
        let imports = facts
            .imports
            .iter()
            .take(MAX_IMPORTS)
            .map(|i| {
                let (resolution, target) = match &i.specifier {
                    None => (Resolution::Dynamic, None),
                    Some(spec) if is_relative(spec) || spec.starts_with('/') => {
                        let found =
                            join(parent(path), spec).and_then(|p| self.files.resolve_file(&p));
                        match found {
                            Some(t) => (Resolution::Resolved, Some(t)),
                            None => (Resolution::Unresolved, None),
                        }
                    }
                    Some(spec) => (Resolution::External, Some(package_name(spec))),
                };
                Import {
                    specifier: i
                        .specifier
                        .clone()
                        .unwrap_or_else(|| "<dynamic>".to_string()),
                    kind: i.kind,
                    resolution,
                    target,
                    line: i.loc.line,
                    column: i.loc.column,
                }
            })
            .collect();
        self.modules.push(Module {
            path: path.to_string(),
            bytes,
            status,
            processes: Vec::new(),
            imports,
        });

        for call in &facts.ipc {
            let name = call
                .channel
                .clone()
                .unwrap_or_else(|| "<dynamic>".to_string());
            if !self.ipc.contains_key(&name) && self.ipc.len() >= MAX_IPC_CHANNELS {
                self.dropped.channel_sites += 1;
                continue;
            }
            let site = IpcSite {
                api: call.api.clone(),
                file: path.to_string(),
                line: call.loc.line,
                column: call.loc.column,
                expression: call.channel.is_none().then(|| call.expression.clone()),
            };
            let channel = self.ipc.entry(name.clone()).or_insert_with(|| IpcChannel {
                channel: name.clone(),
                handlers: Vec::new(),
                callers: Vec::new(),
                main_senders: Vec::new(),
                renderer_listeners: Vec::new(),
                matched: false,
            });
            let sites = match call.role {
                IpcRole::Handler => &mut channel.handlers,
                IpcRole::Caller => &mut channel.callers,
                IpcRole::MainSender => &mut channel.main_senders,
                IpcRole::RendererListener => &mut channel.renderer_listeners,
            };
            if sites.len() < MAX_IPC_SITES {
                sites.push(site);
            } else {
                self.dropped.sites += 1;
            }
            channel.matched = (!channel.handlers.is_empty() && !channel.callers.is_empty())
                || (!channel.main_senders.is_empty() && !channel.renderer_listeners.is_empty());
            if call.channel.is_some() {
                self.occurrence(OccurrenceKind::IpcChannel, &name, path, call.loc);
            }
        }

        for w in &facts.windows {
            self.add_window(path, w, "webPreferences.preload");
        }

        for e in &facts.exposed {
            if self.exposed.len() >= MAX_LISTED {
                self.dropped.exposed += 1;
                continue;
            }
            let key = e.key.clone().unwrap_or_else(|| "<dynamic>".to_string());
            if e.key.is_some() {
                self.occurrence(OccurrenceKind::ExposedApi, &key, path, e.loc);
                for m in e.members.iter().flatten() {
                    self.occurrence(
                        OccurrenceKind::ExposedApi,
                        &format!("{key}.{m}"),
                        path,
                        e.loc,
                    );
                }
            }
            self.exposed.push(ExposedApi {
                key,
                world: e.world.clone(),
                members: e.members.clone(),
                expression: e.expression.clone(),
                file: path.to_string(),
                line: e.loc.line,
                column: e.loc.column,
            });
        }

        for n in &facts.navigation {
            if self.navigation.len() >= MAX_LISTED {
                self.dropped.navigation += 1;
                continue;
            }
            let resolved = n
                .path
                .as_ref()
                .and_then(|p| resolve::resolve_path_expr(self.files, path, p));
            let target = resolved
                .clone()
                .or_else(|| n.literal.clone())
                .or_else(|| n.path.as_ref().map(describe_path_expr));
            if let Some(url) = &n.literal
                && n.path.is_none()
                && url.contains("://")
            {
                self.occurrence(OccurrenceKind::ExternalUrl, url, path, n.loc);
            }
            if let Some(html) = &resolved
                && matches!(n.kind, NavigationKind::LoadFile | NavigationKind::LoadUrl)
            {
                self.processes.push(ProcessEntry {
                    kind: ProcessKind::Renderer,
                    path: Some(html.clone()),
                    declared: n.expression.clone(),
                    exists: true,
                    source: if n.kind == NavigationKind::LoadFile {
                        "loadFile".to_string()
                    } else {
                        "loadURL".to_string()
                    },
                    file: Some(path.to_string()),
                    line: Some(n.loc.line),
                    column: Some(n.loc.column),
                });
            }
            self.navigation.push(Navigation {
                kind: n.kind,
                target,
                expression: n.expression.clone(),
                file: path.to_string(),
                line: n.loc.line,
                column: n.loc.column,
            });
        }
    }

    fn add_window(&mut self, path: &str, w: &RawWindow, preload_source: &str) {
        if self.windows.len() >= MAX_LISTED {
            self.dropped.windows += 1;
            return;
        }
        let settings = w
            .settings
            .iter()
            .map(|s| Setting {
                name: s.name.clone(),
                value: s.value,
                text: s.text.clone(),
                file: path.to_string(),
                line: s.loc.line,
                column: s.loc.column,
            })
            .collect();
        let mut preload = None;
        if let Some((expr, text)) = &w.preload {
            let resolved = resolve::resolve_path_expr(self.files, path, expr);
            let loc = w
                .settings
                .iter()
                .find(|s| s.name == "preload")
                .map_or(w.loc, |s| s.loc);
            let shown = resolved.clone().unwrap_or_else(|| describe_path_expr(expr));
            self.occurrence(OccurrenceKind::Preload, &shown, path, loc);
            self.processes.push(ProcessEntry {
                kind: ProcessKind::Preload,
                path: resolved.clone(),
                declared: text.clone(),
                exists: resolved.is_some(),
                source: preload_source.to_string(),
                file: Some(path.to_string()),
                line: Some(loc.line),
                column: Some(loc.column),
            });
            preload = Some(shown);
        }
        let label = match w.kind {
            WindowKind::BrowserWindow => "BrowserWindow",
            WindowKind::BrowserView => "BrowserView",
            WindowKind::Webview => "webview",
            WindowKind::OptionsObject => "options-object",
        };
        self.occurrence(OccurrenceKind::Window, label, path, w.loc);
        self.windows.push(Window {
            kind: w.kind,
            file: path.to_string(),
            line: w.loc.line,
            column: w.loc.column,
            options_source: w.options_source.clone(),
            settings,
            unset: w.unset.clone(),
            preload,
            notes: w.notes.clone(),
        });
    }

    fn add_html(&mut self, path: &str, facts: &HtmlFacts) {
        for w in &facts.webviews {
            self.add_window(path, w, "<webview preload>");
        }
        for (src, loc) in &facts.webview_srcs {
            if src.contains("://") {
                self.occurrence(OccurrenceKind::ExternalUrl, src, path, *loc);
            }
        }
        for (src, loc) in &facts.scripts {
            if is_remote(src) {
                self.occurrence(OccurrenceKind::ExternalUrl, src, path, *loc);
            }
        }
    }

    /// The main entry from package.json (or Electron's default `index.js`), and a conventional
    /// source location when the declared entry is a build output that is not in the input.
    fn add_main(&mut self, package: Option<&PackageInfo>) {
        let declared_main = package.and_then(|p| p.main.clone());
        let (declared, source) = match &declared_main {
            Some(m) => (m.clone(), "package.json main"),
            None => (
                "index.js".to_string(),
                "Electron default (no package.json main)",
            ),
        };
        let path = join("", &declared).and_then(|p| self.files.resolve_file(&p));
        let found = path.is_some();
        self.processes.push(ProcessEntry {
            kind: ProcessKind::Main,
            path: path.clone(),
            declared,
            exists: found,
            source: source.to_string(),
            file: package.map(|_| "package.json".to_string()),
            line: None,
            column: None,
        });
        if found {
            return;
        }
        let conventional = [
            "src/main",
            "src/main/main",
            "electron/main",
            "src/electron/main",
            "main",
            "src/index",
            "app/main",
            "index",
        ];
        if let Some(p) = conventional.iter().find_map(|c| self.files.resolve_file(c)) {
            self.processes.push(ProcessEntry {
                kind: ProcessKind::Main,
                path: Some(p.clone()),
                declared: p,
                exists: true,
                source: "conventional source location (the declared main is not in the input)"
                    .to_string(),
                file: None,
                line: None,
                column: None,
            });
        }
    }

    /// Scripts referenced by the HTML pages that windows load.
    fn add_renderers(&mut self, html: &BTreeMap<String, HtmlFacts>) {
        let pages: BTreeSet<String> = self
            .processes
            .iter()
            .filter(|p| p.kind == ProcessKind::Renderer)
            .filter_map(|p| p.path.clone())
            .collect();
        for page in pages {
            let Some(facts) = html.get(&page) else {
                continue;
            };
            for (src, loc) in &facts.scripts {
                if is_remote(src) {
                    continue;
                }
                let clean = src.split(['?', '#']).next().unwrap_or(src);
                // Bundlers such as Vite treat `/x` as relative to the page's root directory.
                let resolved = join(parent(&page), clean.trim_start_matches('/'))
                    .and_then(|p| self.files.resolve_file(&p))
                    .or_else(|| join("", clean).and_then(|p| self.files.resolve_file(&p)));
                self.processes.push(ProcessEntry {
                    kind: ProcessKind::Renderer,
                    path: resolved.clone(),
                    declared: src.clone(),
                    exists: resolved.is_some(),
                    source: format!("<script> in {page}"),
                    file: Some(page.clone()),
                    line: Some(loc.line),
                    column: Some(loc.column),
                });
            }
        }
    }

    /// Marks each module with the processes whose entries reach it through resolved imports.
    fn mark_reachability(&mut self) {
        let index: HashMap<String, usize> = self
            .modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        for kind in [
            ProcessKind::Main,
            ProcessKind::Preload,
            ProcessKind::Renderer,
        ] {
            let mut queue: VecDeque<usize> = self
                .processes
                .iter()
                .filter(|p| p.kind == kind)
                .filter_map(|p| p.path.as_ref().and_then(|path| index.get(path).copied()))
                .collect();
            let mut seen = vec![false; self.modules.len()];
            while let Some(i) = queue.pop_front() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                self.modules[i].processes.push(kind);
                for imp in &self.modules[i].imports {
                    if imp.resolution == Resolution::Resolved
                        && let Some(j) = imp.target.as_ref().and_then(|t| index.get(t))
                    {
                        queue.push_back(*j);
                    }
                }
            }
        }
    }
}

/// True for script sources fetched from the network.
fn is_remote(src: &str) -> bool {
    src.starts_with("http://") || src.starts_with("https://") || src.starts_with("//")
}

#[cfg(test)]
mod tests;
