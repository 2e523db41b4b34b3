//! Validated arguments: raw arguments (as an agent or a command line sends them) become these in
//! one place, each with one rule, so every operation reads them the same way.

use serde::Serialize;

use super::{InvestigationError, Result};
use crate::ids::Address;
use crate::providers::deep;
use crate::providers::native::DocumentSpec;
use crate::vocabulary::Format;

/// The size caps of text arguments, checked while the arguments are read, before any work: a
/// call over a cap is refused whole and keeps nothing. Each argument's doc states its cap, so
/// the schema a client reads says it too. Sizes are UTF-8 bytes.
pub(crate) mod cap {
    use serde::{Deserialize, Deserializer};

    use crate::ids::EvidenceId;

    /// Names and selectors: documents, procedures, sections, provider ids, operations, session
    /// ids, and paths (the longest path Linux opens is 4096 bytes).
    pub const NAME: usize = 4096;
    /// Prose: a question, a note, a rationale.
    pub const PROSE: usize = 16 * 1024;
    /// Search patterns and queries: what a search is asked for is short; a long one is an error.
    pub const PATTERN: usize = 1024;
    /// Evidence ids cited by one call.
    pub const IDS: usize = 256;

    fn over<E: serde::de::Error>(what: &str, len: usize, max: usize) -> E {
        E::custom(format!(
            "{what} of {len} bytes is over its cap of {max} bytes; nothing was done or recorded"
        ))
    }

    fn checked<E: serde::de::Error>(text: String, max: usize) -> Result<String, E> {
        if text.len() > max {
            return Err(over("a text argument", text.len(), max));
        }
        Ok(text)
    }

    /// A text of at most `MAX` bytes.
    pub fn text<'de, D: Deserializer<'de>, const MAX: usize>(d: D) -> Result<String, D::Error> {
        checked(String::deserialize(d)?, MAX)
    }

    /// An optional text of at most `MAX` bytes.
    pub fn text_opt<'de, D: Deserializer<'de>, const MAX: usize>(
        d: D,
    ) -> Result<Option<String>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| checked(t, MAX))
            .transpose()
    }

    /// The arguments of one call as a whole, in bytes of JSON: what no field cap bounds (a
    /// capture scenario, a reconstruction spec) is bounded by this.
    pub const ARGUMENTS: usize = 256 * 1024;

    macro_rules! capped {
        ($($one:ident $(/ $opt:ident)?: $max:ident;)*) => {$(
            #[doc = concat!("A text of at most [`", stringify!($max), "`] bytes.")]
            pub fn $one<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
                text::<D, $max>(d)
            }
            $(
                #[doc = concat!("An optional text of at most [`", stringify!($max), "`] bytes.")]
                pub fn $opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
                    text_opt::<D, $max>(d)
                }
            )?
        )*};
    }
    capped! {
        name / name_opt: NAME;
        prose / prose_opt: PROSE;
        pattern: PATTERN;
    }

    /// At most [`IDS`] Evidence ids.
    pub fn ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EvidenceId>, D::Error> {
        let ids = Vec::<EvidenceId>::deserialize(d)?;
        if ids.len() > IDS {
            return Err(serde::de::Error::custom(format!(
                "a list of {} Evidence ids is over its cap of {IDS}; nothing was done or recorded",
                ids.len()
            )));
        }
        Ok(ids)
    }

    #[cfg(test)]
    mod tests {
        use serde::Deserialize;

        #[derive(Debug, Deserialize)]
        struct Capped {
            #[serde(deserialize_with = "super::text::<_, 4>")]
            text: String,
            #[serde(default, deserialize_with = "super::text_opt::<_, 4>")]
            note: Option<String>,
        }

        #[test]
        fn a_text_over_its_cap_is_refused_regression_25() {
            let ok: Capped = serde_json::from_str(r#"{"text": "abcd", "note": "é!!"}"#).unwrap();
            assert_eq!(
                (ok.text.as_str(), ok.note.as_deref()),
                ("abcd", Some("é!!"))
            );
            let none: Capped = serde_json::from_str(r#"{"text": ""}"#).unwrap();
            assert_eq!(none.note, None);
            for over in [r#"{"text": "abcde"}"#, r#"{"text": "a", "note": "éééé"}"#] {
                let e = serde_json::from_str::<Capped>(over)
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("is over its cap of 4 bytes"), "{e}");
            }
        }
    }
}

/// Which document of the active target an operation is about.
///
/// One rule for every operation: a named document must be one of the target's (the answer lists
/// them); without a name, an operation over documents covers them all, and an operation on one
/// document takes the target's only one (with several, the caller must name one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentSelector(Option<String>);

impl DocumentSelector {
    /// The document named `name`, or none named.
    pub fn new(name: Option<&str>) -> DocumentSelector {
        DocumentSelector(name.map(str::to_owned))
    }

    /// The name given, if any.
    pub fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// For an operation over documents: the named document, or `None` for all of them.
    pub fn resolve_any<'a>(&self, docs: &'a [DocumentSpec]) -> Result<Option<&'a DocumentSpec>> {
        self.0.as_deref().map(|name| named(docs, name)).transpose()
    }

    /// For an operation on one document: the named one, or the only one.
    pub fn resolve_one<'a>(&self, docs: &'a [DocumentSpec]) -> Result<&'a DocumentSpec> {
        match self.0.as_deref() {
            Some(name) => named(docs, name),
            None => match docs {
                [one] => Ok(one),
                [] => Err(InvestigationError::InvalidArgument(
                    "the active target has no documents".into(),
                )),
                many => Err(InvestigationError::InvalidArgument(format!(
                    "the active target has several documents; name one: {}",
                    names(many)
                ))),
            },
        }
    }
}

fn names(docs: &[DocumentSpec]) -> String {
    docs.iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn named<'a>(docs: &'a [DocumentSpec], name: &str) -> Result<&'a DocumentSpec> {
    docs.iter().find(|d| d.name == name).ok_or_else(|| {
        InvestigationError::InvalidArgument(format!(
            "no document {name:?} in the active target; documents: {}",
            names(docs)
        ))
    })
}

/// How a caller named one procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcedureSelector {
    /// `0x…`: an address only (a procedure start, or an address inside one).
    Address(Address),
    /// Anything else: a name (or raw symbol name). Text that only looks like an address
    /// (`4000`, bare hex digits) is a name too, never read as one.
    Name {
        /// The text, trimmed.
        name: String,
    },
    /// `0x…` text that is no address (its refusal says the form); it names nothing.
    Invalid(String),
}

impl ProcedureSelector {
    /// Reads what an agent sends: a `0x` address or a name.
    pub fn parse(text: &str) -> ProcedureSelector {
        let trimmed = text.trim();
        if trimmed.starts_with("0x") || trimmed.starts_with("0X") {
            // The address is parsed as sent, so ` 0x4000` is refused as `read_bytes` refuses it.
            return match Address::parse(text) {
                Ok(a) => ProcedureSelector::Address(a),
                Err(e) => ProcedureSelector::Invalid(e.to_string()),
            };
        }
        ProcedureSelector::Name {
            name: trimmed.to_owned(),
        }
    }

    /// The error for a selector that named nothing.
    pub(crate) fn not_found(&self) -> InvestigationError {
        let text = match self {
            ProcedureSelector::Address(a) => a.to_string(),
            ProcedureSelector::Invalid(refusal) => {
                return InvestigationError::InvalidArgument(refusal.clone());
            }
            ProcedureSelector::Name { name } => name.clone(),
        };
        let hint = match self {
            ProcedureSelector::Name { name }
                if !name.is_empty() && name.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                format!("; digits are a name here: an address is written 0x{name}")
            }
            _ => " (search_procedures finds names)".to_owned(),
        };
        InvestigationError::InvalidArgument(format!(
            "no procedure named {text:?} in the active target{hint}"
        ))
    }
}

/// Whether `name` (a demangled C++ or Rust name) is one that `text` names by its unqualified or
/// partly qualified form: `GetPassword` and `Store::GetPassword` both name
/// `vault::Store::GetPassword(int) const`, `Twice` names `int vault::Twice<int>(int)`. The
/// parameter list, trailing qualifiers and a return type are not part of what is compared; the
/// text must end at a `::` boundary, so `Password` names nothing.
pub fn names_by_short_form(name: &str, text: &str) -> bool {
    if text.is_empty() || name == text {
        return !text.is_empty();
    }
    let Some(qualified) = qualified_name(name) else {
        return false;
    };
    [qualified, strip_template_arguments(qualified)]
        .into_iter()
        .any(|q| {
            q == text
                || q.strip_suffix(text)
                    .is_some_and(|head| head.ends_with("::"))
        })
}

/// The qualified name of a demangled name: without its parameter list (the last top-level
/// `(...)` and what follows it) and without a return type (text before the last top-level
/// space). `None` for a name that is not qualified and has no parameter list (a C name).
fn qualified_name(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    let mut end = name.len();
    if let Some(close) = name.rfind(')') {
        // The matching `(` of the last group: the parameters.
        let mut depth = 0usize;
        let mut open = None;
        for i in (0..=close).rev() {
            match bytes[i] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        open = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        end = open?;
    } else if !name.contains("::") {
        return None;
    }
    let head = &name[..end];
    // The return type of a template function ends at the last space outside brackets.
    let mut depth = 0i32;
    let mut start = 0;
    for (i, b) in head.bytes().enumerate() {
        match b {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    let qualified = &head[start..];
    (!qualified.is_empty()).then_some(qualified)
}

/// `Twice<int>` without its template arguments; other names unchanged.
fn strip_template_arguments(name: &str) -> &str {
    if !name.ends_with('>') {
        return name;
    }
    let mut depth = 0usize;
    for (i, b) in name.bytes().enumerate().rev() {
        match b {
            b'>' => depth += 1,
            b'<' => {
                depth -= 1;
                if depth == 0 {
                    return &name[..i];
                }
            }
            _ => {}
        }
    }
    name
}

/// Who answers an operation that a deep provider can also answer.
#[derive(Debug, Clone)]
pub enum ProviderChoice {
    /// The built-in native provider.
    Auto,
    /// A deep provider candidate found on this host for the target's format.
    Deep(deep::Candidate),
}

impl ProviderChoice {
    /// `auto` (or nothing) for the built-in provider, else the deep candidate with this id that
    /// fits targets of `format`.
    pub fn resolve(id: Option<&str>, format: Format) -> Result<ProviderChoice> {
        match id {
            None | Some("auto") => Ok(ProviderChoice::Auto),
            Some(id) => deep::candidates(format.as_str(), None)
                .into_iter()
                .find(|c| c.id == id)
                .map(ProviderChoice::Deep)
                .ok_or_else(|| {
                    InvestigationError::InvalidArgument(format!(
                        "{id} is not a deep provider candidate on this host for {format} targets (complete provider_id to see them)"
                    ))
                }),
        }
    }
}

/// A page of a listing: items to skip and how many to return, within the listing's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Items to skip.
    pub offset: u64,
    /// Items to return; 0 asks for the total only.
    pub limit: u64,
}

impl PageRequest {
    /// Default and largest page of the ledger and inventory listings.
    pub const LISTING: (u64, u64) = (50, 500);

    /// `limit` (or `bounds.0` when absent) kept at most `bounds.1`. A limit of 0 stays 0: the
    /// caller asks how many there are, and gets no items.
    pub fn new(offset: u64, limit: Option<u64>, bounds: (u64, u64)) -> PageRequest {
        PageRequest {
            offset,
            limit: limit.unwrap_or(bounds.0).min(bounds.1),
        }
    }

    /// The offset of the page after one that returned `returned` items of `total`. A count-only
    /// request (limit 0) returned nothing, so the listing still continues at its offset.
    pub fn next_offset(&self, returned: usize, total: u64) -> Option<u64> {
        let next = self.offset.saturating_add(returned as u64);
        (next < total && (returned > 0 || self.limit == 0)).then_some(next)
    }
}

/// One page of a listing, with the exact total and where the next page starts.
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Items in the whole listing.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

impl<T> Page<T> {
    /// The page `request` asked for, holding `items` of `total`.
    pub fn new(items: Vec<T>, total: u64, request: &PageRequest) -> Page<T> {
        let next_offset = request.next_offset(items.len(), total);
        Page {
            items,
            total,
            next_offset,
        }
    }

    /// The page `request` asks for out of every item of a listing held in memory.
    pub fn of_all(all: Vec<T>, request: &PageRequest) -> Page<T> {
        let total = all.len() as u64;
        let items = all
            .into_iter()
            .skip(usize::try_from(request.offset).unwrap_or(usize::MAX))
            .take(usize::try_from(request.limit).unwrap_or(usize::MAX))
            .collect();
        Page::new(items, total, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_procedure_selector_reads_addresses_and_names_regression_25() {
        assert_eq!(
            ProcedureSelector::parse("0X1F"),
            ProcedureSelector::Address(Address(0x1f))
        );
        assert_eq!(
            ProcedureSelector::parse("main"),
            ProcedureSelector::Name {
                name: "main".into()
            }
        );
        // Bare hex is a name, never an address; an address with spaces around it is refused.
        assert_eq!(
            ProcedureSelector::parse("dead"),
            ProcedureSelector::Name {
                name: "dead".into()
            }
        );
        assert!(
            ProcedureSelector::parse("dead")
                .not_found()
                .to_string()
                .contains("an address is written 0xdead")
        );
        let spaced = ProcedureSelector::parse(" 0x1f ");
        assert!(
            spaced.not_found().to_string().contains("spaces around it"),
            "{spaced:?}"
        );
        assert!(matches!(
            ProcedureSelector::parse("0x+1f"),
            ProcedureSelector::Invalid(_)
        ));
    }

    #[test]
    fn cxx_and_rust_names_are_named_by_their_short_forms() {
        let method = "vault::Store::GetPassword(int) const";
        for text in [
            "GetPassword",
            "Store::GetPassword",
            "vault::Store::GetPassword",
            method,
        ] {
            assert!(names_by_short_form(method, text), "{text}");
        }
        for text in ["Password", "tore::GetPassword", "GetPassword(int)", ""] {
            assert!(!names_by_short_form(method, text), "{text}");
        }
        assert!(names_by_short_form("int vault::Twice<int>(int)", "Twice"));
        assert!(names_by_short_form(
            "int vault::Twice<int>(int)",
            "Twice<int>"
        ));
        assert!(names_by_short_form("vault::Store::~Store()", "~Store"));
        assert!(names_by_short_form(
            "(anonymous namespace)::helper(int)",
            "helper"
        ));
        assert!(names_by_short_form("core::fmt::write", "write"));
        // A C name is named only by itself.
        assert!(!names_by_short_form("say_beryllium", "beryllium"));
    }

    #[test]
    fn pages_are_bounded_and_say_where_the_next_one_starts() {
        let r = PageRequest::new(0, Some(10_000), PageRequest::LISTING);
        assert_eq!(r.limit, 500);
        let count_only = PageRequest::new(3, Some(0), PageRequest::LISTING);
        assert_eq!(count_only.limit, 0);
        let page = Page::of_all((0..5).collect::<Vec<u8>>(), &count_only);
        assert_eq!(
            (page.items, page.total, page.next_offset),
            (vec![], 5, Some(3))
        );
        let r = PageRequest::new(2, Some(2), PageRequest::LISTING);
        let page = Page::of_all((0..5).collect(), &r);
        assert_eq!(
            (page.items, page.total, page.next_offset),
            (vec![2, 3], 5, Some(4))
        );
        let last = Page::of_all(
            (0..5).collect::<Vec<u8>>(),
            &PageRequest::new(4, Some(2), (50, 500)),
        );
        assert_eq!(last.next_offset, None);
    }
}
