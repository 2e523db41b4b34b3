//! Tests of the whole analysis on real applications: nativefier's bundled main and preload,
//! the create-electron templates, and an `app.asar` packed by @electron/asar 3.4.1.

use std::path::{Path, PathBuf};

use super::*;

pub(super) fn fixtures() -> PathBuf {
    std::env::var("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
}

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/analyzers/javascript/testdata")
}

/// A fresh, empty temporary directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("rea-js-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    TempDir(dir)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn run(path: &Path) -> JsAnalysis {
    analyze(path, &mut |_| {}).expect("analysis succeeds")
}

/// nativefier 52.0.0's three files, laid out as in its `app/` directory.
fn nativefier_dir(test: &str) -> TempDir {
    let app = fixtures().join("nativefier/package/app");
    let dir = temp_dir(&format!("nativefier-{test}"));
    std::fs::create_dir_all(dir.join("lib")).expect("mkdir");
    for rel in ["lib/main.js", "lib/preload.js", "package.json"] {
        std::fs::copy(app.join(rel), dir.join(rel)).expect("copy nativefier file");
    }
    dir
}

fn channel<'a>(a: &'a JsAnalysis, name: &str) -> &'a IpcChannel {
    a.ipc
        .iter()
        .find(|c| c.channel == name)
        .unwrap_or_else(|| panic!("channel {name} missing"))
}

fn where_(sites: &[IpcSite]) -> Vec<(String, String, u32)> {
    sites
        .iter()
        .map(|s| (s.api.clone(), s.file.clone(), s.line))
        .collect()
}

fn site(api: &str, file: &str, line: u32) -> (String, String, u32) {
    (api.to_string(), file.to_string(), line)
}

#[test]
fn nativefier_package_processes_and_modules() {
    let a = run(&nativefier_dir("package"));
    let p = a.package.as_ref().expect("package.json");
    assert_eq!(p.name.as_deref(), Some("nativefier-placeholder"));
    assert_eq!(p.main.as_deref(), Some("lib/main.js"));
    assert_eq!(p.electron_version.as_deref(), Some("^25.7.0"));
    assert_eq!(p.electron_major, Some(25));
    assert!(p.dependencies.contains_key("electron-dl"));
    assert_eq!(a.counts.files, 3);
    assert_eq!(a.counts.source_files, 2);
    assert_eq!(a.counts.parsed, 2);
    assert_eq!(a.counts.bytes, 509_393 + 12_478);
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);

    let entries: Vec<_> = a
        .processes
        .iter()
        .map(|p| (p.kind, p.path.as_deref(), p.source.as_str(), p.line))
        .collect();
    assert_eq!(
        entries,
        [
            (
                ProcessKind::Main,
                Some("lib/main.js"),
                "package.json main",
                None
            ),
            (
                ProcessKind::Preload,
                Some("lib/preload.js"),
                "webPreferences.preload",
                Some(5824)
            ),
        ]
    );
    let preload = a
        .modules
        .iter()
        .find(|m| m.path == "lib/preload.js")
        .expect("module");
    assert_eq!(preload.processes, [ProcessKind::Preload]);
    let main = a
        .modules
        .iter()
        .find(|m| m.path == "lib/main.js")
        .expect("module");
    assert_eq!(main.processes, [ProcessKind::Main]);
    // The webpack bundle still requires Node built-ins and electron by name.
    assert!(
        main.imports.iter().any(
            |i| i.resolution == Resolution::External && i.target.as_deref() == Some("electron")
        )
    );
}

#[test]
fn nativefier_ipc_map() {
    let a = run(&nativefier_dir("ipc"));
    let names: Vec<_> = a.ipc.iter().map(|c| c.channel.as_str()).collect();
    assert_eq!(
        names,
        [
            "debug",
            "desktop-capturer-get-sources",
            "login-message",
            "notification",
            "notification-click",
            "open-url",
            "params",
            "session-interaction",
            "session-interaction-reply",
        ]
    );
    // The six channels the preload script uses with the main process, both ends found.
    let matched: Vec<_> = a
        .ipc
        .iter()
        .filter(|c| c.matched)
        .map(|c| c.channel.as_str())
        .collect();
    assert_eq!(
        matched,
        [
            "debug",
            "desktop-capturer-get-sources",
            "notification",
            "notification-click",
            "params"
        ]
    );
    let c = channel(&a, "desktop-capturer-get-sources");
    assert_eq!(
        where_(&c.handlers),
        [site("ipcMain.handle", "lib/main.js", 6176)]
    );
    assert_eq!(
        where_(&c.callers),
        [site("ipcRenderer.invoke", "lib/preload.js", 262)]
    );
    let c = channel(&a, "notification");
    assert_eq!(
        where_(&c.handlers),
        [
            site("ipcMain.on", "lib/main.js", 6183),
            site("ipcMain.on", "lib/main.js", 10629)
        ]
    );
    assert_eq!(
        where_(&c.callers),
        [site("ipcRenderer.send", "lib/preload.js", 302)]
    );
    let c = channel(&a, "params");
    assert_eq!(
        where_(&c.main_senders),
        [site("webContents.send", "lib/main.js", 5942)]
    );
    assert_eq!(
        where_(&c.renderer_listeners),
        [site("ipcRenderer.on", "lib/preload.js", 310)]
    );
    let c = channel(&a, "login-message");
    assert_eq!(
        where_(&c.handlers),
        [site("ipcMain.once", "lib/main.js", 4923)]
    );
    assert!(
        c.callers.is_empty(),
        "its caller is static/login.js, not copied"
    );
    let c = channel(&a, "session-interaction-reply");
    assert_eq!(c.main_senders.len(), 3);
    assert!(
        a.occurrences
            .iter()
            .any(|o| o.kind == OccurrenceKind::IpcChannel
                && o.value == "open-url"
                && o.file == "lib/main.js"
                && o.line == 206)
    );
}

#[test]
fn nativefier_insecure_windows() {
    let a = run(&nativefier_dir("windows"));
    let windows: Vec<_> = a.windows.iter().map(|w| (w.kind, w.line)).collect();
    assert_eq!(
        windows,
        [
            (WindowKind::BrowserWindow, 4910),
            (WindowKind::BrowserWindow, 5789),
            (WindowKind::BrowserWindow, 6049),
        ]
    );
    // The login window sets its preferences inline.
    let login = &a.windows[0];
    let settings: Vec<_> = login
        .settings
        .iter()
        .map(|s| (s.name.as_str(), s.value, s.line))
        .collect();
    assert_eq!(
        settings,
        [
            ("nodeIntegration", SettingValue::True, 4917),
            ("contextIsolation", SettingValue::False, 4918),
            ("sandbox", SettingValue::False, 4919),
        ]
    );
    // The main window's options come from getDefaultWindowOptions(), which builds them in the
    // variable `defaultOptions` and returns it.
    let main = &a.windows[2];
    let get = |name: &str| {
        main.settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| (s.value, s.line))
    };
    assert_eq!(get("contextIsolation"), Some((SettingValue::False, 5838)));
    assert_eq!(get("nodeIntegration"), Some((SettingValue::False, 5823)));
    assert_eq!(get("webSecurity"), Some((SettingValue::Unresolved, 5827)));
    assert_eq!(main.preload.as_deref(), Some("lib/preload.js"));

    let found: Vec<_> = a
        .findings
        .iter()
        .map(|f| (f.severity, f.rule.as_str(), f.file.as_str(), f.line))
        .collect();
    for expected in [
        (
            Severity::High,
            "node-integration-without-context-isolation",
            "lib/main.js",
            4910,
        ),
        (
            Severity::Medium,
            "node-integration-enabled",
            "lib/main.js",
            4917,
        ),
        (
            Severity::Medium,
            "context-isolation-disabled",
            "lib/main.js",
            4918,
        ),
        (
            Severity::Medium,
            "context-isolation-disabled",
            "lib/main.js",
            5838,
        ),
        (
            Severity::Medium,
            "open-external-non-literal",
            "lib/main.js",
            5633,
        ),
        (Severity::Low, "sandbox-disabled", "lib/main.js", 4919),
    ] {
        assert!(
            found.contains(&expected),
            "missing {expected:?} in {found:#?}"
        );
    }
    // One finding per written property, even though two windows share the helper's options.
    assert_eq!(
        found
            .iter()
            .filter(|f| f.1 == "context-isolation-disabled" && f.3 == 5838)
            .count(),
        1
    );
    assert_eq!(a.findings[0].severity, Severity::High);
    let kinds: Vec<_> = a.navigation.iter().map(|n| n.kind).collect();
    assert!(kinds.contains(&NavigationKind::PermissionRequestHandler));
    assert!(kinds.contains(&NavigationKind::WindowOpenHandler));
}

/// Every create-electron template (JavaScript, TypeScript, JSX/TSX) resolves its preload,
/// exposes `electron` and `api` through contextBridge, and loads its renderer page.
#[test]
fn create_electron_templates() {
    let root = fixtures().join("create-electron/package/template");
    for (template, ext, script) in [
        ("vanilla", "js", "src/renderer/src/renderer.js"),
        ("vanilla-ts", "ts", "src/renderer/src/renderer.ts"),
        ("react", "js", "src/renderer/src/main.jsx"),
        ("react-ts", "ts", "src/renderer/src/main.tsx"),
        ("vue-ts", "ts", "src/renderer/src/main.ts"),
        ("svelte", "js", "src/renderer/src/main.js"),
    ] {
        let a = run(&root.join(template));
        assert_eq!(a.counts.failed + a.counts.recovered, 0, "{template}");
        let preload = format!("src/preload/index.{ext}");
        let main = format!("src/main/index.{ext}");
        let entries: Vec<_> = a
            .processes
            .iter()
            .filter(|p| p.exists)
            .map(|p| (p.kind, p.path.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            entries,
            [
                (ProcessKind::Main, main.clone()),
                (ProcessKind::Preload, preload.clone()),
                (ProcessKind::Renderer, "src/renderer/index.html".to_string()),
                (ProcessKind::Renderer, script.to_string()),
            ],
            "{template}"
        );
        let declared = &a.processes[0];
        assert_eq!(declared.declared, "./out/main/index.js");
        assert!(!declared.exists);

        let exposed: Vec<_> = a
            .exposed_apis
            .iter()
            .map(|e| (e.key.as_str(), e.file.as_str(), e.line, e.members.clone()))
            .collect();
        assert_eq!(
            exposed,
            [
                ("electron", preload.as_str(), 12, None),
                ("api", preload.as_str(), 13, Some(vec![])),
            ],
            "{template}"
        );
        let window = &a.windows[0];
        assert_eq!(window.kind, WindowKind::BrowserWindow);
        assert_eq!((window.file.as_str(), window.line), (main.as_str(), 8));
        assert_eq!(window.preload.as_deref(), Some(preload.as_str()));
        assert!(window.notes.is_empty(), "{:?}", window.notes);
        let rules: Vec<_> = a.findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(
            rules,
            ["open-external-non-literal", "sandbox-disabled"],
            "{template}"
        );
        let ping = channel(&a, "ping");
        assert_eq!(where_(&ping.handlers), [site("ipcMain.on", &main, 53)]);
        // Vue and Svelte components call IPC from their <script> blocks.
        assert!(ping.matched, "{template}");
        assert_eq!(ping.callers.len(), 1, "{template}");
        if template == "vue-ts" {
            // Lines inside a component's <script> block count from the top of the component.
            assert_eq!(
                where_(&ping.callers),
                [site("ipcRenderer.send", "src/renderer/src/App.vue", 4)]
            );
            assert_eq!(ping.callers[0].column, 31);
        }
        let preload_module = a
            .modules
            .iter()
            .find(|m| m.path == preload)
            .expect("module");
        assert_eq!(preload_module.processes, [ProcessKind::Preload]);
        assert!(
            preload_module
                .imports
                .iter()
                .any(|i| i.specifier == "electron"
                    && i.kind == ImportKind::Import
                    && i.resolution == Resolution::External)
        );
    }
}

/// Everything but the description of the input, as JSON, for comparing two inputs.
fn graph(a: &JsAnalysis) -> serde_json::Value {
    let mut v = serde_json::to_value(a).expect("serialize");
    if let Some(o) = v.as_object_mut() {
        o.remove("input");
    }
    v
}

#[test]
fn asar_gives_the_same_graph_as_its_directory() {
    let asar = testdata().join("app.asar");
    let packed = run(&asar);
    assert_eq!(packed.input.kind, InputKind::Asar);
    assert_eq!(
        packed.input.asar_header_sha256.as_deref(),
        Some("2e115ce4aeb40575a5f199455c0f8833390d3f8e37e1db6da7fa925ad27a0bcf")
    );
    // The unpacked preload script was read from app.asar.unpacked/.
    let preload = packed
        .modules
        .iter()
        .find(|m| m.path == "src/preload/index.js")
        .expect("preload module");
    assert_eq!(preload.status, ParseStatus::Ok);
    assert_eq!(packed.exposed_apis.len(), 2);

    let dir = run(&fixtures().join("create-electron/package/template/vanilla"));
    assert_eq!(dir.input.kind, InputKind::Dir);
    assert_eq!(graph(&packed), graph(&dir));
}

#[test]
fn app_bundle_and_resources_layouts_read_the_asar() {
    let data = testdata();
    let scratch = temp_dir("bundle");
    let bundle = scratch.join("Demo.app");
    let resources = bundle.join("Contents/Resources");
    std::fs::create_dir_all(&resources).expect("mkdir");
    std::fs::copy(data.join("app.asar"), resources.join("app.asar")).expect("copy");
    copy_dir(
        &data.join("app.asar.unpacked"),
        &resources.join("app.asar.unpacked"),
    );
    assert!(looks_like_javascript_app(&bundle));
    let a = run(&bundle);
    assert_eq!(a.input.kind, InputKind::App);
    assert!(a.input.root.ends_with("app.asar"));
    let reference = run(&data.join("app.asar"));
    assert_eq!(graph(&a), graph(&reference));

    // A Linux/Windows build keeps the archive under resources/.
    let build = temp_dir("linux-build");
    std::fs::create_dir_all(build.join("resources")).expect("mkdir");
    std::fs::copy(data.join("app.asar"), build.join("resources/app.asar")).expect("copy");
    assert!(looks_like_javascript_app(&build));
    let a = run(&build);
    assert_eq!(a.input.kind, InputKind::Dir);
    // Without the unpacked directory the preload cannot be read: a diagnostic, not an error.
    assert_eq!(a.counts.failed, 1);
    assert!(
        a.diagnostics
            .iter()
            .any(|d| d.file == "src/preload/index.js")
    );
}

#[test]
fn malformed_asar_is_a_clear_error() {
    let dir = temp_dir("bad-asar");
    let path = dir.join("app.asar");
    let mut bytes = std::fs::read(testdata().join("app.asar")).expect("read");
    bytes[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).expect("write");
    let err = analyze(&path, &mut |_| {}).expect_err("malformed");
    assert!(
        matches!(err, JsError::Asar(AsarError::HeaderPastEnd { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("past the end"), "{err}");
}

#[test]
fn unrecognised_inputs_are_errors() {
    let empty = temp_dir("empty");
    assert!(!looks_like_javascript_app(&empty));
    let err = analyze(&empty, &mut |_| {}).expect_err("not an app");
    assert!(matches!(err, JsError::NotAnApplication { .. }), "{err}");
    let err = analyze(&empty.join("missing"), &mut |_| {}).expect_err("missing");
    assert!(matches!(err, JsError::Io { .. }), "{err}");
}

#[test]
fn broken_files_deep_nesting_and_node_modules_do_not_fail_the_analysis() {
    let dir = temp_dir("broken");
    write(
        &dir,
        "package.json",
        r#"{"name":"b","main":"main.js","dependencies":{"left-pad":"1"}}"#,
    );
    write(
        &dir,
        "main.js",
        "const { BrowserWindow, ipcMain } = require('electron');\nrequire('./util');\nipcMain.handle('ok', () => 1);\nnew BrowserWindow({ webPreferences: { webSecurity: false, allowRunningInsecureContent: true } }).loadURL('http://example.com');\n",
    );
    // oxc recovers from `new.target` outside a function, and gives up on a dangling `{`.
    write(&dir, "util.js", "module.exports = new.target;\n");
    write(&dir, "broken.js", "module.exports = function (a, { ;\n");
    write(
        &dir,
        "deep.js",
        &format!("x = {}1{};", "(".repeat(12_000), ")".repeat(12_000)),
    );
    write(
        &dir,
        "node_modules/left-pad/index.js",
        "module.exports = 1;",
    );
    let mut calls = Vec::new();
    let a = analyze(&dir, &mut |p| calls.push(p)).expect("analysis");
    assert_eq!(a.counts.files, 5, "node_modules is not listed");
    assert_eq!(
        (a.counts.parsed, a.counts.recovered, a.counts.failed),
        (1, 1, 2)
    );
    assert!(
        a.diagnostics
            .iter()
            .any(|d| d.file == "util.js" && d.line == 1)
    );
    assert!(
        a.diagnostics
            .iter()
            .any(|d| d.file == "broken.js" && d.line == 1)
    );
    assert!(a.limitations.iter().any(|l| l.contains("node_modules")));
    assert_eq!(a.counts.node_modules_dirs, 1);
    assert!(a.limitations.iter().any(|l| l.contains("deep.js")));
    let main = a
        .modules
        .iter()
        .find(|m| m.path == "main.js")
        .expect("main");
    assert_eq!(main.imports[1].target.as_deref(), Some("util.js"));
    let rules: Vec<_> = a
        .findings
        .iter()
        .map(|f| (f.rule.as_str(), f.line))
        .collect();
    assert_eq!(
        rules,
        [
            ("web-security-disabled", 4),
            ("load-insecure-url", 4),
            ("insecure-content-allowed", 4)
        ]
    );
    assert!(
        a.occurrences
            .iter()
            .any(|o| o.kind == OccurrenceKind::ExternalUrl && o.value == "http://example.com")
    );
    // Progress: once per file read (package.json, four sources), counting up to the total.
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|p| p.files_total == 5));
    assert_eq!(calls.last().map(|p| p.files_done), Some(5));
}

#[test]
fn webview_tags_and_old_electron_defaults() {
    let dir = temp_dir("webview");
    write(
        &dir,
        "package.json",
        r#"{"main":"main.js","devDependencies":{"electron":"~9.4.0"}}"#,
    );
    write(
        &dir,
        "main.js",
        "const { BrowserWindow } = require('electron');\nconst w = new BrowserWindow({ webPreferences: { nodeIntegration: true, webviewTag: true } });\nw.loadFile('index.html');\n",
    );
    write(
        &dir,
        "index.html",
        "<html><body>\n<webview src=\"https://example.com\" nodeintegration allowpopups></webview>\n<script src=\"renderer.js\"></script>\n<script>\n  require('electron').ipcRenderer.invoke('inline-call');\n</script></body></html>",
    );
    write(
        &dir,
        "renderer.js",
        "require('electron').ipcRenderer.send('hello');\n",
    );
    let a = run(&dir);
    let rules: Vec<_> = a
        .findings
        .iter()
        .map(|f| (f.severity, f.rule.as_str(), f.file.as_str(), f.line))
        .collect();
    assert_eq!(
        rules,
        [
            (
                Severity::High,
                "node-integration-without-context-isolation",
                "index.html",
                2
            ),
            (
                Severity::High,
                "node-integration-without-context-isolation",
                "main.js",
                2
            ),
            (
                Severity::Medium,
                "context-isolation-off-by-default",
                "index.html",
                2
            ),
            (
                Severity::Medium,
                "node-integration-enabled",
                "index.html",
                2
            ),
            (
                Severity::Medium,
                "context-isolation-off-by-default",
                "main.js",
                2
            ),
            (Severity::Medium, "node-integration-enabled", "main.js", 2),
            (Severity::Medium, "webview-tag-enabled", "main.js", 2),
            (Severity::Low, "webview-allowpopups", "index.html", 2),
        ]
    );
    let renderer = a
        .modules
        .iter()
        .find(|m| m.path == "renderer.js")
        .expect("renderer");
    assert_eq!(renderer.processes, [ProcessKind::Renderer]);
    // The page's inline script is parsed too, with lines counted from the top of the page.
    let inline = channel(&a, "inline-call");
    assert_eq!(
        where_(&inline.callers),
        [site("ipcRenderer.invoke", "index.html", 5)]
    );
    let page = a
        .modules
        .iter()
        .find(|m| m.path == "index.html")
        .expect("page");
    assert_eq!(page.processes, [ProcessKind::Renderer]);
    assert_eq!(a.counts.source_files, 2, "pages are not counted as sources");
    assert_eq!(a.counts.node_modules_dirs, 0);
    let defaults = &a.electron_defaults;
    assert!(
        defaults
            .iter()
            .any(|d| d.name == "contextIsolation" && !d.default)
    );
}

#[test]
fn report_orders_summary_findings_then_ipc_map() {
    let a = run(&nativefier_dir("report"));
    let text = render_report(&a);
    let summary = text.find("Processes:").expect("summary");
    let high = text.find("HIGH").expect("high");
    let medium = text.find("MEDIUM").expect("medium");
    let ipc = text.find("IPC map (9 channels)").expect("ipc map");
    assert!(summary < high && high < medium && medium < ipc, "{text}");
    assert!(text.contains("desktop-capturer-get-sources"));
}

#[test]
fn result_schema_describes_every_field() {
    let schema = serde_json::to_value(schemars::schema_for!(JsAnalysis)).expect("schema");
    let props = schema["properties"].as_object().expect("properties");
    for key in [
        "input",
        "package",
        "modules",
        "processes",
        "ipc",
        "windows",
        "exposed_apis",
        "navigation",
        "findings",
        "occurrences",
        "diagnostics",
        "limitations",
        "counts",
    ] {
        assert!(props.contains_key(key), "{key}");
        assert!(
            props[key].get("description").is_some(),
            "{key} has no description"
        );
    }
}

/// Nesting without brackets (prefix operators, ternaries, arrows, statements, JSX) would overflow
/// the parser's stack; such files are refused by the nesting estimate instead.
#[test]
fn hostile_nesting_is_refused_without_overflowing() {
    let dir = temp_dir("hostile");
    let n = 200_000;
    write(&dir, "unary.js", &format!("x = {}1;", "!".repeat(n)));
    write(
        &dir,
        "ternary.js",
        &format!("x = {}1{};", "a?".repeat(n), ":1".repeat(n)),
    );
    write(&dir, "arrow.js", &format!("x = {}1;", "a=>".repeat(n)));
    write(&dir, "ifs.js", &format!("{}x;", "if(a)".repeat(n)));
    write(&dir, "elses.js", &format!("{}x;", "if(a){}else ".repeat(n)));
    write(
        &dir,
        "jsx.jsx",
        &format!("x = {}{};", "<a>".repeat(n), "</a>".repeat(n)),
    );
    write(&dir, "newlines.js", &format!("x = {}1;", "!\n".repeat(n)));
    write(&dir, "ok.js", "ipcMain.handle('still-here', f);");
    let a = run(&dir);
    assert_eq!(a.counts.failed, 7);
    assert_eq!(a.counts.parsed, 1);
    assert!(a.limitations.iter().any(|l| l.contains("nesting exceeds")));
    assert!(a.ipc.iter().any(|c| c.channel == "still-here"));
}
