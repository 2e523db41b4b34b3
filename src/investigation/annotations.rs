//! Analyst annotations: what the analyst has learned about one place of a document (a procedure's
//! name, comment or C prototype; an address's comment; a data location's name or C type; a
//! document's C types). The rules for annotating and revising live here, with the small check of C
//! declarations; the store keeps revisions as it keeps an unknown's. Views show annotations beside
//! the file's facts through [`AnalystView`], never in their place.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{DocumentSelector, Page, PageRequest};
use super::observe::{self, EvidenceInline, Qualifiers, in_document, subject_of};
use super::{Investigation, InvestigationError, Result};
use crate::evidence::{Authority, Confidence};
use crate::ids::{Address, AnnotationId, EvidenceId};
use crate::providers::decompile::DeclarationCheck;
use crate::store::{
    AnnotationFilter, AnnotationHead, AnnotationKind, AnnotationPlace, AnnotationRecord,
    AnnotationScope, LiveAnnotation, NewAnnotation,
};

/// A JSON object, as output schemas describe nested records (tools/list budget).
type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Longest name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest comment or C declaration, in bytes.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Longest rationale, in bytes.
pub const MAX_RATIONALE_BYTES: usize = 4096;

/// Arguments of `annotate`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnotateArgs {
    /// Document, when several.
    #[serde(default)]
    pub document: Option<String>,
    /// Procedure (address or name).
    #[serde(default)]
    pub procedure: Option<String>,
    /// An address (instruction or data). Neither: the document.
    #[serde(default)]
    pub address: Option<Address>,
    /// What it says.
    pub kind: AnnotationKind,
    /// Name (≤256 B), comment or C declaration (≤16 KiB).
    #[serde(default)]
    pub text: Option<String>,
    /// Why (≤4 KiB).
    pub rationale: String,
    /// Evidence ids cited.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub cites: Vec<EvidenceId>,
    /// Annotation to revise.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub supersedes: Option<AnnotationId>,
    /// Head revision read.
    #[serde(default)]
    pub revision: Option<i64>,
    /// Withdraw it.
    #[serde(default)]
    pub withdraw: bool,
}

/// What `annotate` recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Annotated {
    /// The annotation at its new head (as list_annotations lists it).
    #[schemars(with = "JsonObject")]
    pub annotation: AnnotationHead,
    /// What the check of the text covered (for C declarations: what rea checked, and what not).
    pub checked: Vec<String>,
    /// The revision's Evidence record, inline as every result carries it (described as an
    /// object here: get_evidence's schema describes it in full).
    #[schemars(with = "JsonObject")]
    pub evidence: EvidenceInline,
}

/// Arguments of `list_annotations`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAnnotationsArgs {
    /// Only this document.
    #[serde(default)]
    pub document: Option<String>,
    /// Only at this procedure or address.
    #[serde(default)]
    pub procedure: Option<String>,
    /// Only this kind.
    #[serde(default)]
    #[schemars(with = "AnnotationKind")]
    pub kind: Option<AnnotationKind>,
    /// And history.
    #[serde(default)]
    pub include_history: bool,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u64,
    /// Rows (default 50, ≤500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of annotation heads.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AnnotationPage {
    /// Heads by document, address and id: id, document, scope, address, kind, head (revision,
    /// text, withdrawn, rationale, cites, evidence_id, recorded_at), history.
    #[schemars(with = "Vec<JsonObject>")]
    pub annotations: Vec<AnnotationHead>,
    /// Heads selected in all.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// Why an annotation was refused; nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// Both a procedure and an address were named.
    #[error("name procedure or address, not both (neither annotates the document)")]
    Place,
    /// The kind does not apply to the place.
    #[error("kind {kind} does not apply to {scope}: {allowed}")]
    KindScope {
        /// The kind.
        kind: &'static str,
        /// The place.
        scope: &'static str,
        /// What does apply.
        allowed: &'static str,
    },
    /// A field is empty or too long.
    #[error("{field} {problem}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A name is not an identifier.
    #[error(
        "name {text:?} is not a C identifier (letters, digits, _; `::` or `.` may join identifiers): {problem} at byte {position}"
    )]
    Name {
        /// The name.
        text: String,
        /// Byte offset of the problem.
        position: usize,
        /// What is wrong.
        problem: &'static str,
    },
    /// A C declaration failed the check.
    #[error("{kind} is not a C declaration rea accepts: {problem} at byte {position}")]
    Declaration {
        /// The kind.
        kind: &'static str,
        /// Byte offset of the problem.
        position: usize,
        /// What is wrong.
        problem: String,
    },
    /// The place already has a live annotation of this kind.
    #[error("{what} already has {kind} annotation {id}: revise it with supersedes {id}")]
    Exists {
        /// The place.
        what: String,
        /// The kind.
        kind: &'static str,
        /// The live annotation.
        id: AnnotationId,
    },
    /// No annotation has the id.
    #[error("no annotation {0} for the active target")]
    NotFound(AnnotationId),
    /// The revision named is not the head.
    #[error(
        "annotation {id} is at revision {actual}, not {expected}: read it again (list_annotations) and retry"
    )]
    Stale {
        /// The annotation.
        id: AnnotationId,
        /// The revision named.
        expected: i64,
        /// The head.
        actual: i64,
    },
    /// A revision changes what the annotation is about.
    #[error("a revision keeps the annotation's place and kind ({0}); annotate anew for another")]
    PlaceChanged(String),
    /// A cited id is not in the ledger.
    #[error("cited Evidence {0} is not in this session's ledger; nothing was recorded")]
    NotInLedger(EvidenceId),
}

fn field(field: &'static str, problem: impl Into<String>) -> AnnotationError {
    AnnotationError::Field {
        field,
        problem: problem.into(),
    }
}

/// Checks a name: identifiers joined by `::` or `.`.
pub(crate) fn check_name(text: &str) -> std::result::Result<(), AnnotationError> {
    let bad = |position: usize, problem: &'static str| AnnotationError::Name {
        text: text.to_owned(),
        position,
        problem,
    };
    if text.is_empty() {
        return Err(bad(0, "empty"));
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut at_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        if at_start {
            if !(b.is_ascii_alphabetic() || b == b'_') {
                return Err(bad(i, "an identifier must start with a letter or _"));
            }
            at_start = false;
            i += 1;
        } else if b.is_ascii_alphanumeric() || b == b'_' {
            i += 1;
        } else if b == b'.' {
            at_start = true;
            i += 1;
        } else if text[i..].starts_with("::") {
            at_start = true;
            i += 2;
        } else {
            return Err(bad(i, "character not allowed"));
        }
    }
    if at_start {
        return Err(bad(
            text.len(),
            "a separator must be followed by an identifier",
        ));
    }
    Ok(())
}

const C_WORDS: &[&str] = &[
    "auto",
    "char",
    "const",
    "double",
    "enum",
    "extern",
    "float",
    "int",
    "long",
    "register",
    "restrict",
    "short",
    "signed",
    "static",
    "struct",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "_Bool",
    "bool",
    "inline",
    "__stdcall",
    "__cdecl",
    "__fastcall",
];

#[derive(Debug, Clone, PartialEq)]
enum Token<'a> {
    Ident(&'a str, usize),
    Punct(u8, usize),
    Number(usize),
}

/// Splits a declaration into identifiers, numbers and punctuation, refusing characters no
/// declaration holds (quotes, `#`, `@`…).
fn tokens<'a>(
    text: &'a str,
    kind: &'static str,
) -> std::result::Result<Vec<Token<'a>>, AnnotationError> {
    let bytes = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(&text[start..i], start));
        } else if b.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Token::Number(start));
        } else if b"()[]{}*,;:=.&<>-+~|".contains(&b) {
            out.push(Token::Punct(b, i));
            i += 1;
        } else {
            return Err(AnnotationError::Declaration {
                kind,
                position: i,
                problem: format!(
                    "character {:?} is not allowed",
                    text[i..].chars().next().unwrap_or('?')
                ),
            });
        }
    }
    Ok(out)
}

/// Checks that brackets pair up, naming the first that does not.
fn balanced(
    tokens: &[Token<'_>],
    kind: &'static str,
    end: usize,
) -> std::result::Result<(), AnnotationError> {
    let mut open: Vec<(u8, usize)> = vec![];
    for t in tokens {
        if let Token::Punct(b, at) = *t {
            match b {
                b'(' | b'[' | b'{' => open.push((b, at)),
                b')' | b']' | b'}' => {
                    let want = match b {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    match open.pop() {
                        Some((o, _)) if o == want => {}
                        _ => {
                            return Err(AnnotationError::Declaration {
                                kind,
                                position: at,
                                problem: format!("{:?} closes nothing open", b as char),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if let Some((b, at)) = open.pop() {
        let _ = end;
        return Err(AnnotationError::Declaration {
            kind,
            position: at,
            problem: format!("{:?} is never closed", b as char),
        });
    }
    Ok(())
}

/// What the small C check leaves to a full parser, said in every result that used it.
const NOT_CHECKED: &str = "not checked: that the types named exist and the declaration parses as C (rea checks brackets, the declarator's name and the characters; a full C parser, pycparser through the angr worker, is not used yet)";

/// The start of what a result says when no C parser read the declaration (a limitation of its
/// Evidence, as every `not checked` line is).
const NOT_PARSED: &str = "not checked by a C parser: that the types named exist and the declaration parses as C (rea checked brackets, the declarator's name and the characters)";

/// Checks a procedure prototype: brackets pair, one parameter list, and the declarator's name
/// (the identifier before the parameter list) is one of `names` when any are given. Returns the
/// declarator's name and what was checked.
pub(crate) fn check_prototype(
    text: &str,
    names: &[&str],
) -> std::result::Result<(String, Vec<String>), AnnotationError> {
    const KIND: &str = "prototype";
    let toks = tokens(text, KIND)?;
    balanced(&toks, KIND, text.len())?;
    // The parameter list is the first `(` that follows an identifier that is no C keyword; a
    // `(` that opens a grouping declarator (`int (*f)(int)`) holds the name after its `*`.
    let mut name = None;
    for (i, t) in toks.iter().enumerate() {
        if let Token::Punct(b'(', _) = t {
            match i.checked_sub(1).map(|j| &toks[j]) {
                Some(Token::Ident(id, at)) if !C_WORDS.contains(id) => {
                    name = Some((*id, *at));
                    break;
                }
                _ => {
                    if let Some(Token::Ident(id, at)) = toks[i + 1..]
                        .iter()
                        .find(|t| !matches!(t, Token::Punct(b'*', _)))
                        && !C_WORDS.contains(id)
                    {
                        name = Some((*id, *at));
                        break;
                    }
                }
            }
        }
    }
    let Some((name, at)) = name else {
        return Err(AnnotationError::Declaration {
            kind: KIND,
            position: 0,
            problem:
                "no declarator name followed by a parameter list, as in `int check(const char *s)`"
                    .into(),
        });
    };
    if toks
        .iter()
        .take_while(|t| !matches!(t, Token::Ident(_, a) if *a == at))
        .all(|t| !matches!(t, Token::Ident(..)))
    {
        return Err(AnnotationError::Declaration {
            kind: KIND,
            position: at,
            problem: "no return type before the name".into(),
        });
    }
    if let Some(Token::Punct(b'{', at)) = toks.iter().find(|t| matches!(t, Token::Punct(b'{', _))) {
        return Err(AnnotationError::Declaration {
            kind: KIND,
            position: *at,
            problem: "a prototype has no body".into(),
        });
    }
    if !names.is_empty() && !names.contains(&name) {
        return Err(AnnotationError::Declaration {
            kind: KIND,
            position: at,
            problem: format!(
                "the declarator names {name:?}, but the procedure is {}",
                names.join(" / ")
            ),
        });
    }
    let mut checked = vec![
        "brackets pair up".to_owned(),
        format!("declarator name {name:?} with a parameter list"),
    ];
    if names.is_empty() {
        checked.push("the procedure has no file or analyst name to match the declarator's".into());
    } else {
        checked.push("the name matches the procedure's".into());
    }
    checked.push(NOT_CHECKED.to_owned());
    Ok((name.to_owned(), checked))
}

/// Checks a C type: for a document, a struct, union or enum definition or a typedef naming a
/// type; for a data location, a type name (`uint32_t`, `struct s *`, `char[16]`).
pub(crate) fn check_type(
    text: &str,
    document_level: bool,
) -> std::result::Result<Vec<String>, AnnotationError> {
    const KIND: &str = "type";
    let toks = tokens(text, KIND)?;
    balanced(&toks, KIND, text.len())?;
    let first = toks.first();
    if document_level {
        match first {
            Some(Token::Ident("struct" | "union" | "enum", _)) => {
                if !matches!(toks.get(1), Some(Token::Ident(..))) {
                    return Err(AnnotationError::Declaration {
                        kind: KIND,
                        position: match toks.get(1) {
                            Some(Token::Punct(_, a) | Token::Ident(_, a) | Token::Number(a)) => *a,
                            None => text.len(),
                        },
                        problem: "a document-level struct, union or enum needs a tag name".into(),
                    });
                }
            }
            Some(Token::Ident("typedef", _)) => {
                // A typedef of a function pointer names its type inside the grouping
                // declarator (`typedef int (*op_fn)(int, int);`), any other at its end.
                let grouped = toks.windows(3).find_map(|w| match w {
                    [
                        Token::Punct(b'(', _),
                        Token::Punct(b'*', _),
                        named @ Token::Ident(..),
                    ] => Some(named),
                    _ => None,
                });
                let named = grouped.or_else(|| {
                    toks.iter().rev().find(|t| {
                        !matches!(t, Token::Punct(b';' | b')' | b']', _) | Token::Number(_))
                    })
                });
                if !matches!(named, Some(Token::Ident(id, _)) if !C_WORDS.contains(id)) {
                    return Err(AnnotationError::Declaration {
                        kind: KIND,
                        position: text.len(),
                        problem: "a typedef must end with the name it defines".into(),
                    });
                }
            }
            _ => {
                return Err(AnnotationError::Declaration {
                    kind: KIND,
                    position: 0,
                    problem: "a document's type starts with struct, union, enum or typedef".into(),
                });
            }
        }
    } else if !matches!(first, Some(Token::Ident(..))) {
        return Err(AnnotationError::Declaration {
            kind: KIND,
            position: 0,
            problem: "a data type starts with a type name".into(),
        });
    }
    Ok(vec!["brackets pair up".to_owned(), NOT_CHECKED.to_owned()])
}

/// Checks the text and rationale of a revision against the caps, and the text against its kind.
fn check_sizes(
    text: &str,
    rationale: &str,
    kind: AnnotationKind,
) -> std::result::Result<(), AnnotationError> {
    let cap = if kind == AnnotationKind::Name {
        MAX_NAME_BYTES
    } else {
        MAX_TEXT_BYTES
    };
    if text.trim().is_empty() {
        return Err(field("text", "must not be empty"));
    }
    if text.len() > cap {
        return Err(field(
            "text",
            format!("is {} bytes; at most {cap}", text.len()),
        ));
    }
    if rationale.trim().is_empty() {
        return Err(field("rationale", "must not be empty"));
    }
    if rationale.len() > MAX_RATIONALE_BYTES {
        return Err(field(
            "rationale",
            format!(
                "is {} bytes; at most {MAX_RATIONALE_BYTES}",
                rationale.len()
            ),
        ));
    }
    Ok(())
}

fn describe(place: &AnnotationPlace) -> String {
    match (place.scope, place.address) {
        (AnnotationScope::Document, _) | (_, None) => format!("document {}", place.document),
        (scope, Some(a)) => format!("{} {a} in {}", scope.as_str(), place.document),
    }
}

impl Investigation {
    /// `annotate`: records one revision of an annotation as Evidence (authority
    /// analyst-inference, confidence inferred), after checking its place, text and citations.
    pub async fn annotate(&self, args: AnnotateArgs) -> Result<Annotated> {
        let (s, a) = self.active()?;
        let store = s.store();
        let sha = a.target.sha256.clone();
        let given_place = [args.procedure.is_some(), args.address.is_some()]
            .iter()
            .filter(|g| **g)
            .count();
        // The place: the superseded head's, or the one named.
        let (id, supersedes, place, head) = match &args.supersedes {
            Some(id) => {
                let head = store
                    .annotation(id)?
                    .ok_or_else(|| AnnotationError::NotFound(id.clone()))?;
                let expected = args.revision.ok_or_else(|| {
                    field(
                        "revision",
                        "is required with supersedes: the head revision you read",
                    )
                })?;
                if expected != head.head.revision {
                    return Err(AnnotationError::Stale {
                        id: id.clone(),
                        expected,
                        actual: head.head.revision,
                    }
                    .into());
                }
                if head.kind != args.kind {
                    return Err(AnnotationError::PlaceChanged(format!(
                        "{} of {}",
                        head.kind.as_str(),
                        describe(&head.place)
                    ))
                    .into());
                }
                if given_place > 0 {
                    let named = self.place(&s, &a, &args).await?;
                    if named.0 != head.place {
                        return Err(AnnotationError::PlaceChanged(format!(
                            "{} of {}",
                            head.kind.as_str(),
                            describe(&head.place)
                        ))
                        .into());
                    }
                }
                (id.clone(), Some(expected), head.place.clone(), Some(head))
            }
            None => {
                if args.withdraw || args.revision.is_some() {
                    return Err(field(
                        "supersedes",
                        "is required to withdraw or to name a revision",
                    )
                    .into());
                }
                if given_place > 1 {
                    return Err(AnnotationError::Place.into());
                }
                let (place, _) = self.place(&s, &a, &args).await?;
                let seed = format!(
                    "{sha}\0{}\0{}\0{:?}\0{}\0{}\0{}",
                    place.document,
                    place.scope.as_str(),
                    place.address,
                    args.kind.as_str(),
                    crate::store::now_rfc3339(),
                    std::process::id()
                );
                (AnnotationId::derive(seed.as_bytes()), None, place, None)
            }
        };
        allowed(args.kind, place.scope)?;
        let text = match (&args.text, &head) {
            (Some(t), _) => t.clone(),
            (None, Some(h)) if args.withdraw => h.head.text.clone(),
            _ => return Err(field("text", "is required unless withdrawing").into()),
        };
        check_sizes(&text, &args.rationale, args.kind)?;
        if args.cites.is_empty() && !args.withdraw {
            return Err(field("cites", "needs at least one Evidence id of this ledger").into());
        }
        for e in &args.cites {
            if !store.has_evidence(e)? {
                return Err(AnnotationError::NotInLedger(e.clone()).into());
            }
        }
        let live = store.annotation_heads(&sha, Some(&place.document))?;
        if supersedes.is_none()
            && let Some(other) = live.iter().find(|h| {
                h.kind == args.kind
                    && h.scope == place.scope
                    && h.address == place.address.map(|a| a.0)
            })
        {
            return Err(AnnotationError::Exists {
                what: describe(&place),
                kind: args.kind.as_str(),
                id: other.id.clone(),
            }
            .into());
        }
        let checked = if args.withdraw {
            vec!["a withdrawal: the text is the last one given, not checked again".to_owned()]
        } else {
            self.check_text(&s, &a, &place, args.kind, &text, &live)
                .await?
        };
        let revision = supersedes.map_or(1, |r| r + 1);
        let result = AnnotationRecord {
            annotation_id: id.clone(),
            revision,
            place: place.clone(),
            kind: args.kind,
            text: text.clone(),
            withdrawn: args.withdraw,
            rationale: args.rationale.clone(),
        };
        let mut q = Qualifiers::observed().linked(args.cites.clone());
        q.confidence = Confidence::Inferred;
        q.authority = Authority::AnalystInference;
        q.limitations = checked
            .iter()
            .filter(|c| c.starts_with("not checked"))
            .cloned()
            .collect();
        let q = q.at(in_document(
            &place.document,
            place.address.map(|a| a.to_string()),
        ));
        let record = observe::record("annotate", Some(subject_of(&a.target)), &args, &result, q)?;
        let (annotation, outcome) = store
            .record_annotation(NewAnnotation {
                id,
                supersedes,
                target_sha256: sha,
                place,
                kind: args.kind,
                text,
                withdrawn: args.withdraw,
                rationale: args.rationale.clone(),
                cites: args.cites.clone(),
                record: record.clone(),
            })
            .await?;
        Ok(Annotated {
            annotation,
            checked,
            evidence: EvidenceInline::new(outcome, record),
        })
    }

    /// The place `args` names, with the procedure's file name when it is a procedure.
    async fn place(
        &self,
        s: &super::session::Snapshot,
        a: &super::session::ActiveTarget,
        args: &AnnotateArgs,
    ) -> Result<(AnnotationPlace, Option<String>)> {
        let selector = DocumentSelector::new(args.document.as_deref());
        if let Some(p) = &args.procedure {
            let r = self.resolve_procedure(s, a, &selector, p).await?;
            return Ok((
                AnnotationPlace {
                    document: r.procedure.document.clone(),
                    scope: AnnotationScope::Procedure,
                    address: Some(r.procedure.address),
                },
                r.procedure.name.clone(),
            ));
        }
        let doc = selector.resolve_one(&a.target.documents)?.clone();
        if let Some(address) = args.address {
            let image = s.session.images.get(&doc).await?;
            if image.section_at(address.0).is_none() {
                return Err(InvestigationError::InvalidArgument(format!(
                    "{address} lies in no section of {}",
                    doc.name
                )));
            }
            let scope = if args.kind == AnnotationKind::Comment {
                AnnotationScope::Address
            } else {
                AnnotationScope::Data
            };
            return Ok((
                AnnotationPlace {
                    document: doc.name.clone(),
                    scope,
                    address: Some(address),
                },
                None,
            ));
        }
        Ok((
            AnnotationPlace {
                document: doc.name.clone(),
                scope: AnnotationScope::Document,
                address: None,
            },
            None,
        ))
    }

    /// Checks `text` as `kind` requires, saying what was checked.
    async fn check_text(
        &self,
        s: &super::session::Snapshot,
        a: &super::session::ActiveTarget,
        place: &AnnotationPlace,
        kind: AnnotationKind,
        text: &str,
        live: &[LiveAnnotation],
    ) -> Result<Vec<String>> {
        Ok(match kind {
            AnnotationKind::Name => {
                check_name(text)?;
                // A name the file gives another procedure would make the analyst's ambiguous
                // wherever a procedure is named.
                if place.scope == AnnotationScope::Procedure {
                    let taken = s.store().find_procedures(
                        a.target_id,
                        Some(&place.document),
                        None,
                        Some(text),
                    )?;
                    if let Some(other) = taken.iter().find(|r| Some(r.address) != place.address) {
                        return Err(field(
                            "text",
                            format!("{text:?} is the file's name of procedure {} in {}; choose another name", other.address, other.document),
                        )
                        .into());
                    }
                }
                vec!["a C identifier (`::` and `.` may join identifiers)".to_owned()]
            }
            AnnotationKind::Comment => vec!["free text".to_owned()],
            AnnotationKind::Type => {
                let checked = check_type(text, place.scope == AnnotationScope::Document)?;
                let parser = if place.scope == AnnotationScope::Document {
                    "type"
                } else {
                    "data-type"
                };
                self.parse_declaration(s, a, place, parser, text, live, checked)
                    .await?
            }
            AnnotationKind::Prototype => {
                let mut names: Vec<String> = vec![];
                if let Some(address) = place.address {
                    let rows = s.store().find_procedures(
                        a.target_id,
                        Some(&place.document),
                        Some(address.0),
                        None,
                    )?;
                    names.extend(rows.into_iter().filter_map(|r| r.name));
                    names.extend(
                        live.iter()
                            .filter(|h| {
                                h.kind == AnnotationKind::Name
                                    && h.scope == AnnotationScope::Procedure
                                    && h.address == Some(address.0)
                            })
                            .map(|h| h.text.clone()),
                    );
                }
                // A demangled C++ name is not an identifier; its short form is what a prototype
                // names.
                let short: Vec<String> = names
                    .iter()
                    .map(|n| {
                        let base = n.split('(').next().unwrap_or(n);
                        base.rsplit("::").next().unwrap_or(base).to_owned()
                    })
                    .collect();
                let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
                all.extend(short.iter().map(String::as_str));
                all.sort_unstable();
                all.dedup();
                let checked = check_prototype(text, &all)?.1;
                self.parse_declaration(s, a, place, "prototype", text, live, checked)
                    .await?
            }
        })
    }

    /// Parses a C declaration that passed rea's own check with angr's C parser (pycparser, as
    /// the decompiler will parse it), the document's types first. A declaration it refuses is
    /// an error naming the position; without angr, `checked` says no C parser read it.
    #[allow(clippy::too_many_arguments)]
    async fn parse_declaration(
        &self,
        s: &super::session::Snapshot,
        a: &super::session::ActiveTarget,
        place: &AnnotationPlace,
        parser: &'static str,
        text: &str,
        live: &[LiveAnnotation],
        mut checked: Vec<String>,
    ) -> Result<Vec<String>> {
        let kind = if parser == "prototype" {
            "prototype"
        } else {
            "type"
        };
        let types: Vec<String> = live
            .iter()
            .filter(|h| {
                h.scope == AnnotationScope::Document
                    && h.kind == AnnotationKind::Type
                    && place.scope != AnnotationScope::Document
            })
            .map(|h| h.text.clone())
            .collect();
        let doc = a
            .target
            .documents
            .iter()
            .find(|d| d.name == place.document)
            .cloned();
        let outcome = match doc {
            Some(doc) => {
                let image = s.session.images.get(&doc).await?;
                s.session
                    .decompilers
                    .check(image, parser, text.to_owned(), types)
                    .await
            }
            None => Ok(None),
        };
        checked.retain(|c| c != NOT_CHECKED);
        match outcome {
            Ok(Some(DeclarationCheck::Valid { .. })) => checked.push(
                "parsed by angr's C parser (pycparser), as the decompiler reads it, with the document's types".to_owned(),
            ),
            Ok(Some(DeclarationCheck::Invalid { position, problem })) => {
                return Err(AnnotationError::Declaration {
                    kind,
                    position,
                    problem: format!("angr's C parser (pycparser) refused it: {problem}"),
                }
                .into());
            }
            Ok(None) => checked.push(format!(
                "{NOT_PARSED}: angr, whose worker carries pycparser, is not installed"
            )),
            Err(e) => checked.push(format!("{NOT_PARSED}: the angr worker failed: {e}")),
        }
        Ok(checked)
    }

    /// `list_annotations`: heads of the active target's annotations, filtered and paged.
    pub async fn list_annotations(&self, args: ListAnnotationsArgs) -> Result<AnnotationPage> {
        let (s, a) = self.active()?;
        let mut address = None;
        let mut document = args.document.clone();
        if let Some(p) = &args.procedure {
            // An address is taken as it is (it may be an instruction's or a datum's); a name
            // is resolved to its procedure.
            match super::ProcedureSelector::parse(p) {
                super::ProcedureSelector::Address(at) => address = Some(at),
                _ => {
                    let selector = DocumentSelector::new(args.document.as_deref());
                    let r = self.resolve_procedure(&s, &a, &selector, p).await?;
                    address = Some(r.procedure.address);
                    document = Some(r.procedure.document);
                }
            }
        }
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let filter = AnnotationFilter {
            document,
            address,
            kind: args.kind,
            history: args.include_history,
        };
        let (rows, total) =
            s.store()
                .list_annotations(&a.target.sha256, &filter, request.offset, request.limit)?;
        let page = Page::new(rows, total, &request);
        Ok(AnnotationPage {
            annotations: page.items,
            total: page.total,
            next_offset: page.next_offset,
        })
    }
}

/// Which kinds apply to which places.
fn allowed(
    kind: AnnotationKind,
    scope: AnnotationScope,
) -> std::result::Result<(), AnnotationError> {
    use AnnotationKind as K;
    use AnnotationScope as S;
    let ok = matches!(
        (kind, scope),
        (K::Name | K::Comment | K::Prototype, S::Procedure)
            | (K::Comment, S::Address)
            | (K::Name | K::Type, S::Data)
            | (K::Type, S::Document)
    );
    if ok {
        return Ok(());
    }
    let allowed = match scope {
        S::Procedure => "a procedure takes name, comment or prototype",
        S::Address | S::Data => {
            "an address takes comment (the instruction), or name or type (the data)"
        }
        S::Document => "a document takes type",
    };
    Err(AnnotationError::KindScope {
        kind: kind.as_str(),
        scope: scope.as_str(),
        allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_identifiers_joined_by_separators() {
        assert!(check_name("check_password").is_ok());
        assert!(check_name("vault::Store::get").is_ok());
        assert!(check_name("NSObject.init").is_ok());
        assert_eq!(
            check_name("9lives"),
            Err(AnnotationError::Name {
                text: "9lives".into(),
                position: 0,
                problem: "an identifier must start with a letter or _"
            })
        );
        assert!(matches!(
            check_name("a b"),
            Err(AnnotationError::Name { position: 1, .. })
        ));
        assert!(matches!(
            check_name("a::"),
            Err(AnnotationError::Name { position: 3, .. })
        ));
    }

    #[test]
    fn prototypes_are_checked_for_brackets_and_name() {
        let (name, _) = check_prototype("int check_password(const char *p);", &[]).unwrap();
        assert_eq!(name, "check_password");
        let (name, _) =
            check_prototype("void (*signal(int sig, void (*f)(int)))(int)", &[]).unwrap();
        assert_eq!(name, "signal");
        assert_eq!(
            check_prototype("int f(int a", &[]),
            Err(AnnotationError::Declaration {
                kind: "prototype",
                position: 5,
                problem: "'(' is never closed".into()
            })
        );
        assert!(matches!(
            check_prototype("int g(void)", &["f"]),
            Err(AnnotationError::Declaration { position: 4, .. })
        ));
        assert!(matches!(
            check_prototype("int f(\"x\")", &[]),
            Err(AnnotationError::Declaration { position: 6, .. })
        ));
    }

    #[test]
    fn types_are_checked_by_place() {
        assert!(check_type("struct node { int v; struct node *next; };", true).is_ok());
        assert!(check_type("typedef unsigned int u32;", true).is_ok());
        assert!(check_type("typedef int (*op_fn)(int, int);", true).is_ok());
        assert!(matches!(
            check_type("int x", true),
            Err(AnnotationError::Declaration { position: 0, .. })
        ));
        assert!(check_type("char[16]", false).is_ok());
        assert!(matches!(
            check_type("struct s { int a; ", true),
            Err(AnnotationError::Declaration { position: 9, .. })
        ));
    }
}
