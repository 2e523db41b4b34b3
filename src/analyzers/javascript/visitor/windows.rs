//! BrowserWindow options read from their evaluated values: the web preferences rea tracks,
//! which of them are left unset, the preload script, and notes on what could not be read.

use super::*;

pub(super) fn window_from_options(
    options: Option<&Val>,
    src: &str,
    used: &mut HashSet<u32>,
) -> RawWindow {
    let mut notes = Vec::new();
    let top = match options {
        None => Props::new(),
        Some(Val::Obj(o)) => flatten(o, src, &mut notes, used, 0),
        Some(other) => {
            notes.push(format!(
                "window options {} were not resolved",
                describe(other)
            ));
            Props::new()
        }
    };
    let prefs = match top.get("webPreferences") {
        None => Props::new(),
        Some((Val::Obj(o), _, _)) => flatten(o, src, &mut notes, used, 0),
        Some((other, span, loc)) => {
            notes.push(format!(
                "webPreferences `{}` (line {}) {} was not resolved",
                shorter(&snippet(src, *span)),
                loc.line,
                describe(other)
            ));
            Props::new()
        }
    };
    settings_window(&prefs, src, notes)
}

pub(super) fn describe(val: &Val) -> String {
    match val {
        Val::Ident(n) => format!("from variable `{n}`"),
        Val::Call(n) => format!("from call of `{n}()`"),
        _ => "from an expression".to_string(),
    }
}

pub(super) fn settings_window(prefs: &Props, src: &str, notes: Vec<String>) -> RawWindow {
    let mut settings = Vec::new();
    let mut unset = Vec::new();
    let mut preload = None;
    for name in TRACKED_PREFS {
        match prefs.get(name) {
            None => unset.push(name.to_string()),
            Some((val, span, loc)) => {
                let text = snippet(src, *span);
                let value = match val {
                    Val::Bool(true) => SettingValue::True,
                    Val::Bool(false) => SettingValue::False,
                    Val::Str(_) | Val::Num | Val::Path(_) | Val::Obj(_) => SettingValue::Other,
                    Val::Ident(_) | Val::Call(_) | Val::Either(_) | Val::Other => {
                        SettingValue::Unresolved
                    }
                };
                if name == "preload" {
                    preload = match val {
                        Val::Path(p) => Some((p.clone(), text.clone())),
                        Val::Str(s) => Some((PathExpr::Literal(s.clone()), text.clone())),
                        _ => None,
                    };
                }
                settings.push(RawSetting {
                    name: name.to_string(),
                    value,
                    text,
                    loc: *loc,
                });
            }
        }
    }
    RawWindow {
        kind: WindowKind::OptionsObject,
        loc: Loc { line: 0, column: 0 },
        options_source: String::new(),
        settings,
        unset,
        preload,
        notes,
    }
}

/// Cuts text quoted inside a note to a readable length.
pub(super) fn shorter(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
