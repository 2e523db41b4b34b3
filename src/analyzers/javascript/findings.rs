//! Turns resolved windows and navigation calls into security findings, using Electron's
//! defaults for the declared Electron version when a setting is left unset.

use std::collections::HashSet;

use super::model::{
    DefaultSetting, Finding, Navigation, NavigationKind, Setting, SettingValue, Severity, Window,
    WindowKind,
};

/// The major version whose defaults are assumed when package.json declares none.
const CURRENT_DEFAULTS: &str = "no Electron version declared; current defaults shown";

/// Electron's defaults for the tracked boolean web preferences at `major`.
pub(crate) fn electron_defaults(major: Option<u32>) -> Vec<DefaultSetting> {
    let at = |since: u32| major.is_none_or(|m| m >= since);
    let entry = |name: &str, default: bool, note: String| DefaultSetting {
        name: name.to_string(),
        default,
        note: match major {
            None => format!("{note} ({CURRENT_DEFAULTS})"),
            Some(_) => note,
        },
    };
    vec![
        entry(
            "nodeIntegration",
            !at(5),
            "false since Electron 5, true before".into(),
        ),
        entry(
            "contextIsolation",
            at(12),
            "true since Electron 12, false before".into(),
        ),
        entry(
            "sandbox",
            at(20),
            "true since Electron 20 (for renderers without nodeIntegration), false before".into(),
        ),
        entry("webSecurity", true, "always true".into()),
        entry("allowRunningInsecureContent", false, "always false".into()),
        entry("nodeIntegrationInSubFrames", false, "always false".into()),
        entry(
            "webviewTag",
            !at(5),
            "false since Electron 5, true before".into(),
        ),
    ]
}

/// The value a window effectively has for `name`: its own setting, else the default for real
/// windows (an options object may be completed elsewhere, so its unset keys stay unknown).
fn effective(window: &Window, name: &str, defaults: &[DefaultSetting]) -> Option<bool> {
    match window.settings.iter().find(|s| s.name == name) {
        Some(s) => match s.value {
            SettingValue::True => Some(true),
            SettingValue::False => Some(false),
            _ => None,
        },
        None if window.kind != WindowKind::OptionsObject && window.notes.is_empty() => {
            defaults.iter().find(|d| d.name == name).map(|d| d.default)
        }
        None => None,
    }
}

fn label(kind: WindowKind) -> &'static str {
    match kind {
        WindowKind::BrowserWindow => "BrowserWindow",
        WindowKind::BrowserView => "BrowserView",
        WindowKind::Webview => "<webview>",
        WindowKind::OptionsObject => "options object",
    }
}

/// All findings, deduplicated by rule and location, most severe first.
pub(crate) fn findings(
    windows: &[Window],
    navigation: &[Navigation],
    defaults: &[DefaultSetting],
    electron_major: Option<u32>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for w in windows {
        window_findings(w, defaults, electron_major, &mut out);
    }
    for n in navigation {
        navigation_findings(n, &mut out);
    }
    let mut seen = HashSet::new();
    out.retain(|f: &Finding| seen.insert((f.rule.clone(), f.file.clone(), f.line, f.column)));
    out.sort_by(|a, b| {
        (a.severity, &a.file, a.line, a.column, &a.rule)
            .cmp(&(b.severity, &b.file, b.line, b.column, &b.rule))
    });
    out
}

fn window_findings(
    w: &Window,
    defaults: &[DefaultSetting],
    electron_major: Option<u32>,
    out: &mut Vec<Finding>,
) {
    let what = format!("{} at {}:{}", label(w.kind), w.file, w.line);
    let at_setting = |s: &Setting, severity: Severity, rule: &str, message: String| Finding {
        severity,
        rule: rule.to_string(),
        message,
        file: s.file.clone(),
        line: s.line,
        column: s.column,
    };
    for s in &w.settings {
        let finding = match (s.name.as_str(), s.value) {
            ("nodeIntegration", SettingValue::True) => Some((
                Severity::Medium,
                "node-integration-enabled",
                format!("nodeIntegration is true for {what}: page scripts can use Node.js APIs"),
            )),
            ("contextIsolation", SettingValue::False) => Some((
                Severity::Medium,
                "context-isolation-disabled",
                format!(
                    "contextIsolation is false for {what}: the page shares its JavaScript world with the preload script"
                ),
            )),
            ("sandbox", SettingValue::False) => Some((
                Severity::Low,
                "sandbox-disabled",
                format!("sandbox is false for {what}: the renderer runs without the OS sandbox"),
            )),
            ("webSecurity", SettingValue::False) => Some((
                Severity::High,
                "web-security-disabled",
                format!("webSecurity is false for {what}: the same-origin policy is off"),
            )),
            ("allowRunningInsecureContent", SettingValue::True) => Some((
                Severity::Medium,
                "insecure-content-allowed",
                format!(
                    "allowRunningInsecureContent is true for {what}: HTTPS pages may run HTTP scripts"
                ),
            )),
            ("nodeIntegrationInSubFrames", SettingValue::True) => Some((
                Severity::Medium,
                "node-integration-in-subframes",
                format!("nodeIntegrationInSubFrames is true for {what}: iframes get Node.js too"),
            )),
            ("webviewTag", SettingValue::True) => Some((
                Severity::Medium,
                "webview-tag-enabled",
                format!("webviewTag is true for {what}: pages may embed <webview> guests"),
            )),
            ("allowpopups", SettingValue::True) => Some((
                Severity::Low,
                "webview-allowpopups",
                format!("{what} has allowpopups: the guest may open new windows"),
            )),
            _ => None,
        };
        if let Some((severity, rule, message)) = finding {
            out.push(at_setting(s, severity, rule, message));
        }
    }
    let at_window = |severity: Severity, rule: &str, message: String| Finding {
        severity,
        rule: rule.to_string(),
        message,
        file: w.file.clone(),
        line: w.line,
        column: w.column,
    };
    let node = effective(w, "nodeIntegration", defaults);
    let isolation = effective(w, "contextIsolation", defaults);
    if node == Some(true) && isolation == Some(false) {
        out.push(at_window(
            Severity::High,
            "node-integration-without-context-isolation",
            format!(
                "{what} combines nodeIntegration true with contextIsolation false: any script in the page, including injected content, gets full Node.js access"
            ),
        ));
    }
    let real_window = w.kind != WindowKind::OptionsObject && w.notes.is_empty();
    let unset = |name: &str| real_window && w.unset.iter().any(|u| u == name);
    if let Some(major) = electron_major {
        if major < 12 && unset("contextIsolation") {
            out.push(at_window(
                Severity::Medium,
                "context-isolation-off-by-default",
                format!(
                    "{what} leaves contextIsolation unset and Electron {major} defaults it to false"
                ),
            ));
        }
        if major < 5 && unset("nodeIntegration") {
            out.push(at_window(
                Severity::Medium,
                "node-integration-on-by-default",
                format!(
                    "{what} leaves nodeIntegration unset and Electron {major} defaults it to true"
                ),
            ));
        }
    }
}

fn navigation_findings(n: &Navigation, out: &mut Vec<Finding>) {
    let mut push = |severity: Severity, rule: &str, message: String| {
        out.push(Finding {
            severity,
            rule: rule.to_string(),
            message,
            file: n.file.clone(),
            line: n.line,
            column: n.column,
        });
    };
    match n.kind {
        NavigationKind::OpenExternal if n.target.is_none() => push(
            Severity::Medium,
            "open-external-non-literal",
            format!(
                "shell.openExternal is called with a computed URL `{}`: check that only safe schemes reach it",
                n.expression
            ),
        ),
        NavigationKind::LoadUrl => {
            let url = n.target.as_deref().unwrap_or(&n.expression);
            let url = url.trim_start_matches(['`', '\'', '"']);
            if let Some(rest) = url.strip_prefix("http://") {
                let local = ["localhost", "127.0.0.1", "[::1]"]
                    .iter()
                    .any(|h| rest.starts_with(h));
                let (severity, note) = if local {
                    (Severity::Low, "a local server over plain HTTP")
                } else {
                    (
                        Severity::Medium,
                        "content over plain HTTP can be tampered with",
                    )
                };
                push(
                    severity,
                    "load-insecure-url",
                    format!("loadURL loads `{}`: {note}", n.expression),
                );
            }
        }
        _ => {}
    }
}
