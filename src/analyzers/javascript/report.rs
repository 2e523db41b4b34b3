//! Renders a `JsAnalysis` as a plain-text report for a person: a summary, the findings by
//! severity, the IPC map, then windows, exposed APIs, navigation and what was not covered.

use std::fmt::Write;

use super::model::{
    InputKind, IpcSite, JsAnalysis, NavigationKind, ProcessKind, SettingValue, Severity, WindowKind,
};

/// At most this many diagnostics are printed; the JSON output has them all.
const MAX_DIAGNOSTICS_SHOWN: usize = 10;

/// The human-readable report.
pub fn render_report(a: &JsAnalysis) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail, so the results of `writeln!` are ignored below.
    let w = &mut out;
    summary(w, a);
    findings(w, a);
    ipc_map(w, a);
    windows(w, a);
    others(w, a);
    out
}

fn summary(w: &mut String, a: &JsAnalysis) {
    let kind = match a.input.kind {
        InputKind::Dir => "directory",
        InputKind::Asar => "asar archive",
        InputKind::App => "app bundle",
    };
    let _ = writeln!(
        w,
        "JavaScript/Electron analysis of {} ({kind})",
        a.input.path
    );
    if a.input.root != a.input.path {
        let _ = writeln!(w, "  read from {}", a.input.root);
    }
    if let Some(sha) = &a.input.asar_header_sha256 {
        let _ = writeln!(w, "  asar header sha256 {sha}");
    }
    if let Some(p) = &a.package {
        let _ = writeln!(
            w,
            "Package: {} {}  main: {}  electron: {}",
            p.name.as_deref().unwrap_or("(unnamed)"),
            p.version.as_deref().unwrap_or(""),
            p.main.as_deref().unwrap_or("(default index.js)"),
            p.electron_version.as_deref().unwrap_or("(not declared)")
        );
        if !p.dependencies.is_empty() {
            let deps: Vec<_> = p.dependencies.keys().map(String::as_str).collect();
            let _ = writeln!(w, "  dependencies ({}): {}", deps.len(), deps.join(", "));
        }
    } else {
        let _ = writeln!(w, "Package: no package.json");
    }
    let c = &a.counts;
    let _ = writeln!(
        w,
        "Files: {} listed, {} sources ({} parsed, {} with recovered errors, {} failed, {} skipped), {} HTML, {} bytes of source",
        c.files, c.source_files, c.parsed, c.recovered, c.failed, c.skipped, c.html_files, c.bytes
    );
    let _ = writeln!(w, "Processes:");
    if a.processes.is_empty() {
        let _ = writeln!(w, "  (none found)");
    }
    for p in &a.processes {
        let kind = match p.kind {
            ProcessKind::Main => "main",
            ProcessKind::Preload => "preload",
            ProcessKind::Renderer => "renderer",
        };
        let target = match (&p.path, p.exists) {
            (Some(path), true) => path.clone(),
            _ => format!("{} (not found)", p.declared),
        };
        let at = match (&p.file, p.line) {
            (Some(f), Some(l)) => format!(" at {f}:{l}"),
            _ => String::new(),
        };
        let _ = writeln!(w, "  {kind:<9} {target}  [{}{at}]", p.source);
    }
}

fn findings(w: &mut String, a: &JsAnalysis) {
    let _ = writeln!(w, "\nFindings ({}):", a.findings.len());
    if a.findings.is_empty() {
        let _ = writeln!(w, "  (none)");
    }
    for severity in [
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ] {
        let group: Vec<_> = a
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .collect();
        if group.is_empty() {
            continue;
        }
        let name = match severity {
            Severity::High => "HIGH",
            Severity::Medium => "MEDIUM",
            Severity::Low => "LOW",
            Severity::Info => "INFO",
        };
        let _ = writeln!(w, "  {name}");
        for f in group {
            let _ = writeln!(
                w,
                "    [{}] {}:{}:{}  {}",
                f.rule, f.file, f.line, f.column, f.message
            );
        }
    }
}

fn sites(sites: &[IpcSite]) -> String {
    sites
        .iter()
        .map(|s| format!("{} {}:{}", s.api, s.file, s.line))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ipc_map(w: &mut String, a: &JsAnalysis) {
    let _ = writeln!(
        w,
        "\nIPC map ({} channel{}):",
        a.ipc.len(),
        if a.ipc.len() == 1 { "" } else { "s" }
    );
    for ch in &a.ipc {
        let mark = if ch.matched { "" } else { "  (one side only)" };
        let _ = writeln!(w, "  {}{mark}", ch.channel);
        for (label, list) in [
            ("main handles", &ch.handlers),
            ("renderer calls", &ch.callers),
            ("main sends", &ch.main_senders),
            ("renderer listens", &ch.renderer_listeners),
        ] {
            if !list.is_empty() {
                let _ = writeln!(w, "      {label:<17} {}", sites(list));
            }
        }
    }
}

fn windows(w: &mut String, a: &JsAnalysis) {
    let _ = writeln!(w, "\nWindows ({}):", a.windows.len());
    for win in &a.windows {
        let kind = match win.kind {
            WindowKind::BrowserWindow => "BrowserWindow",
            WindowKind::BrowserView => "BrowserView",
            WindowKind::Webview => "<webview>",
            WindowKind::OptionsObject => "options object",
        };
        let settings: Vec<_> = win
            .settings
            .iter()
            .filter(|s| s.name != "preload")
            .map(|s| {
                let v = match s.value {
                    SettingValue::True => "true".to_string(),
                    SettingValue::False => "false".to_string(),
                    SettingValue::Other | SettingValue::Unresolved => format!("`{}`", s.text),
                };
                format!("{}={v}", s.name)
            })
            .collect();
        let _ = writeln!(
            w,
            "  {kind} {}:{} ({}): {}",
            win.file,
            win.line,
            win.options_source,
            if settings.is_empty() {
                "no web preferences set".to_string()
            } else {
                settings.join(" ")
            }
        );
        if let Some(p) = &win.preload {
            let _ = writeln!(w, "      preload {p}");
        }
        for note in &win.notes {
            let _ = writeln!(w, "      note: {note}");
        }
    }
}

fn others(w: &mut String, a: &JsAnalysis) {
    let _ = writeln!(w, "\nExposed APIs ({}):", a.exposed_apis.len());
    for e in &a.exposed_apis {
        let members = match &e.members {
            Some(m) => format!("{{{}}}", m.join(", ")),
            None => format!("`{}`", e.expression),
        };
        let _ = writeln!(
            w,
            "  window.{} = {members}  ({} world, {}:{})",
            e.key, e.world, e.file, e.line
        );
    }
    let _ = writeln!(w, "\nNavigation ({}):", a.navigation.len());
    for n in &a.navigation {
        let target = n
            .target
            .clone()
            .unwrap_or_else(|| format!("`{}`", n.expression));
        let kind = match n.kind {
            NavigationKind::LoadUrl => "loadURL",
            NavigationKind::LoadFile => "loadFile",
            NavigationKind::OpenExternal => "shell.openExternal",
            NavigationKind::WindowOpenHandler => "setWindowOpenHandler",
            NavigationKind::PermissionRequestHandler => "setPermissionRequestHandler",
            NavigationKind::PermissionCheckHandler => "setPermissionCheckHandler",
            NavigationKind::WillNavigateHandler => "on('will-navigate')",
            NavigationKind::NewWindowHandler => "on('new-window')",
        };
        let _ = writeln!(w, "  {kind} {target}  ({}:{})", n.file, n.line);
    }
    if !a.limitations.is_empty() {
        let _ = writeln!(w, "\nLimitations:");
        for l in &a.limitations {
            let _ = writeln!(w, "  - {l}");
        }
    }
    if !a.diagnostics.is_empty() {
        let _ = writeln!(w, "\nDiagnostics ({}):", a.diagnostics.len());
        for d in a.diagnostics.iter().take(MAX_DIAGNOSTICS_SHOWN) {
            let _ = writeln!(w, "  {}:{}:{}  {}", d.file, d.line, d.column, d.message);
        }
        if a.diagnostics.len() > MAX_DIAGNOSTICS_SHOWN {
            let _ = writeln!(
                w,
                "  … {} more in the JSON output",
                a.diagnostics.len() - MAX_DIAGNOSTICS_SHOWN
            );
        }
    }
}
