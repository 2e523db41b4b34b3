//! Fuzzes Document and Procedure completion against the session store with arbitrary Unicode
//! names and prefixes, huge ones included. The store answers with indexed range scans on match
//! keys; the same answer must come from filtering the inventory in memory
//! (`completion::complete_in_memory`, which the spec's rules describe directly: match-key prefix,
//! duplicates removed, code-point order, first `limit` values, exact total, `hasMore`).
//!
//! Input: lines (lossy UTF-8), `\0` and `\n` written as `\\0` and `\\n` inside names:
//! `D name` starts a document, `P hex [name]` adds a procedure to it, `C name` sets the request's
//! `document` context (empty: none), `L n` sets the limit (n mod 101), `Q typed` asks.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use rea::completion::{Family, complete, complete_in_memory};
use rea::ids::Address;
use rea::store::{CompletionPage, NewDocument, NewProcedure, NewTarget, Store};

/// Targets per store before it is replaced by an empty one, so the database stays small.
const TARGETS_PER_STORE: u64 = 2_000;
const MAX_DOCUMENTS: usize = 8;
const MAX_PROCEDURES: usize = 256;
const MAX_QUERIES: usize = 16;

struct Session {
    store: Arc<Store>,
    generation: u32,
    targets: u64,
}

fn session() -> &'static Mutex<Session> {
    static SESSION: OnceLock<Mutex<Session>> = OnceLock::new();
    SESSION.get_or_init(|| Mutex::new(open(0)))
}

fn open(generation: u32) -> Session {
    let dir = rea_fuzz::fresh_dir(&format!("completion-{generation}"));
    let store = Store::open(&dir.join("session.db")).expect("open a session database");
    Session {
        store,
        generation,
        targets: 0,
    }
}

fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\0", "\0")
}

#[derive(Default)]
struct Doc {
    name: String,
    /// Address → name, first procedure at an address wins (an inventory has one per address).
    procedures: BTreeMap<u64, Option<String>>,
}

enum Query {
    Documents { typed: String, limit: usize },
    Procedures { typed: String, limit: usize, document: Option<String> },
}

fn parse(text: &str) -> (Vec<Doc>, Vec<Query>) {
    let mut docs: Vec<Doc> = Vec::new();
    let mut queries = Vec::new();
    let mut limit = 100;
    let mut context: Option<String> = None;
    for line in text.split('\n') {
        let mut chars = line.chars();
        let tag = chars.next();
        let rest = chars.as_str();
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        match tag {
            Some('D') if docs.len() < MAX_DOCUMENTS => {
                let name = unescape(rest);
                if !docs.iter().any(|d| d.name == name) {
                    docs.push(Doc { name, ..Doc::default() });
                }
            }
            Some('P') => {
                let (hex, name) = match rest.split_once(' ') {
                    Some((h, n)) => (h, Some(unescape(n))),
                    None => (rest, None),
                };
                let Ok(address) = u64::from_str_radix(hex, 16) else { continue };
                if docs.is_empty() {
                    docs.push(Doc { name: "doc".into(), ..Doc::default() });
                }
                let doc = docs.last_mut().unwrap();
                if doc.procedures.len() < MAX_PROCEDURES {
                    doc.procedures.entry(address).or_insert(name);
                }
            }
            Some('C') => context = Some(unescape(rest)).filter(|c| !c.is_empty()),
            Some('L') => limit = rest.trim().parse::<usize>().unwrap_or(100) % 101,
            Some('Q') if queries.len() < MAX_QUERIES => {
                let typed = unescape(rest);
                queries.push(Query::Documents { typed: typed.clone(), limit });
                queries.push(Query::Procedures { typed, limit, document: context.clone() });
            }
            _ => {}
        }
    }
    (docs, queries)
}

/// The Procedure completion values of one scope: every address, and every name that names
/// exactly one address in that scope.
fn procedure_values<'a>(docs: impl Iterator<Item = &'a Doc>) -> Vec<String> {
    let mut addresses = BTreeSet::new();
    let mut names: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for doc in docs {
        for (&address, name) in &doc.procedures {
            addresses.insert(address);
            if let Some(name) = name {
                names.entry(name).or_default().insert(address);
            }
        }
    }
    let mut values: Vec<String> = addresses.into_iter().map(|a| Address(a).to_string()).collect();
    values.extend(
        names
            .into_iter()
            .filter(|(_, a)| a.len() == 1)
            .map(|(n, _)| n.to_string()),
    );
    values
}

fn same(store: &CompletionPage, model: &CompletionPage, what: &str) {
    assert!(
        store.values == model.values && store.total == model.total && store.has_more == model.has_more,
        "{what}: the store answered {store:?}, the inventory filtered in memory gives {model:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (docs, queries) = parse(&text);
    if queries.is_empty() {
        return;
    }
    let mut guard = session().lock().unwrap();
    if guard.targets >= TARGETS_PER_STORE {
        guard.store.close();
        let old = guard.generation;
        *guard = open(old + 1);
        let _ = std::fs::remove_dir_all(rea_fuzz::scratch().join(format!("completion-{old}")));
    }
    guard.targets += 1;
    let n = guard.targets;
    let target = NewTarget {
        path: format!("/fuzz/{}/{n}", guard.generation),
        name: format!("target-{n}"),
        sha256: format!("{n:064x}"),
        format: rea::vocabulary::Format::Raw,
        architecture: rea::vocabulary::Architecture::Unknown,
        documents: docs
            .iter()
            .map(|d| NewDocument {
                name: d.name.clone(),
                format: rea::vocabulary::Format::Raw,
                architecture: rea::vocabulary::Architecture::Unknown,
                role: rea::vocabulary::DocumentRole::File,
                file: "/dev/null".into(),
                file_offset: 0,
                file_size: 0,
                procedures: d
                    .procedures
                    .iter()
                    .map(|(&address, name)| NewProcedure {
                        address,
                        name: name.clone(),
                        raw_name: None,
                        size: None,
                        aliases: vec![],
                    })
                    .collect(),
            })
            .collect(),
    };
    guard
        .store
        .open_target_blocking(target)
        .unwrap_or_else(|e| panic!("the store refused an inventory: {e}"));
    let store: &rea::store::ReadOnlyStore = &guard.store;

    for query in &queries {
        match query {
            Query::Documents { typed, limit } => {
                let got = complete(Some(store), Family::Document, typed, None, *limit);
                let want = complete_in_memory(docs.iter().map(|d| d.name.clone()), typed, *limit);
                same(&got, &want, &format!("Document completion of {typed:?} (limit {limit})"));
            }
            Query::Procedures { typed, limit, document } => {
                let got = complete(Some(store), Family::Procedure, typed, document.as_deref(), *limit);
                let candidates = match document {
                    None => procedure_values(docs.iter()),
                    Some(name) => procedure_values(docs.iter().filter(|d| &d.name == name)),
                };
                let want = complete_in_memory(candidates, typed, *limit);
                same(
                    &got,
                    &want,
                    &format!("Procedure completion of {typed:?} in {document:?} (limit {limit})"),
                );
            }
        }
    }
});
