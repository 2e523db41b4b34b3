//! The value evaluator of the JavaScript visitor: what an expression evaluates to as far as the
//! analysis can tell without running it (literals, objects and their spreads, paths, template
//! strings, variables of enclosing scopes, values functions return), bounded in depth.

use super::*;

/// A summarized value.
#[derive(Debug, Clone)]
pub(super) enum Val {
    Bool(bool),
    Str(String),
    Num,
    Obj(Rc<Obj>),
    Ident(String),
    Call(String),
    Path(PathExpr),
    /// One of several values chosen at run time (`c ? a : b`, `a || b`, `a ?? b`).
    Either(Vec<Val>),
    Other,
}

#[derive(Debug)]
pub(super) struct Obj {
    span_start: u32,
    loc: Loc,
    items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub(super) enum Item {
    /// `key: value`; the span is the value's, for showing it later.
    Prop {
        key: String,
        value: Val,
        span: Span,
        loc: Loc,
    },
    /// `...value`.
    Spread { value: Val, span: Span },
}

impl Collector<'_> {
    pub(super) fn summarize(&self, expr: &Expression<'_>, depth: usize) -> Val {
        if depth > MAX_VALUE_DEPTH {
            return Val::Other;
        }
        match expr.get_inner_expression() {
            Expression::BooleanLiteral(b) => Val::Bool(b.value),
            Expression::StringLiteral(s) => Val::Str(s.value.to_string()),
            Expression::NumericLiteral(_) => Val::Num,
            Expression::TemplateLiteral(t) => self.template(t),
            Expression::UnaryExpression(u) if u.operator == UnaryOperator::LogicalNot => {
                // Minifiers write `!0` for true and `!1` for false.
                match u.argument.get_inner_expression() {
                    Expression::NumericLiteral(n) => Val::Bool(n.value == 0.0),
                    _ => Val::Other,
                }
            }
            Expression::ObjectExpression(o) => self.object(o, depth),
            Expression::Identifier(id) if id.name.as_str() == "undefined" => Val::Other,
            Expression::Identifier(id) => Val::Ident(id.name.to_string()),
            Expression::CallExpression(call) => self.call_value(call, depth),
            Expression::ConditionalExpression(c) => Val::Either(vec![
                self.summarize(&c.consequent, depth + 1),
                self.summarize(&c.alternate, depth + 1),
            ]),
            Expression::LogicalExpression(l) => Val::Either(vec![
                self.summarize(&l.left, depth + 1),
                self.summarize(&l.right, depth + 1),
            ]),
            _ => Val::Other,
        }
    }

    pub(super) fn object(&self, o: &ObjectExpression<'_>, depth: usize) -> Val {
        let mut items = Vec::with_capacity(o.properties.len());
        for prop in &o.properties {
            match prop {
                ObjectPropertyKind::ObjectProperty(p) => {
                    let Some(key) = p.key.static_name() else {
                        continue;
                    };
                    items.push(Item::Prop {
                        key: key.to_string(),
                        value: self.summarize(&p.value, depth + 1),
                        span: p.value.span(),
                        loc: self.loc(p.span),
                    });
                }
                ObjectPropertyKind::SpreadProperty(s) => items.push(Item::Spread {
                    value: self.summarize(&s.argument, depth + 1),
                    span: s.argument.span(),
                }),
            }
        }
        Val::Obj(Rc::new(Obj {
            span_start: o.span.start,
            loc: self.loc(o.span),
            items,
        }))
    }

    pub(super) fn template(&self, t: &TemplateLiteral<'_>) -> Val {
        if let Some(s) = t.single_quasi() {
            return Val::Str(s.to_string());
        }
        let cooked = |i: usize| {
            t.quasis
                .get(i)
                .and_then(|q| q.value.cooked)
                .map(|s| s.to_string())
                .unwrap_or_default()
        };
        // `${__dirname}/x.html` and `file://${path.join(__dirname, 'x.html')}`.
        if t.expressions.len() == 1 {
            let (head, tail) = (cooked(0), cooked(1));
            let expr = t.expressions[0].get_inner_expression();
            if matches!(expr, Expression::Identifier(id) if id.name.as_str() == "__dirname")
                && (head.is_empty() || head == "file://")
            {
                return Val::Path(PathExpr::FromDir(vec![tail]));
            }
            if let Expression::CallExpression(call) = expr
                && (head.is_empty() || head == "file://")
                && tail.is_empty()
                && let Some(path) = self.path_call(call)
            {
                return Val::Path(path);
            }
        }
        Val::Other
    }

    pub(super) fn call_value(&self, call: &CallExpression<'_>, depth: usize) -> Val {
        if let Some(path) = self.path_call(call) {
            return Val::Path(path);
        }
        let chain = self.chain(&call.callee);
        let last = chain.as_ref().and_then(|c| c.last()).map(String::as_str);
        // `Object.assign({}, a, b)` merges like spreads.
        if chain
            .as_deref()
            .is_some_and(|c| c.len() == 2 && c[0] == "Object" && c[1] == "assign")
        {
            let items = call
                .arguments
                .iter()
                .filter_map(Argument::as_expression)
                .map(|e| Item::Spread {
                    value: self.summarize(e, depth + 1),
                    span: e.span(),
                })
                .collect();
            return Val::Obj(Rc::new(Obj {
                span_start: call.span.start,
                loc: self.loc(call.span),
                items,
            }));
        }
        match last {
            Some(name) if name != "()" && name != "[]" => Val::Call(name.to_string()),
            _ => Val::Other,
        }
    }

    /// Recognises `path.join(__dirname, 'a', 'b')`, `path.resolve(…)`, `join(…)`,
    /// `path.join(app.getAppPath(), …)` and `url.format({ pathname: … })`.
    pub(super) fn path_call(&self, call: &CallExpression<'_>) -> Option<PathExpr> {
        let chain = self.chain(&call.callee)?;
        let last = chain.last()?.as_str();
        let args: Vec<&Expression<'_>> = call
            .arguments
            .iter()
            .filter_map(Argument::as_expression)
            .collect();
        if last == "format" {
            let Val::Obj(o) = self.summarize(args.first()?, 1) else {
                return None;
            };
            return o.items.iter().rev().find_map(|item| match item {
                Item::Prop { key, value, .. } if key == "pathname" => match value {
                    Val::Path(p) => Some(p.clone()),
                    Val::Str(s) => Some(PathExpr::Literal(s.clone())),
                    _ => None,
                },
                _ => None,
            });
        }
        if last != "join" && last != "resolve" {
            return None;
        }
        let literal = |e: &Expression<'_>| match e.get_inner_expression() {
            Expression::StringLiteral(s) => Some(s.value.to_string()),
            Expression::TemplateLiteral(t) => t.single_quasi().map(|s| s.to_string()),
            _ => None,
        };
        let first = args.first()?.get_inner_expression();
        let rest: Option<Vec<String>> = args.iter().skip(1).map(|e| literal(e)).collect();
        let is_dirname =
            matches!(first, Expression::Identifier(id) if id.name.as_str() == "__dirname");
        let is_app_path = matches!(first, Expression::CallExpression(c)
            if self.chain(&c.callee).and_then(|ch| ch.last().cloned()).as_deref() == Some("getAppPath"));
        match rest {
            Some(segs) if is_dirname && !segs.is_empty() => Some(PathExpr::FromDir(segs)),
            Some(segs) if is_app_path && !segs.is_empty() => Some(PathExpr::FromRoot(segs)),
            _ => {
                let all: Option<Vec<String>> = args.iter().map(|e| literal(e)).collect();
                if let Some(all) = all.filter(|a| !a.is_empty()) {
                    return Some(PathExpr::Literal(all.join("/")));
                }
                let last_seg = literal(args.last()?)?;
                let base = last_seg.rsplit('/').next().unwrap_or(&last_seg).to_string();
                (!base.is_empty()).then_some(PathExpr::Basename(base))
            }
        }
    }

    /// Replaces identifiers by the values bound to them in enclosing scopes.
    pub(super) fn resolve(&self, val: Val, depth: usize) -> Val {
        if depth > MAX_VALUE_DEPTH {
            return val;
        }
        match val {
            Val::Ident(name) => self.lookup(&name).cloned().unwrap_or(Val::Ident(name)),
            Val::Either(options) => Val::Either(
                options
                    .into_iter()
                    .map(|v| self.resolve(v, depth + 1))
                    .collect(),
            ),
            Val::Obj(o) => {
                let items = o
                    .items
                    .iter()
                    .map(|item| match item {
                        Item::Prop {
                            key,
                            value,
                            span,
                            loc,
                        } => Item::Prop {
                            key: key.clone(),
                            value: self.resolve(value.clone(), depth + 1),
                            span: *span,
                            loc: *loc,
                        },
                        Item::Spread { value, span } => Item::Spread {
                            value: self.resolve(value.clone(), depth + 1),
                            span: *span,
                        },
                    })
                    .collect();
                Val::Obj(Rc::new(Obj {
                    span_start: o.span_start,
                    loc: o.loc,
                    items,
                }))
            }
            other => other,
        }
    }

    /// Replaces calls of same-file functions by the objects they return.
    pub(super) fn substitute_calls(&self, val: &Val, depth: usize) -> Val {
        if depth > MAX_VALUE_DEPTH {
            return val.clone();
        }
        match val {
            Val::Call(name) => match self.returns.get(name) {
                Some(ret) => self.substitute_calls(ret, depth + 1),
                None => val.clone(),
            },
            Val::Either(options) => Val::Either(
                options
                    .iter()
                    .map(|v| self.substitute_calls(v, depth + 1))
                    .collect(),
            ),
            Val::Obj(o) => {
                let items = o
                    .items
                    .iter()
                    .map(|item| match item {
                        Item::Prop {
                            key,
                            value,
                            span,
                            loc,
                        } => Item::Prop {
                            key: key.clone(),
                            value: self.substitute_calls(value, depth + 1),
                            span: *span,
                            loc: *loc,
                        },
                        Item::Spread { value, span } => Item::Spread {
                            value: self.substitute_calls(value, depth + 1),
                            span: *span,
                        },
                    })
                    .collect();
                Val::Obj(Rc::new(Obj {
                    span_start: o.span_start,
                    loc: o.loc,
                    items,
                }))
            }
            other => other.clone(),
        }
    }

    // ---- member chains ---------------------------------------------------------------------

    /// The dotted names of a callee: `electron_1.ipcMain.handle` → `["ipcMain"…]` style list
    /// with the first name mapped through electron aliases. Calls in the middle become `()`,
    /// computed non-literal members `[]`.
    pub(super) fn chain(&self, expr: &Expression<'_>) -> Option<Vec<String>> {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = expr.get_inner_expression();
        for _ in 0..64 {
            let next: &Expression<'_> = match cur {
                Expression::StaticMemberExpression(m) => {
                    parts.push(m.property.name.to_string());
                    &m.object
                }
                Expression::ComputedMemberExpression(m) => {
                    parts.push(static_string(&m.expression).unwrap_or_else(|| "[]".into()));
                    &m.object
                }
                Expression::PrivateFieldExpression(m) => {
                    parts.push(format!("#{}", m.field.name));
                    &m.object
                }
                Expression::ChainExpression(c) => match &c.expression {
                    ChainElement::CallExpression(call) => {
                        parts.push("()".into());
                        &call.callee
                    }
                    ChainElement::TSNonNullExpression(n) => &n.expression,
                    other => match other.as_member_expression() {
                        Some(MemberExpression::StaticMemberExpression(m)) => {
                            parts.push(m.property.name.to_string());
                            &m.object
                        }
                        Some(MemberExpression::ComputedMemberExpression(m)) => {
                            parts.push(static_string(&m.expression).unwrap_or_else(|| "[]".into()));
                            &m.object
                        }
                        _ => return None,
                    },
                },
                Expression::SequenceExpression(seq) => seq.expressions.last()?,
                Expression::CallExpression(call) => {
                    if let Some(spec) = require_specifier(call) {
                        parts.push(spec);
                        break;
                    }
                    parts.push("()".into());
                    &call.callee
                }
                Expression::Identifier(id) => {
                    let name = id.name.as_str();
                    parts.push(
                        self.aliases
                            .get(name)
                            .cloned()
                            .unwrap_or_else(|| name.into()),
                    );
                    break;
                }
                Expression::ThisExpression(_) => {
                    parts.push("this".into());
                    break;
                }
                _ => {
                    parts.push("?".into());
                    break;
                }
            };
            cur = next.get_inner_expression();
        }
        parts.reverse();
        Some(parts)
    }

    /// A channel or key argument: a literal, or a name bound to a literal in scope.
    pub(super) fn literal_arg(&self, arg: Option<&Argument<'_>>) -> (Option<String>, String) {
        let Some(expr) = arg.and_then(Argument::as_expression) else {
            return (None, String::new());
        };
        let text = short(self.src(expr.span()));
        let value = match self.summarize(expr, 0) {
            Val::Str(s) => Some(s),
            Val::Ident(name) => match self.lookup(&name) {
                Some(Val::Str(s)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        (value, text)
    }
}

/// The names of an object value's properties (spreads of resolved objects included).
pub(super) fn object_keys(val: &Val, src: &str) -> Option<Vec<String>> {
    let Val::Obj(o) = val else { return None };
    let mut keys = Vec::new();
    let mut notes = Vec::new();
    for key in flatten(o, src, &mut notes, &mut HashSet::new(), 0).into_keys() {
        keys.push(key);
    }
    Some(keys)
}

/// Flattened properties: key → (value, value span, location). Later keys override earlier
/// ones, as in JavaScript; spreads of unresolved values are noted.
pub(super) type Props = BTreeMap<String, (Val, Span, Loc)>;

/// The shortened source text of `span`.
pub(super) fn snippet(src: &str, span: Span) -> String {
    short(
        src.get(span.start as usize..span.end as usize)
            .unwrap_or(""),
    )
}

pub(super) fn flatten(
    obj: &Obj,
    src: &str,
    notes: &mut Vec<String>,
    used: &mut HashSet<u32>,
    depth: usize,
) -> Props {
    let mut out = Props::new();
    used.insert(obj.span_start);
    if depth > MAX_VALUE_DEPTH {
        return out;
    }
    for item in &obj.items {
        match item {
            Item::Prop {
                key,
                value,
                span,
                loc,
            } => {
                out.insert(key.clone(), (value.clone(), *span, *loc));
            }
            Item::Spread { value, span } => match value {
                Val::Obj(inner) => out.extend(flatten(inner, src, notes, used, depth + 1)),
                // `...(cond ? { a } : {})`: every branch's keys may apply; a tracked key set
                // in a branch is kept but noted, since the condition decides.
                Val::Either(options) if options.iter().all(|v| matches!(v, Val::Obj(_))) => {
                    for option in options.iter().rev() {
                        if let Val::Obj(inner) = option {
                            let branch = flatten(inner, src, notes, used, depth + 1);
                            for key in branch
                                .keys()
                                .filter(|k| TRACKED_PREFS.contains(&k.as_str()))
                            {
                                notes.push(format!(
                                    "`{key}` is set inside a conditional spread (line {}); its value depends on a run-time condition",
                                    obj.loc.line
                                ));
                            }
                            out.extend(branch);
                        }
                    }
                }
                _ => notes.push(format!(
                    "spread of `{}` (line {}) was not resolved; it may set or override keys",
                    shorter(&snippet(src, *span)),
                    obj.loc.line
                )),
            },
        }
    }
    out
}

/// A string literal or expression-free template literal.
pub(super) fn static_string(expr: &Expression<'_>) -> Option<String> {
    match expr.get_inner_expression() {
        Expression::StringLiteral(s) => Some(s.value.to_string()),
        Expression::TemplateLiteral(t) => t.single_quasi().map(|s| s.to_string()),
        _ => None,
    }
}

/// The module name of `require("x")`.
pub(super) fn require_specifier(call: &CallExpression<'_>) -> Option<String> {
    match call.callee.get_inner_expression() {
        Expression::Identifier(id) if id.name.as_str() == "require" => call
            .arguments
            .first()
            .and_then(Argument::as_expression)
            .and_then(static_string),
        _ => None,
    }
}
