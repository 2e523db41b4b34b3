//! The typed result of a JavaScript/Electron analysis: every struct here is serialized to the
//! agent and described by its JSON schema, so each field says what it holds.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reported once per file while an analysis runs, so a caller can show progress.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Progress {
    /// Files read so far (sources, HTML and package.json).
    pub files_done: usize,
    /// Files that will be read in total.
    pub files_total: usize,
    /// Relative path of the file being read now.
    pub current: String,
}

/// Everything found by statically analyzing one JavaScript/Electron application.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JsAnalysis {
    /// What was analyzed and how it was read.
    pub input: InputInfo,
    /// Facts from the root `package.json`, when there is one.
    pub package: Option<PackageInfo>,
    /// Electron's defaults for the web preferences that the findings consider, for the Electron
    /// version declared in package.json (or the current defaults when no version is known).
    pub electron_defaults: Vec<DefaultSetting>,
    /// Every parsed source file with its imports, sorted by path.
    pub modules: Vec<Module>,
    /// Entry points of the main, preload and renderer processes.
    pub processes: Vec<ProcessEntry>,
    /// IPC channels with their main-side handlers and renderer-side callers, sorted by name.
    pub ipc: Vec<IpcChannel>,
    /// Every `new BrowserWindow`/`new BrowserView`, `<webview>` tag, and stray object literal
    /// holding web-preference keys, with resolved settings.
    pub windows: Vec<Window>,
    /// `contextBridge.exposeInMainWorld` / `exposeInIsolatedWorld` calls.
    pub exposed_apis: Vec<ExposedApi>,
    /// `loadURL`, `loadFile`, `shell.openExternal` and navigation/permission handlers.
    pub navigation: Vec<Navigation>,
    /// Security findings, most severe first.
    pub findings: Vec<Finding>,
    /// Flat list of notable items (IPC channels, windows, exposed APIs, external URLs, preloads).
    pub occurrences: Vec<Occurrence>,
    /// Parser diagnostics (syntax errors recovered from) and read errors, per file.
    pub diagnostics: Vec<Diagnostic>,
    /// What the analysis did not look at or could not resolve, in sentences.
    pub limitations: Vec<String>,
    /// How much was read and parsed.
    pub counts: Counts,
}

/// The shape of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// A directory: an unpacked application or a source tree.
    Dir,
    /// An `app.asar` archive, read in place (with its sibling `app.asar.unpacked/`).
    Asar,
    /// A macOS `.app` bundle whose `Contents/Resources/app.asar` (or `app/`) was analyzed.
    App,
}

/// What was analyzed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InputInfo {
    /// Directory, asar archive or `.app` bundle.
    pub kind: InputKind,
    /// The path as given by the caller.
    pub path: String,
    /// The directory or archive whose files were read (all other paths are relative to it).
    pub root: String,
    /// For an asar: lowercase hex SHA-256 of its JSON header (Electron's `ElectronAsarIntegrity`).
    pub asar_header_sha256: Option<String>,
    /// Lowercase hex SHA-256 of the application's files: every listed file (all but
    /// `node_modules` and `.git`), by path, as its path, size and the SHA-256 of its bytes. The
    /// same for a directory and the asar packed from it; two versions of a package differ here
    /// even when their sources parse alike. The analysis Evidence's subject digest.
    pub files_sha256: String,
}

/// Facts from `package.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PackageInfo {
    /// `name`.
    pub name: Option<String>,
    /// `version`.
    pub version: Option<String>,
    /// `productName`, which Electron uses as the application name.
    pub product_name: Option<String>,
    /// `main`: the main-process entry as declared (Electron defaults to `index.js`).
    pub main: Option<String>,
    /// The version range of `electron` in dependencies or devDependencies.
    pub electron_version: Option<String>,
    /// The major Electron version read from that range, when it starts with a number.
    pub electron_major: Option<u32>,
    /// `scripts`, name to command.
    pub scripts: BTreeMap<String, String>,
    /// `dependencies`, name to version range. Their code under node_modules is not analyzed.
    pub dependencies: BTreeMap<String, String>,
    /// `devDependencies`, name to version range.
    pub dev_dependencies: BTreeMap<String, String>,
}

/// Electron's default for one web preference.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DefaultSetting {
    /// The `webPreferences` key.
    pub name: String,
    /// The value Electron uses when the key is not set.
    pub default: bool,
    /// Since when that default holds, or why.
    pub note: String,
}

/// How well a source file parsed (ordered from best to worst).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ParseStatus {
    /// Parsed without diagnostics.
    Ok,
    /// Parsed with recoverable syntax errors; facts from the recovered tree are kept.
    Recovered,
    /// The parser gave up; nothing was learned from the file.
    Failed,
}

/// One source file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Module {
    /// Path relative to the input root, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// How it parsed.
    pub status: ParseStatus,
    /// Processes whose entry points reach this file through resolved imports.
    pub processes: Vec<ProcessKind>,
    /// `import`, `export … from`, `import()` and `require()` of this file, in source order.
    pub imports: Vec<Import>,
}

/// How a module was imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ImportKind {
    /// `import … from "x"` (or a side-effect `import "x"`).
    Import,
    /// `export … from "x"`.
    ExportFrom,
    /// `import("x")`.
    DynamicImport,
    /// `require("x")` (or TypeScript `import x = require("x")`).
    Require,
}

/// What an import specifier resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// A file of the application (`target` is its path).
    Resolved,
    /// A relative path that matches no file of the application.
    Unresolved,
    /// A bare specifier: a package or Node built-in (`target` is the package name).
    External,
    /// The specifier is computed at run time.
    Dynamic,
}

/// One import edge.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Import {
    /// The specifier as written (`<dynamic>` when computed).
    pub specifier: String,
    /// The syntax used.
    pub kind: ImportKind,
    /// What it resolved to.
    pub resolution: Resolution,
    /// The resolved file path or external package name.
    pub target: Option<String>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in bytes from the start of the line.
    pub column: u32,
}

/// An Electron process type.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ProcessKind {
    /// The Node.js main process.
    Main,
    /// A preload script, run before a renderer's page.
    Preload,
    /// Page code in a renderer.
    Renderer,
}

/// One entry point of a process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessEntry {
    /// Which process.
    pub kind: ProcessKind,
    /// The entry file, relative to the root, when it was resolved to a file of the application.
    pub path: Option<String>,
    /// The value as written (package.json `main`, the preload expression, the HTML `src`).
    pub declared: String,
    /// Whether `path` names a file present in the input.
    pub exists: bool,
    /// How the entry was found (`package.json main`, `webPreferences.preload`, `loadFile`, …).
    pub source: String,
    /// File where it was declared, when it comes from code or HTML.
    pub file: Option<String>,
    /// 1-based line of the declaration.
    pub line: Option<u32>,
    /// 1-based column of the declaration.
    pub column: Option<u32>,
}

/// One call site of an IPC API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IpcSite {
    /// The API called, for example `ipcMain.handle` or `webContents.send`.
    pub api: String,
    /// Relative path of the file.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in bytes.
    pub column: u32,
    /// For a `<dynamic>` channel: the channel expression as written.
    pub expression: Option<String>,
}

/// One IPC channel and everything that uses it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IpcChannel {
    /// The channel name, or `<dynamic>` for channels computed at run time.
    pub channel: String,
    /// Main-process receivers: `ipcMain.handle/handleOnce/on/once/removeHandler`.
    pub handlers: Vec<IpcSite>,
    /// Renderer-side senders: `ipcRenderer.invoke/send/sendSync/postMessage/sendToHost`.
    pub callers: Vec<IpcSite>,
    /// Main-process senders towards renderers: `webContents.send/postMessage`, `event.sender.send`,
    /// `event.reply`.
    pub main_senders: Vec<IpcSite>,
    /// Renderer-side listeners: `ipcRenderer.on/once/addListener`.
    pub renderer_listeners: Vec<IpcSite>,
    /// True when both ends were found in either direction (handler and caller, or sender and
    /// listener).
    pub matched: bool,
}

/// The kind of window-like object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WindowKind {
    /// `new BrowserWindow(options)`.
    BrowserWindow,
    /// `new BrowserView(options)` or `new WebContentsView(options)`.
    BrowserView,
    /// A `<webview>` tag in an HTML file.
    Webview,
    /// An object literal holding web-preference keys that no window construction was seen to
    /// use (options built through helper functions).
    OptionsObject,
}

/// A resolved web-preference value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingValue {
    /// Literally true (or `!0`, or a present boolean HTML attribute).
    True,
    /// Literally false (or `!1`).
    False,
    /// Some other value (a string, a path, an expression) shown in `text`.
    Other,
    /// Set from something the analysis could not follow.
    Unresolved,
}

/// One web preference as set in code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Setting {
    /// The `webPreferences` key, for example `nodeIntegration`.
    pub name: String,
    /// Its resolved value.
    pub value: SettingValue,
    /// The value as written (shortened).
    pub text: String,
    /// File where the property is written.
    pub file: String,
    /// 1-based line of the property.
    pub line: u32,
    /// 1-based column of the property.
    pub column: u32,
}

/// A window, view, webview tag or stray options object and its security-relevant settings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Window {
    /// What it is.
    pub kind: WindowKind,
    /// File of the construction (or tag, or object literal).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Where the options came from: `inline`, `variable <name>`, `function <name>`, `html`, `object literal`.
    pub options_source: String,
    /// The web preferences set explicitly (see `electron_defaults` for the rest).
    pub settings: Vec<Setting>,
    /// Tracked web preferences that were not set, so Electron's default applies.
    pub unset: Vec<String>,
    /// The preload script, resolved to a file of the application when possible.
    pub preload: Option<String>,
    /// What could not be resolved (spreads of unknown values, options from calls).
    pub notes: Vec<String>,
}

/// A `contextBridge` exposure.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExposedApi {
    /// The global name in the page (`window.<key>`), or `<dynamic>`.
    pub key: String,
    /// `main`, or `isolated:<world id>` for `exposeInIsolatedWorld`.
    pub world: String,
    /// Property names of the exposed object, when it is an object literal (directly or via a
    /// variable); `None` when unknown.
    pub members: Option<Vec<String>>,
    /// The exposed value as written (shortened).
    pub expression: String,
    /// File of the call.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// The kind of navigation-related call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NavigationKind {
    /// `loadURL(url)`.
    LoadUrl,
    /// `loadFile(path)`.
    LoadFile,
    /// `shell.openExternal(url)`.
    OpenExternal,
    /// `webContents.setWindowOpenHandler(handler)`.
    WindowOpenHandler,
    /// `session.setPermissionRequestHandler(handler)`.
    PermissionRequestHandler,
    /// `session.setPermissionCheckHandler(handler)`.
    PermissionCheckHandler,
    /// `.on('will-navigate', …)`.
    WillNavigateHandler,
    /// `.on('new-window', …)` (deprecated).
    NewWindowHandler,
}

/// One navigation-related call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Navigation {
    /// What kind of call.
    pub kind: NavigationKind,
    /// The target when it is known statically (a literal URL or a resolved file path).
    pub target: Option<String>,
    /// The argument as written (shortened).
    pub expression: String,
    /// File of the call.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// How serious a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Remote code or full Node.js access is reachable from web content.
    High,
    /// A protection is off or an input is unchecked.
    Medium,
    /// Hardening that is missing.
    Low,
    /// Worth knowing, not a weakness by itself.
    Info,
}

/// One security finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// Stable rule id, for example `node-integration-enabled`.
    pub rule: String,
    /// What was found, in a sentence.
    pub message: String,
    /// File.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Kinds of occurrence.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum OccurrenceKind {
    /// An IPC channel name at one use.
    IpcChannel,
    /// A window, view or webview.
    Window,
    /// A key exposed through contextBridge.
    ExposedApi,
    /// A literal URL loaded or opened.
    ExternalUrl,
    /// A preload script path.
    Preload,
}

/// A notable item found at one place, for completion and cross-referencing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Occurrence {
    /// What it is.
    pub kind: OccurrenceKind,
    /// The item: channel name, window kind, exposed key, URL or preload path.
    pub value: String,
    /// File.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// A parser diagnostic or a per-file read problem.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// File.
    pub file: String,
    /// The message.
    pub message: String,
    /// 1-based line (0 when the problem is not tied to a position).
    pub line: u32,
    /// 1-based column (0 when not tied to a position).
    pub column: u32,
}

/// How much was read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    /// Files listed in the input, outside node_modules.
    pub files: usize,
    /// Source files (`.js .mjs .cjs .ts .tsx .jsx` and TypeScript variants) among them.
    pub source_files: usize,
    /// HTML files among them.
    pub html_files: usize,
    /// Bytes of source files read.
    pub bytes: u64,
    /// Source files parsed without errors.
    pub parsed: usize,
    /// Source files parsed with recoverable errors.
    pub recovered: usize,
    /// Source files that could not be read or parsed at all.
    pub failed: usize,
    /// Source files skipped by the size or count caps.
    pub skipped: usize,
    /// Top-most `node_modules` directories that were not analyzed.
    pub node_modules_dirs: usize,
}
