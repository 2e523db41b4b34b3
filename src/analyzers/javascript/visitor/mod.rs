//! Parses one source file with oxc and walks its tree once, collecting imports, IPC calls,
//! window constructions with their options, contextBridge exposures and navigation calls.
//!
//! Values are followed only within the file: object literals and strings bound to `const`/`let`/
//! `var` names in enclosing scopes, object spreads of such names, and objects returned by named
//! functions of the same file (nativefier builds its window options in a helper). Everything is
//! summarized into plain owned data, so nothing borrows the parser's arena after `parse_file`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use oxc::allocator::Allocator;
use oxc::ast::ast::{
    Argument, ArrowFunctionExpression, BindingPattern, CallExpression, ChainElement,
    ExportAllDeclaration, ExportFromDeclaration, Expression, Function, ImportDeclaration,
    ImportDeclarationSpecifier, ImportExpression, MemberExpression, MethodDefinition,
    NewExpression, ObjectExpression, ObjectPropertyKind, ReturnStatement,
    TSImportEqualsDeclaration, TSModuleReference, TemplateLiteral, UnaryOperator,
    VariableDeclarator,
};
use oxc::ast_visit::{Visit, walk};
use oxc::parser::{ParseOptions, Parser};
use oxc::span::{GetSpan, SourceType, Span};
use oxc::syntax::scope::{ScopeFlags, ScopeId};

use super::model::{ImportKind, NavigationKind, ParseStatus, SettingValue, WindowKind};

mod value;
mod windows;

use value::*;
use windows::*;

/// The web preferences the analysis tracks, in report order.
pub(crate) const TRACKED_PREFS: [&str; 8] = [
    "nodeIntegration",
    "contextIsolation",
    "sandbox",
    "webSecurity",
    "preload",
    "allowRunningInsecureContent",
    "nodeIntegrationInSubFrames",
    "webviewTag",
];

/// How deep value summaries follow nested object literals; deeper nesting becomes "unresolved".
const MAX_VALUE_DEPTH: usize = 16;

/// At most this many parser diagnostics are kept per file.
const MAX_DIAGNOSTICS_PER_FILE: usize = 20;

/// The longest expression text kept in results.
const MAX_TEXT: usize = 120;

/// A 1-based line and byte column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Loc {
    pub line: u32,
    pub column: u32,
}

/// Maps byte offsets to lines with one binary search.
pub(crate) struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            }
        }
        LineIndex { starts }
    }

    pub(crate) fn loc(&self, offset: u32) -> Loc {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        Loc {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: offset.saturating_sub(start) + 1,
        }
    }
}

/// A path expression whose shape the analysis understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathExpr {
    /// A literal string (possibly a `file://` URL), relative to the application root.
    Literal(String),
    /// `path.join(__dirname, …literal segments)`, relative to the declaring file's directory.
    FromDir(Vec<String>),
    /// `path.join(app.getAppPath(), …)`, relative to the application root.
    FromRoot(Vec<String>),
    /// Only the last segment is literal; matched by file name.
    Basename(String),
}

/// An import as written.
#[derive(Debug, Clone)]
pub(crate) struct RawImport {
    pub specifier: Option<String>,
    pub kind: ImportKind,
    pub loc: Loc,
}

/// Which end of an IPC channel a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IpcRole {
    Handler,
    Caller,
    MainSender,
    RendererListener,
}

/// One IPC call.
#[derive(Debug, Clone)]
pub(crate) struct RawIpc {
    pub channel: Option<String>,
    pub expression: String,
    pub api: String,
    pub role: IpcRole,
    pub loc: Loc,
}

/// One setting as written in a window's options.
#[derive(Debug, Clone)]
pub(crate) struct RawSetting {
    pub name: String,
    pub value: SettingValue,
    pub text: String,
    pub loc: Loc,
}

/// A window (or stray options object) with its resolved settings.
#[derive(Debug, Clone)]
pub(crate) struct RawWindow {
    pub kind: WindowKind,
    pub loc: Loc,
    pub options_source: String,
    pub settings: Vec<RawSetting>,
    pub unset: Vec<String>,
    pub preload: Option<(PathExpr, String)>,
    pub notes: Vec<String>,
}

/// A contextBridge exposure.
#[derive(Debug, Clone)]
pub(crate) struct RawExposed {
    pub key: Option<String>,
    pub world: String,
    pub members: Option<Vec<String>>,
    pub expression: String,
    pub loc: Loc,
}

/// A navigation-related call.
#[derive(Debug, Clone)]
pub(crate) struct RawNav {
    pub kind: NavigationKind,
    /// The argument when it is a literal string.
    pub literal: Option<String>,
    /// A file path the call loads, when understood.
    pub path: Option<PathExpr>,
    pub expression: String,
    pub loc: Loc,
}

/// Everything learned from one file.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileFacts {
    pub imports: Vec<RawImport>,
    pub ipc: Vec<RawIpc>,
    pub windows: Vec<RawWindow>,
    pub exposed: Vec<RawExposed>,
    pub navigation: Vec<RawNav>,
}

/// The result of parsing and walking one file.
#[derive(Debug, Clone)]
pub(crate) struct ParsedFile {
    pub facts: FileFacts,
    pub status: ParseStatus,
    pub diagnostics: Vec<(String, Loc)>,
}

/// Parses `text` (named `path`, whose extension picks the dialect) and collects its facts.
///
/// A `.js` file is first parsed without JSX; if that fails it is parsed again with JSX and the
/// attempt with fewer errors wins, because React code often lives in `.js` files.
pub(crate) fn parse_file(path: &str, text: &str) -> ParsedFile {
    let source_type = SourceType::from_path(path).unwrap_or_else(|_| SourceType::unambiguous());
    let first = parse_with(text, source_type);
    let retry_jsx = path.ends_with(".js") && first.status != ParseStatus::Ok;
    if retry_jsx {
        let second = parse_with(text, source_type.with_jsx(true));
        if second.diagnostics.len() < first.diagnostics.len() {
            return second;
        }
    }
    first
}

/// Parses script blocks embedded in a page or component and merges their facts. Each block is
/// parsed alone, padded so that lines and columns refer to the enclosing file.
pub(crate) fn parse_blocks(page: &str, blocks: &[(usize, &str, &str)]) -> ParsedFile {
    let lines = LineIndex::new(page);
    let mut merged = ParsedFile {
        facts: FileFacts::default(),
        status: ParseStatus::Ok,
        diagnostics: Vec::new(),
    };
    for &(start, body, dialect) in blocks {
        let at = lines.loc(u32::try_from(start).unwrap_or(u32::MAX));
        let mut padded = "\n".repeat(at.line.saturating_sub(1) as usize);
        padded.push_str(&" ".repeat(at.column.saturating_sub(1) as usize));
        padded.push_str(body);
        let parsed = parse_file(dialect, &padded);
        merged.status = merged.status.max(parsed.status);
        merged.diagnostics.extend(parsed.diagnostics);
        let f = parsed.facts;
        merged.facts.imports.extend(f.imports);
        merged.facts.ipc.extend(f.ipc);
        merged.facts.windows.extend(f.windows);
        merged.facts.exposed.extend(f.exposed);
        merged.facts.navigation.extend(f.navigation);
    }
    merged
}

fn parse_with(text: &str, source_type: SourceType) -> ParsedFile {
    let allocator = Allocator::default();
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let ret = Parser::new(&allocator, text, source_type)
        .with_options(options)
        .parse();
    let lines = LineIndex::new(text);
    let errors: Vec<_> = ret.diagnostics.errors().collect();
    let diagnostics = errors
        .iter()
        .take(MAX_DIAGNOSTICS_PER_FILE)
        .map(|d| {
            let offset = d.labels.first().map(|l| l.offset()).unwrap_or(0);
            (d.message.to_string(), lines.loc(offset))
        })
        .collect();
    let status = if ret.panicked {
        ParseStatus::Failed
    } else if errors.is_empty() {
        ParseStatus::Ok
    } else {
        ParseStatus::Recovered
    };
    let mut collector = Collector::new(text, &lines);
    if !ret.panicked {
        collector.visit_program(&ret.program);
    }
    ParsedFile {
        facts: collector.finish(),
        status,
        diagnostics,
    }
}

/// Shortens source text for display: whitespace runs collapse and long text is cut.
pub(crate) fn short(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT + 4));
    let mut last_space = false;
    for (count, c) in text.chars().enumerate() {
        if count >= MAX_TEXT * 4 || out.chars().count() >= MAX_TEXT {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    out
}

/// A window construction waiting for function return values to be known.
struct PendingWindow {
    kind: WindowKind,
    loc: Loc,
    options: Option<Val>,
    options_source: String,
}

/// An object literal holding tracked web-preference keys.
struct Candidate {
    span_start: u32,
    loc: Loc,
    value: Val,
}

struct Collector<'s> {
    text: &'s str,
    lines: &'s LineIndex,
    scopes: Vec<HashMap<String, Val>>,
    /// Local names bound to members of the `electron` module (`const { ipcMain: m } = …`).
    aliases: HashMap<String, String>,
    /// Names of the functions being walked, innermost last (`None` for anonymous ones).
    functions: Vec<Option<String>>,
    /// The name a function expression about to be walked is bound to.
    pending_name: Option<String>,
    /// Object values returned by named functions of this file.
    returns: HashMap<String, Val>,
    windows: Vec<PendingWindow>,
    candidates: Vec<Candidate>,
    facts: FileFacts,
}

impl<'s> Collector<'s> {
    fn new(text: &'s str, lines: &'s LineIndex) -> Self {
        Collector {
            text,
            lines,
            scopes: vec![HashMap::new()],
            aliases: HashMap::new(),
            functions: Vec::new(),
            pending_name: None,
            returns: HashMap::new(),
            windows: Vec::new(),
            candidates: Vec::new(),
            facts: FileFacts::default(),
        }
    }

    fn loc(&self, span: Span) -> Loc {
        self.lines.loc(span.start)
    }

    fn src(&self, span: Span) -> &'s str {
        self.text
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn import(&mut self, specifier: Option<String>, kind: ImportKind, span: Span) {
        let loc = self.loc(span);
        self.facts.imports.push(RawImport {
            specifier,
            kind,
            loc,
        });
    }

    fn on_call(&mut self, call: &CallExpression<'_>) {
        let Some(chain) = self.chain(&call.callee) else {
            return;
        };
        if chain.len() == 1 && chain[0] == "require" {
            let (spec, _) = self.literal_arg(call.arguments.first());
            self.import(spec, ImportKind::Require, call.span);
            return;
        }
        let n = chain.len();
        if n < 2 {
            return;
        }
        let (recv, method) = (chain[n - 2].as_str(), chain[n - 1].as_str());
        let role = match (recv, method) {
            (
                "ipcMain",
                "handle" | "handleOnce" | "on" | "once" | "addListener" | "removeHandler",
            ) => Some(IpcRole::Handler),
            ("ipcRenderer", "invoke" | "send" | "sendSync" | "postMessage" | "sendToHost") => {
                Some(IpcRole::Caller)
            }
            ("ipcRenderer", "on" | "once" | "addListener") => Some(IpcRole::RendererListener),
            ("webContents" | "sender", "send" | "postMessage") => Some(IpcRole::MainSender),
            (r, "reply")
                if r == "e" || r == "evt" || r.ends_with("event") || r.ends_with("Event") =>
            {
                Some(IpcRole::MainSender)
            }
            _ => None,
        };
        let loc = self.loc(call.span);
        if let Some(role) = role {
            let (channel, expression) = self.literal_arg(call.arguments.first());
            self.facts.ipc.push(RawIpc {
                channel,
                expression,
                api: format!("{recv}.{method}"),
                role,
                loc,
            });
            return;
        }
        match (recv, method) {
            ("contextBridge", "exposeInMainWorld" | "exposeInIsolatedWorld") => {
                let isolated = method == "exposeInIsolatedWorld";
                let skip = usize::from(isolated);
                let world = if isolated {
                    let (id, text) = self.literal_arg(call.arguments.first());
                    format!("isolated:{}", id.unwrap_or(text))
                } else {
                    "main".to_string()
                };
                let (key, _) = self.literal_arg(call.arguments.get(skip));
                let api = call
                    .arguments
                    .get(skip + 1)
                    .and_then(Argument::as_expression);
                let (members, expression) = match api {
                    Some(e) => {
                        let val = self.resolve(self.summarize(e, 0), 0);
                        (object_keys(&val, self.text), short(self.src(e.span())))
                    }
                    None => (None, String::new()),
                };
                self.facts.exposed.push(RawExposed {
                    key,
                    world,
                    members,
                    expression,
                    loc,
                });
            }
            ("shell", "openExternal") => self.nav(NavigationKind::OpenExternal, call, loc),
            (_, "loadURL") => self.nav(NavigationKind::LoadUrl, call, loc),
            (_, "loadFile") => self.nav(NavigationKind::LoadFile, call, loc),
            (_, "setWindowOpenHandler") => self.nav(NavigationKind::WindowOpenHandler, call, loc),
            (_, "setPermissionRequestHandler") => {
                self.nav(NavigationKind::PermissionRequestHandler, call, loc)
            }
            (_, "setPermissionCheckHandler") => {
                self.nav(NavigationKind::PermissionCheckHandler, call, loc)
            }
            (_, "on" | "once") => match self.literal_arg(call.arguments.first()).0.as_deref() {
                Some("will-navigate") => self.nav(NavigationKind::WillNavigateHandler, call, loc),
                Some("new-window") => self.nav(NavigationKind::NewWindowHandler, call, loc),
                _ => {}
            },
            _ => {}
        }
    }

    fn nav(&mut self, kind: NavigationKind, call: &CallExpression<'_>, loc: Loc) {
        // For `.on('will-navigate', handler)` the handler, not the event name, is of interest.
        let index = usize::from(matches!(
            kind,
            NavigationKind::WillNavigateHandler | NavigationKind::NewWindowHandler
        ));
        let arg = call.arguments.get(index).and_then(Argument::as_expression);
        let (mut literal, mut path, mut expression) = (None, None, String::new());
        if let Some(e) = arg {
            expression = short(self.src(e.span()));
            match self.resolve(self.summarize(e, 0), 0) {
                Val::Str(s) => {
                    if kind == NavigationKind::LoadFile {
                        path = Some(PathExpr::Literal(s.clone()));
                    } else if let Some(rest) = s.strip_prefix("file://") {
                        path = Some(PathExpr::Literal(rest.to_string()));
                    }
                    literal = Some(s);
                }
                Val::Path(p) => path = Some(p),
                _ => {}
            }
        }
        let handler_kinds = !matches!(
            kind,
            NavigationKind::LoadUrl | NavigationKind::LoadFile | NavigationKind::OpenExternal
        );
        if handler_kinds {
            // For handler registrations the argument is the handler; the event name (for `.on`)
            // or nothing is more useful than its body.
            literal = None;
            path = None;
        }
        self.facts.navigation.push(RawNav {
            kind,
            literal,
            path,
            expression,
            loc,
        });
    }

    fn on_new(&mut self, new: &NewExpression<'_>) {
        let Some(chain) = self.chain(&new.callee) else {
            return;
        };
        let kind = match chain.last().map(String::as_str) {
            Some("BrowserWindow") => WindowKind::BrowserWindow,
            Some("BrowserView" | "WebContentsView") => WindowKind::BrowserView,
            _ => return,
        };
        let arg = new.arguments.first().and_then(Argument::as_expression);
        let options_source = match arg.map(|a| a.get_inner_expression()) {
            None => "none".to_string(),
            Some(Expression::ObjectExpression(_)) => "inline".to_string(),
            Some(Expression::Identifier(id)) => format!("variable {}", id.name),
            Some(Expression::CallExpression(c)) => match self.chain(&c.callee) {
                Some(ch) => format!("call {}", ch.join(".")),
                None => "call".to_string(),
            },
            Some(_) => "expression".to_string(),
        };
        let options = arg.map(|a| self.resolve(self.summarize(a, 0), 0));
        let loc = self.loc(new.span);
        self.windows.push(PendingWindow {
            kind,
            loc,
            options,
            options_source,
        });
    }

    fn on_object(&mut self, o: &ObjectExpression<'_>) {
        let tracked = o.properties.iter().any(|p| match p {
            ObjectPropertyKind::ObjectProperty(p) => p
                .key
                .static_name()
                .is_some_and(|k| TRACKED_PREFS.contains(&k.as_ref()) && k != "preload"),
            ObjectPropertyKind::SpreadProperty(_) => false,
        });
        if tracked {
            let value = self.resolve(self.object(o, 0), 0);
            let loc = self.loc(o.span);
            self.candidates.push(Candidate {
                span_start: o.span.start,
                loc,
                value,
            });
        }
    }

    fn finish(mut self) -> FileFacts {
        let mut used = HashSet::new();
        let pending = std::mem::take(&mut self.windows);
        for w in pending {
            let options = w.options.as_ref().map(|v| self.substitute_calls(v, 0));
            let mut window = window_from_options(options.as_ref(), self.text, &mut used);
            window.kind = w.kind;
            window.loc = w.loc;
            window.options_source = w.options_source;
            self.facts.windows.push(window);
        }
        for c in std::mem::take(&mut self.candidates) {
            if used.contains(&c.span_start) {
                continue;
            }
            let value = self.substitute_calls(&c.value, 0);
            let Val::Obj(obj) = &value else { continue };
            let mut notes = Vec::new();
            let prefs = flatten(obj, self.text, &mut notes, &mut HashSet::new(), 0);
            let mut window = settings_window(&prefs, self.text, notes);
            window.kind = WindowKind::OptionsObject;
            window.loc = c.loc;
            window.options_source = "object literal".to_string();
            self.facts.windows.push(window);
        }
        self.facts
    }
}

impl<'a> Visit<'a> for Collector<'_> {
    fn enter_scope(&mut self, _flags: ScopeFlags, _scope_id: &std::cell::Cell<Option<ScopeId>>) {
        self.scopes.push(HashMap::new());
    }

    fn leave_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        if !it.import_kind.is_type() {
            let source = it.source.value.to_string();
            if source == "electron"
                && let Some(specifiers) = &it.specifiers
            {
                for s in specifiers {
                    if let ImportDeclarationSpecifier::ImportSpecifier(s) = s {
                        self.aliases
                            .insert(s.local.name.to_string(), s.imported.name().to_string());
                    }
                }
            }
            self.import(Some(source), ImportKind::Import, it.span);
        }
        walk::walk_import_declaration(self, it);
    }

    fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
        if !it.export_kind.is_type() {
            self.import(
                Some(it.source.value.to_string()),
                ImportKind::ExportFrom,
                it.span,
            );
        }
        walk::walk_export_all_declaration(self, it);
    }

    fn visit_export_from_declaration(&mut self, it: &ExportFromDeclaration<'a>) {
        if !it.export_kind.is_type() {
            self.import(
                Some(it.source.value.to_string()),
                ImportKind::ExportFrom,
                it.span,
            );
        }
        walk::walk_export_from_declaration(self, it);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        let spec = static_string(&it.source);
        self.import(spec, ImportKind::DynamicImport, it.span);
        walk::walk_import_expression(self, it);
    }

    fn visit_ts_import_equals_declaration(&mut self, it: &TSImportEqualsDeclaration<'a>) {
        if let TSModuleReference::ExternalModuleReference(r) = &it.module_reference {
            self.import(
                Some(r.expression.value.to_string()),
                ImportKind::Require,
                it.span,
            );
        }
        walk::walk_ts_import_equals_declaration(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let Some(init) = &it.init {
            match &it.id {
                BindingPattern::BindingIdentifier(id) => {
                    let name = id.name.to_string();
                    match init.get_inner_expression() {
                        Expression::FunctionExpression(_)
                        | Expression::ArrowFunctionExpression(_) => {
                            self.pending_name = Some(name);
                        }
                        _ => {
                            let val = self.resolve(self.summarize(init, 0), 0);
                            if matches!(
                                val,
                                Val::Obj(_) | Val::Str(_) | Val::Path(_) | Val::Bool(_)
                            ) && let Some(scope) = self.scopes.last_mut()
                            {
                                scope.insert(name, val);
                            }
                        }
                    }
                }
                BindingPattern::ObjectPattern(pattern) => {
                    // `const { ipcMain: main } = require('electron')` renames an electron member.
                    let from_electron = match init.get_inner_expression() {
                        Expression::CallExpression(c) => {
                            require_specifier(c).as_deref() == Some("electron")
                        }
                        Expression::Identifier(id) => id.name.as_str() == "electron",
                        _ => false,
                    };
                    if from_electron {
                        for prop in &pattern.properties {
                            if let (Some(key), BindingPattern::BindingIdentifier(local)) =
                                (prop.key.static_name(), &prop.value)
                            {
                                self.aliases.insert(local.name.to_string(), key.to_string());
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        self.pending_name = it.key.static_name().map(|n| n.to_string());
        walk::walk_method_definition(self, it);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let pending = self.pending_name.take();
        let name = it.id.as_ref().map(|id| id.name.to_string()).or(pending);
        self.functions.push(name);
        walk::walk_function(self, it, flags);
        self.functions.pop();
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        let name = self.pending_name.take();
        if let Some(name) = &name
            && let Some(body) = it.body.as_expression()
        {
            let val = self.resolve(self.summarize(body, 0), 0);
            if matches!(val, Val::Obj(_)) {
                self.returns.entry(name.clone()).or_insert(val);
            }
        }
        self.functions.push(name);
        walk::walk_arrow_function_expression(self, it);
        self.functions.pop();
    }

    fn visit_return_statement(&mut self, it: &ReturnStatement<'a>) {
        if let (Some(Some(name)), Some(arg)) = (self.functions.last(), &it.argument) {
            let val = self.resolve(self.summarize(arg, 0), 0);
            if matches!(val, Val::Obj(_)) && !self.returns.contains_key(name) {
                let name = name.clone();
                self.returns.insert(name, val);
            }
        }
        walk::walk_return_statement(self, it);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        self.on_call(it);
        walk::walk_call_expression(self, it);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        self.on_new(it);
        walk::walk_new_expression(self, it);
    }

    fn visit_object_expression(&mut self, it: &ObjectExpression<'a>) {
        self.on_object(it);
        walk::walk_object_expression(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(path: &str, src: &str) -> FileFacts {
        let parsed = parse_file(path, src);
        assert_eq!(parsed.status, ParseStatus::Ok, "{:?}", parsed.diagnostics);
        parsed.facts
    }

    #[test]
    fn line_index_maps_offsets() {
        let idx = LineIndex::new("ab\ncd\n\nx");
        assert_eq!(idx.loc(0), Loc { line: 1, column: 1 });
        assert_eq!(idx.loc(4), Loc { line: 2, column: 2 });
        assert_eq!(idx.loc(6), Loc { line: 3, column: 1 });
        assert_eq!(idx.loc(7), Loc { line: 4, column: 1 });
    }

    #[test]
    fn imports_of_every_kind() {
        let f = facts(
            "a.ts",
            "import x from './x';\nimport type { T } from './t';\nexport * from './y';\nexport { z } from './z';\nconst r = require('fs');\nconst d = import('./d');\nrequire(name);\nimport e = require('./e');",
        );
        let got: Vec<_> = f
            .imports
            .iter()
            .map(|i| (i.specifier.clone(), i.kind, i.loc.line))
            .collect();
        assert_eq!(
            got,
            [
                (Some("./x".into()), ImportKind::Import, 1),
                (Some("./y".into()), ImportKind::ExportFrom, 3),
                (Some("./z".into()), ImportKind::ExportFrom, 4),
                (Some("fs".into()), ImportKind::Require, 5),
                (Some("./d".into()), ImportKind::DynamicImport, 6),
                (None, ImportKind::Require, 7),
                (Some("./e".into()), ImportKind::Require, 8),
            ]
        );
    }

    #[test]
    fn ipc_calls_through_aliases_and_namespaces() {
        let f = facts(
            "m.js",
            "const { ipcMain: im, ipcRenderer } = require('electron');\nconst electron_1 = require('electron');\nconst CH = 'const-ch';\nim.handle('a', () => 1);\nelectron_1.ipcMain.on(`b`, () => {});\nipcRenderer.invoke(CH);\nwin.webContents.send('c' + x);\nevent.reply('r');\nrequire('electron').ipcRenderer.send('s');",
        );
        let got: Vec<_> = f
            .ipc
            .iter()
            .map(|i| (i.channel.clone(), i.api.clone(), i.role))
            .collect();
        assert_eq!(
            got,
            [
                (Some("a".into()), "ipcMain.handle".into(), IpcRole::Handler),
                (Some("b".into()), "ipcMain.on".into(), IpcRole::Handler),
                (
                    Some("const-ch".into()),
                    "ipcRenderer.invoke".into(),
                    IpcRole::Caller
                ),
                (None, "webContents.send".into(), IpcRole::MainSender),
                (Some("r".into()), "event.reply".into(), IpcRole::MainSender),
                (Some("s".into()), "ipcRenderer.send".into(), IpcRole::Caller),
            ]
        );
        assert_eq!(f.ipc[3].expression, "'c' + x");
    }

    #[test]
    fn window_options_through_variables_spreads_and_helpers() {
        let src = "const prefs = { nodeIntegration: true };\n\
function opts() {\n  const o = { webPreferences: { ...prefs, contextIsolation: !1, preload: path.join(__dirname, 'pre.js') } };\n  return o;\n}\n\
function make() {\n  const base = { width: 1 };\n  return new BrowserWindow({ ...base, ...opts() });\n}\n\
new electron.BrowserView(unknownOpts);\n\
const stray = { sandbox: false, webSecurity: cond };";
        let f = facts("main.js", src);
        assert_eq!(f.windows.len(), 3, "{:#?}", f.windows);
        let w = &f.windows[0];
        assert_eq!(w.kind, WindowKind::BrowserWindow);
        assert_eq!(w.loc.line, 8);
        let s: Vec<_> = w
            .settings
            .iter()
            .map(|s| (s.name.as_str(), s.value, s.loc.line))
            .collect();
        assert_eq!(
            s,
            [
                ("nodeIntegration", SettingValue::True, 1),
                ("contextIsolation", SettingValue::False, 3),
                ("preload", SettingValue::Other, 3),
            ]
        );
        assert_eq!(
            w.preload.as_ref().map(|p| p.0.clone()),
            Some(PathExpr::FromDir(vec!["pre.js".into()]))
        );
        assert!(w.notes.is_empty(), "{:?}", w.notes);
        let view = &f.windows[1];
        assert_eq!(view.kind, WindowKind::BrowserView);
        assert_eq!(view.notes.len(), 1);
        let stray = &f.windows[2];
        assert_eq!(stray.kind, WindowKind::OptionsObject);
        assert_eq!(stray.loc.line, 11);
        let s: Vec<_> = stray
            .settings
            .iter()
            .map(|s| (s.name.as_str(), s.value))
            .collect();
        assert_eq!(
            s,
            [
                ("sandbox", SettingValue::False),
                ("webSecurity", SettingValue::Unresolved)
            ]
        );
    }

    #[test]
    fn exposures_and_navigation() {
        let f = facts(
            "p.js",
            "const api = { ping: () => 1, ...{ pong: 2 } };\ncontextBridge.exposeInMainWorld('api', api);\ncontextBridge.exposeInMainWorld('other', electronAPI);\nwin.loadURL(`http://example.com/${x}`);\nwin.loadFile(join(__dirname, '../renderer/index.html'));\nshell.openExternal(url);\nwin.loadURL(`file://${path.join(__dirname, 'static/login.html')}`);\nwin.webContents.on('will-navigate', h);",
        );
        assert_eq!(f.exposed[0].key.as_deref(), Some("api"));
        assert_eq!(
            f.exposed[0].members,
            Some(vec!["ping".to_string(), "pong".to_string()])
        );
        assert_eq!(f.exposed[1].members, None);
        let kinds: Vec<_> = f.navigation.iter().map(|n| n.kind).collect();
        assert_eq!(
            kinds,
            [
                NavigationKind::LoadUrl,
                NavigationKind::LoadFile,
                NavigationKind::OpenExternal,
                NavigationKind::LoadUrl,
                NavigationKind::WillNavigateHandler
            ]
        );
        assert_eq!(f.navigation[0].expression, "`http://example.com/${x}`");
        assert_eq!(
            f.navigation[1].path,
            Some(PathExpr::FromDir(vec!["../renderer/index.html".into()]))
        );
        assert_eq!(
            f.navigation[3].path,
            Some(PathExpr::FromDir(vec!["static/login.html".into()]))
        );
    }

    #[test]
    fn syntax_errors_are_recovered_or_reported() {
        let parsed = parse_file("bad.js", "const a = ;\nipcMain.handle('x', f);");
        assert_ne!(parsed.status, ParseStatus::Ok);
        assert!(!parsed.diagnostics.is_empty());
        assert_eq!(parsed.diagnostics[0].1.line, 1);
        // JSX in a .js file parses on the second attempt.
        let parsed = parse_file("c.js", "const A = () => <div onClick={f}>hi</div>;");
        assert_eq!(parsed.status, ParseStatus::Ok, "{:?}", parsed.diagnostics);
    }
}
