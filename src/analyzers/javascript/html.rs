//! Scans HTML pages for the two things the analysis needs: `<script src>` entry points of the
//! renderer, and `<webview>` tags with their security attributes. A small tag scanner is enough:
//! comments are skipped, attribute values may be quoted or bare, and nothing is executed.

use super::model::{SettingValue, WindowKind};
use super::visitor::{LineIndex, Loc, PathExpr, RawSetting, RawWindow, TRACKED_PREFS};

/// What one HTML file references.
#[derive(Debug, Clone, Default)]
pub(crate) struct HtmlFacts {
    /// `src` of each external script, with its tag's location.
    pub scripts: Vec<(String, Loc)>,
    /// Inline `<script>` blocks holding JavaScript or TypeScript.
    pub blocks: Vec<ScriptBlock>,
    /// Each `<webview>` tag as a window.
    pub webviews: Vec<RawWindow>,
    /// `src` of each `<webview>`, with its tag's location.
    pub webview_srcs: Vec<(String, Loc)>,
}

/// The body of one inline `<script>` element.
#[derive(Debug, Clone)]
pub(crate) struct ScriptBlock {
    /// Byte offset of the body in the page.
    pub start: usize,
    /// The body.
    pub text: String,
    /// A file name whose extension gives the dialect (`inline.ts`, `inline.js`, …).
    pub dialect: &'static str,
}

/// The dialect of an inline script from its `lang`/`type` attributes; `None` for data blocks
/// such as JSON, import maps or templates.
fn script_dialect(attrs: &[(String, Option<String>)]) -> Option<&'static str> {
    let get = |key: &str| {
        attrs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
            .map(str::to_ascii_lowercase)
    };
    match get("lang").as_deref() {
        Some("ts" | "typescript") => return Some("inline.ts"),
        Some("tsx") => return Some("inline.tsx"),
        Some("jsx") => return Some("inline.jsx"),
        _ => {}
    }
    match get("type") {
        None => Some("inline.js"),
        Some(t) if t.contains("typescript") => Some("inline.ts"),
        Some(t)
            if t == "module"
                || t.contains("javascript")
                || t.contains("ecmascript")
                || t.contains("babel")
                || t.contains("jsx") =>
        {
            Some("inline.js")
        }
        Some(_) => None,
    }
}

/// Scans `text` for script and webview tags.
pub(crate) fn scan_html(text: &str) -> HtmlFacts {
    let lines = LineIndex::new(text);
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut facts = HtmlFacts::default();
    let mut i = 0;
    while let Some(rel) = lower.get(i..).and_then(|s| s.find('<')) {
        let start = i + rel;
        if lower[start..].starts_with("<!--") {
            i = lower[start..]
                .find("-->")
                .map_or(bytes.len(), |e| start + e + 3);
            continue;
        }
        let name_end = lower[start + 1..]
            .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
            .map_or(bytes.len(), |e| start + 1 + e);
        let name = &lower[start + 1..name_end];
        if name != "script" && name != "webview" {
            i = start + 1;
            continue;
        }
        let (attrs, tag_end) = parse_attributes(text, name_end);
        let loc = lines.loc(u32::try_from(start).unwrap_or(u32::MAX));
        if name == "script" {
            // The body ends at `</script`; skipping it keeps markup in strings from being
            // mistaken for tags.
            let body_end = lower
                .get(tag_end..)
                .and_then(|rest| rest.find("</script"))
                .map_or(bytes.len(), |e| tag_end + e);
            match attrs.iter().find(|(k, _)| k == "src") {
                Some((_, Some(src))) => facts.scripts.push((src.clone(), loc)),
                _ => {
                    if let (Some(dialect), Some(body)) =
                        (script_dialect(&attrs), text.get(tag_end..body_end))
                        && !body.trim().is_empty()
                    {
                        facts.blocks.push(ScriptBlock {
                            start: tag_end,
                            text: body.to_string(),
                            dialect,
                        });
                    }
                }
            }
            i = body_end;
        } else {
            if let Some((_, Some(src))) = attrs.iter().find(|(k, _)| k == "src") {
                facts.webview_srcs.push((src.clone(), loc));
            }
            facts.webviews.push(webview_window(&attrs, loc));
            i = tag_end;
        }
    }
    facts
}

/// Parses `name=value` pairs from just after the tag name up to `>`; returns them (names
/// lowercased) and the offset just past the tag.
fn parse_attributes(text: &str, mut i: usize) -> (Vec<(String, Option<String>)>, usize) {
    let bytes = text.as_bytes();
    let mut attrs = Vec::new();
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        if bytes[i] == b'>' {
            return (attrs, i + 1);
        }
        let name_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
        {
            i += 1;
        }
        let name = text[name_start..i].to_ascii_lowercase();
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = None;
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                let quote = bytes[i];
                let value_start = i + 1;
                let end = bytes[value_start..]
                    .iter()
                    .position(|&b| b == quote)
                    .map_or(bytes.len(), |p| value_start + p);
                value = Some(text[value_start..end].to_string());
                i = (end + 1).min(bytes.len());
            } else {
                let value_start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
                value = Some(text[value_start..i].to_string());
            }
        }
        if name.is_empty() {
            i += 1;
        } else {
            attrs.push((name, value));
        }
    }
    (attrs, bytes.len())
}

/// Maps a `<webview>`'s attributes onto the tracked web preferences.
fn webview_window(attrs: &[(String, Option<String>)], loc: Loc) -> RawWindow {
    let mut settings: Vec<RawSetting> = Vec::new();
    let mut set = |name: &str, value: SettingValue, text: String| {
        settings.retain(|s| s.name != name);
        settings.push(RawSetting {
            name: name.to_string(),
            value,
            text,
            loc,
        });
    };
    let mut preload = None;
    for (name, value) in attrs {
        let text = match value {
            Some(v) => format!("{name}=\"{v}\""),
            None => name.clone(),
        };
        match name.as_str() {
            // Electron enables these on the attribute's presence, whatever its value.
            "nodeintegration" => set("nodeIntegration", SettingValue::True, text),
            "nodeintegrationinsubframes" => {
                set("nodeIntegrationInSubFrames", SettingValue::True, text)
            }
            "disablewebsecurity" => set("webSecurity", SettingValue::False, text),
            "allowpopups" => set("allowpopups", SettingValue::True, text),
            "preload" => {
                if let Some(v) = value {
                    preload = Some((PathExpr::Literal(v.clone()), v.clone()));
                    set("preload", SettingValue::Other, text);
                }
            }
            "webpreferences" => {
                for pair in value.as_deref().unwrap_or("").split(',') {
                    let mut kv = pair.splitn(2, '=');
                    let key = kv.next().unwrap_or("").trim();
                    let val = kv.next().unwrap_or("").trim();
                    if key.is_empty() {
                        continue;
                    }
                    let parsed = match val.to_ascii_lowercase().as_str() {
                        "yes" | "true" | "1" | "" => SettingValue::True,
                        "no" | "false" | "0" => SettingValue::False,
                        _ => SettingValue::Other,
                    };
                    set(key, parsed, format!("webpreferences: {}", pair.trim()));
                }
            }
            _ => {}
        }
    }
    let unset = TRACKED_PREFS
        .iter()
        .filter(|p| !settings.iter().any(|s| s.name == **p))
        .map(|p| p.to_string())
        .collect();
    RawWindow {
        kind: WindowKind::Webview,
        loc,
        options_source: "html".to_string(),
        settings,
        unset,
        preload,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_scripts_and_skips_comments_and_inline_bodies() {
        let html = "<!doctype html>\n<!-- <script src=\"no.js\"></script> -->\n<SCRIPT type=module src='./src/renderer.js'></SCRIPT>\n<script>const s = '<script src=x.js>';</script>\n<script src=/bare.js defer></script>";
        let f = scan_html(html);
        let got: Vec<_> = f
            .scripts
            .iter()
            .map(|(s, l)| (s.as_str(), l.line))
            .collect();
        assert_eq!(got, [("./src/renderer.js", 3), ("/bare.js", 5)]);
        assert_eq!(f.blocks.len(), 1);
        assert_eq!(f.blocks[0].text, "const s = '<script src=x.js>';");
        assert_eq!(f.blocks[0].dialect, "inline.js");
        let vue = scan_html(
            "<script setup lang=\"ts\">\nconst a: number = 1\n</script>\n<script type=\"application/json\">{}</script>",
        );
        assert_eq!(vue.blocks.len(), 1);
        assert_eq!(
            (vue.blocks[0].start, vue.blocks[0].dialect),
            (24, "inline.ts")
        );
    }

    #[test]
    fn webview_attributes_become_settings() {
        let html = "<body>\n<webview src=\"https://example.com\" nodeintegration allowpopups webpreferences=\"contextIsolation=no, sandbox=false\" preload=\"file://./p.js\"></webview>";
        let f = scan_html(html);
        assert_eq!(f.webview_srcs[0].0, "https://example.com");
        let w = &f.webviews[0];
        assert_eq!(w.loc.line, 2);
        let s: Vec<_> = w
            .settings
            .iter()
            .map(|s| (s.name.as_str(), s.value))
            .collect();
        assert_eq!(
            s,
            [
                ("nodeIntegration", SettingValue::True),
                ("allowpopups", SettingValue::True),
                ("contextIsolation", SettingValue::False),
                ("sandbox", SettingValue::False),
                ("preload", SettingValue::Other),
            ]
        );
        assert!(w.unset.contains(&"webSecurity".to_string()));
    }

    #[test]
    fn truncated_markup_does_not_panic() {
        for html in [
            "<script",
            "<webview src=\"",
            "<script src=a",
            "<!--",
            "<webview a='x",
        ] {
            let _ = scan_html(html);
        }
    }
}
