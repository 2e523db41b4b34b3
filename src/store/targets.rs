//! Targets, their documents and procedure inventories, and which target is active.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ReadOnlyStore, Store, StoreError, insert_rows, now_rfc3339};
use crate::completion::key::match_key;
use crate::ids::Address;
use crate::vocabulary::{Architecture, DocumentRole, Format};

/// A target to record when it is opened.
#[derive(Debug, Clone)]
pub struct NewTarget {
    /// Canonical path.
    pub path: String,
    /// File or bundle name.
    pub name: String,
    /// SHA-256 of the target.
    pub sha256: String,
    /// Container format.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Its documents, each with its complete procedure inventory.
    pub documents: Vec<NewDocument>,
}

/// A document to record with its target.
#[derive(Debug, Clone)]
pub struct NewDocument {
    /// Unique name within the target.
    pub name: String,
    /// Format of the document.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Role: file, slice, main-executable, framework, helper, plug-in, xpc-service, …
    pub role: DocumentRole,
    /// File holding the document.
    pub file: String,
    /// Offset of the document in `file`.
    pub file_offset: u64,
    /// Size of the document in bytes.
    pub file_size: u64,
    /// The complete procedure inventory.
    pub procedures: Vec<NewProcedure>,
}

/// One procedure of an inventory.
#[derive(Debug, Clone)]
pub struct NewProcedure {
    /// Virtual address.
    pub address: u64,
    /// Name, demangled where possible.
    pub name: Option<String>,
    /// The name as stored in the binary, when it differs.
    pub raw_name: Option<String>,
    /// Size in bytes, when known.
    pub size: Option<u64>,
    /// Other names of the same address (aliases), displayed like `name`.
    pub aliases: Vec<String>,
}

/// A target the session opened.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TargetRow {
    /// Row id within this session.
    pub id: i64,
    /// Canonical path.
    pub path: String,
    /// File or bundle name.
    pub name: String,
    /// SHA-256 of the target.
    pub sha256: String,
    /// Container format.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Whether it is the active target.
    pub active: bool,
}

/// A document of a target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DocumentRow {
    /// Row id within this session.
    #[serde(skip)]
    pub id: i64,
    /// Unique name within the target.
    pub name: String,
    /// Format.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Role within the target.
    pub role: DocumentRole,
    /// File that holds it.
    pub file: String,
    /// Offset in that file.
    pub file_offset: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Number of procedures in its inventory.
    pub procedures: u64,
}

/// A procedure as stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureRow {
    /// Document the procedure belongs to.
    pub document: String,
    /// Canonical address.
    pub address: Address,
    /// Name, when the binary gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // These are absent rather than null, so the schema needs no null branch (tools/list budget).
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// The name as stored in the binary, when it differs from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub raw_name: Option<String>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub size: Option<u64>,
    /// Other names of the same address (aliases, other versions), when it has any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
}

/// The `aliases` column: names one per line, null for none.
fn aliases_column(aliases: &[String]) -> Option<String> {
    (!aliases.is_empty()).then(|| aliases.join("\n"))
}

/// The `other_keys` column: match keys of the raw name and the aliases, one per line, null for
/// none. Names never hold a line break, so a line is one whole name.
fn other_keys(p: &NewProcedure) -> Option<String> {
    let mut keys: Vec<String> = p
        .raw_name
        .iter()
        .chain(&p.aliases)
        .map(|n| match_key(n))
        .collect();
    keys.sort();
    keys.dedup();
    (!keys.is_empty()).then(|| keys.join("\n"))
}

fn to_i64(v: u64) -> i64 {
    // SQLite integers are signed; addresses above i63 keep their bits.
    v as i64
}

fn from_i64(v: i64) -> u64 {
    v as u64
}

/// A procedure name of one completion scope: its match key, and whether it names one address.
struct Named {
    key: String,
    address: u64,
    unique: bool,
}

impl Named {
    /// Notes that `name` (whose match key is `key`) names `address`.
    fn add<'a>(names: &mut HashMap<&'a str, Named>, name: &'a str, key: &str, address: u64) {
        match names.get_mut(name) {
            Some(named) => named.unique &= named.address == address,
            None => {
                names.insert(
                    name,
                    Named {
                        key: key.to_owned(),
                        address,
                        unique: true,
                    },
                );
            }
        }
    }

    /// The completion pairs `(match key, name)` of the names that identify exactly one address.
    fn unique(names: HashMap<&str, Named>) -> impl Iterator<Item = (String, String)> {
        names
            .into_iter()
            .filter(|(_, named)| named.unique)
            .map(|(name, named)| (named.key, name.to_owned()))
    }
}

/// Inventories of at least this many procedures have their completion values built on a
/// thread of their own while the procedures are stored; smaller ones are not worth a thread.
const BUILD_BESIDE_AT: usize = 1024;

/// The procedure rows of every document of `target` (`doc_ids` in document order).
fn insert_procedures(
    conn: &Connection,
    target: &NewTarget,
    doc_ids: &[i64],
) -> Result<(), StoreError> {
    for (doc, &doc_id) in target.documents.iter().zip(doc_ids) {
        insert_rows(
            conn,
            "insert or ignore into procedures (document_id, address, name, raw_name, name_key, size, aliases, other_keys) values",
            8,
            &doc.procedures,
            |insert, n, p| {
                insert.raw_bind_parameter(n, doc_id)?;
                insert.raw_bind_parameter(n + 1, to_i64(p.address))?;
                // The columns a row has no value for are left null ([`insert_rows`]).
                if let Some(name) = &p.name {
                    insert.raw_bind_parameter(n + 2, name)?;
                    insert.raw_bind_parameter(n + 4, match_key(name))?;
                }
                if let Some(raw_name) = &p.raw_name {
                    insert.raw_bind_parameter(n + 3, raw_name)?;
                }
                if let Some(size) = p.size {
                    insert.raw_bind_parameter(n + 5, to_i64(size))?;
                }
                if let Some(aliases) = aliases_column(&p.aliases) {
                    insert.raw_bind_parameter(n + 6, aliases)?;
                }
                if let Some(keys) = other_keys(p) {
                    insert.raw_bind_parameter(n + 7, keys)?;
                }
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// One completion scope of a target: the `(key, value)` pairs `procedure_completions` keeps
/// (its names: its addresses are read from `procedures`), sorted and unique as the primary key
/// keeps them, and the prefix counts of its names and addresses together.
struct CompletionScope {
    /// The document, or 0 for the target-wide scope.
    document: i64,
    entries: Vec<(String, String)>,
    prefixes: Vec<super::prefixes::PrefixRow>,
}

/// A completion scope's document (0 for the target's), its addresses, sorted, and the
/// `(match key, name)` pairs of the names that identify one of them.
type ScopeValues = (i64, Vec<u64>, Vec<(String, String)>);

/// The completion scopes of `target` (`doc_ids` in document order), in the primary key's order.
fn completion_scopes(target: &NewTarget, doc_ids: &[i64]) -> Vec<CompletionScope> {
    // Name → the one address it names, over the whole target, for the target-wide scope. A
    // target of one document has no scope of its own: completion over it reads the document's
    // (migration V11).
    let whole_scope = target.documents.len() > 1;
    let mut target_names: HashMap<&str, Named> = HashMap::new();
    let mut target_addresses: BTreeSet<u64> = BTreeSet::new();
    let mut scopes: Vec<ScopeValues> = Vec::new();
    for (doc, &doc_id) in target.documents.iter().zip(doc_ids) {
        let mut names: HashMap<&str, Named> = HashMap::with_capacity(doc.procedures.len());
        let mut addresses: Vec<u64> = Vec::with_capacity(doc.procedures.len());
        for p in &doc.procedures {
            addresses.push(p.address);
            if whole_scope {
                target_addresses.insert(p.address);
            }
            if let Some(name) = p.name.as_deref() {
                // The writer takes the same key for the procedure row, at the same time on the
                // other core: taking it twice costs less than waiting for it.
                let key = match_key(name);
                if whole_scope {
                    Named::add(&mut target_names, name, &key, p.address);
                }
                Named::add(&mut names, name, &key, p.address);
            }
        }
        addresses.sort_unstable();
        scopes.push((doc_id, addresses, Named::unique(names).collect()));
    }
    if whole_scope {
        scopes.push((
            0,
            target_addresses.into_iter().collect(),
            Named::unique(target_names).collect(),
        ));
    }
    scopes.sort_by_key(|(document, _, _)| *document);
    scopes
        .into_iter()
        .map(|(document, addresses, mut names)| {
            let prefixes = super::prefixes::scope_prefix_rows(&addresses, &mut names);
            // The names are written sorted, in the primary key's order, so each insert appends
            // to the index rather than splitting pages all over it. A name whose text is an
            // address of the scope is that address's value, read from `procedures`.
            names.retain(|(key, name)| {
                key != name
                    || super::addresses::address_of_text(name)
                        .is_none_or(|a| addresses.binary_search(&a).is_err())
            });
            CompletionScope {
                document,
                entries: names,
                prefixes,
            }
        })
        .collect()
}

/// Inserts (or re-activates) a target with its documents, procedures and procedure completion
/// values, and makes it the active target. Returns the target's row id.
pub(super) fn insert_target(conn: &Connection, target: &NewTarget) -> Result<i64, StoreError> {
    conn.prepare_cached("update targets set active = 0 where active = 1")?
        .execute([])?;
    let existing: Option<i64> = conn
        .prepare_cached("select id from targets where path = ?1 and sha256 = ?2")?
        .query_row([&target.path, &target.sha256], |r| r.get(0))
        .optional()?;
    if let Some(id) = existing {
        conn.prepare_cached("update targets set active = 1 where id = ?1")?
            .execute([id])?;
        return Ok(id);
    }
    conn.prepare_cached(
        "insert into targets (path, name, sha256, format, architecture, active, opened_at) values (?1, ?2, ?3, ?4, ?5, 1, ?6)",
    )?
    .execute(params![target.path, target.name, target.sha256, target.format.as_str(), target.architecture.as_str(), now_rfc3339()])?;
    let target_id = conn.last_insert_rowid();

    let mut insert_doc = conn.prepare_cached(
        "insert into documents (target_id, name, key, format, architecture, role, file, file_offset, file_size)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut doc_ids = Vec::with_capacity(target.documents.len());
    for doc in &target.documents {
        insert_doc.execute(params![
            target_id,
            doc.name,
            match_key(&doc.name),
            doc.format.as_str(),
            doc.architecture.as_str(),
            doc.role.as_str(),
            doc.file,
            to_i64(doc.file_offset),
            to_i64(doc.file_size),
        ])?;
        doc_ids.push(conn.last_insert_rowid());
    }
    let procedures: usize = target.documents.iter().map(|d| d.procedures.len()).sum();
    // The completion values and prefix counts are built on another core while this thread
    // stores the procedures: building them costs about what storing the procedures does.
    std::thread::scope(|threads| {
        // A thread that cannot be made (the process is at its limit) leaves the work here.
        let building = (procedures >= BUILD_BESIDE_AT)
            .then(|| {
                std::thread::Builder::new()
                    .name("rea-store-completions".into())
                    .spawn_scoped(threads, || completion_scopes(target, &doc_ids))
                    .ok()
            })
            .flatten();
        insert_procedures(conn, target, &doc_ids)?;
        let scopes = match building {
            Some(building) => building
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => completion_scopes(target, &doc_ids),
        };
        for scope in scopes {
            insert_rows(
                conn,
                "insert or ignore into procedure_completions (target_id, document_id, key, value) values",
                4,
                &scope.entries,
                |insert, n, (key, value)| {
                    insert.raw_bind_parameter(n, target_id)?;
                    insert.raw_bind_parameter(n + 1, scope.document)?;
                    insert.raw_bind_parameter(n + 2, key)?;
                    insert.raw_bind_parameter(n + 3, value)
                },
            )?;
            super::prefixes::insert_scope_prefixes(
                conn,
                target_id,
                scope.document,
                &scope.prefixes,
            )?;
        }
        Ok::<_, StoreError>(())
    })?;
    Ok(target_id)
}

/// A vocabulary name stored as its text.
fn name<T: std::str::FromStr<Err = crate::vocabulary::UnknownName>>(
    r: &rusqlite::Row<'_>,
    column: usize,
) -> rusqlite::Result<T> {
    let text: String = r.get(column)?;
    text.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn target_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TargetRow> {
    Ok(TargetRow {
        id: r.get(0)?,
        path: r.get(1)?,
        name: r.get(2)?,
        sha256: r.get(3)?,
        format: name(r, 4)?,
        architecture: name(r, 5)?,
        active: r.get::<_, i64>(6)? == 1,
    })
}

fn document_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DocumentRow> {
    Ok(DocumentRow {
        id: r.get(0)?,
        name: r.get(1)?,
        format: name(r, 2)?,
        architecture: name(r, 3)?,
        role: name(r, 4)?,
        file: r.get(5)?,
        file_offset: from_i64(r.get(6)?),
        file_size: from_i64(r.get(7)?),
        procedures: from_i64(r.get(8)?),
    })
}

fn procedure_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProcedureRow> {
    Ok(ProcedureRow {
        analyst: None,
        document: r.get(0)?,
        address: Address(from_i64(r.get(1)?)),
        name: r.get(2)?,
        raw_name: r.get(3)?,
        size: r.get::<_, Option<i64>>(4)?.map(from_i64),
        aliases: r
            .get::<_, Option<String>>(5)?
            .map(|a| a.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
    })
}

const DOCUMENT_COLUMNS: &str =
    "d.id, d.name, d.format, d.architecture, d.role, d.file, d.file_offset, d.file_size,
     (select count(*) from procedures p where p.document_id = d.id)";

impl Store {
    /// Records a target (or re-activates one seen before) and makes it active, outside an async
    /// runtime. (Opening a target in a session commits it with its Evidence, as a recording.)
    pub fn open_target_blocking(&self, target: NewTarget) -> Result<i64, StoreError> {
        self.write_blocking(move |conn| insert_target(conn, &target))
    }
}

impl ReadOnlyStore {
    /// The active target, if any.
    pub fn active_target(&self) -> Result<Option<TargetRow>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "select id, path, name, sha256, format, architecture, active from targets where active = 1",
                )?
                .query_row([], target_row)
                .optional()?)
        })
    }

    /// Every target the session opened, in the order opened.
    pub fn targets(&self) -> Result<Vec<TargetRow>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("select id, path, name, sha256, format, architecture, active from targets order by id")?
                .query_map([], target_row)?
                .collect::<Result<_, _>>()?)
        })
    }

    /// The documents of a target, by name.
    pub fn documents(&self, target_id: i64) -> Result<Vec<DocumentRow>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(&format!(
                    "select {DOCUMENT_COLUMNS} from documents d where d.target_id = ?1 order by d.name"
                ))?
                .query_map([target_id], document_row)?
                .collect::<Result<_, _>>()?)
        })
    }

    /// A page of procedures by address, from one document or every document of the target, with
    /// the total.
    pub fn procedures(
        &self,
        target_id: i64,
        document: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<ProcedureRow>, u64), StoreError> {
        self.read(|conn| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(offset).unwrap_or(i64::MAX);
            let rows = conn
                .prepare_cached(
                    "select d.name, p.address, p.name, p.raw_name, p.size, p.aliases from procedures p join documents d on d.id = p.document_id
                     where d.target_id = ?1 and (?2 is null or d.name = ?2)
                     order by d.name, p.address limit ?3 offset ?4",
                )?
                .query_map(params![target_id, document, limit, offset], procedure_row)?
                .collect::<Result<Vec<_>, _>>()?;
            let total: i64 = conn
                .prepare_cached(
                    "select count(*) from procedures p join documents d on d.id = p.document_id
                     where d.target_id = ?1 and (?2 is null or d.name = ?2)",
                )?
                .query_row(params![target_id, document], |r| r.get(0))?;
            Ok((rows, total.max(0) as u64))
        })
    }

    /// Procedures whose name, raw name or an alias contains `needle` (compared on match keys), by
    /// document and address.
    pub fn search_procedures(
        &self,
        target_id: i64,
        document: Option<&str>,
        needle: &str,
        prefix_only: bool,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<ProcedureRow>, u64), StoreError> {
        let key = match_key(needle);
        self.read(|conn| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(offset).unwrap_or(i64::MAX);
            // The primary name, the raw name and every alias are searched: an agent may know a
            // procedure by its mangled symbol or by an alias (`__libc_malloc`).
            let cond = if prefix_only {
                "(substr(p.name_key, 1, length(?3)) = ?3 or substr(p.other_keys, 1, length(?3)) = ?3
                  or instr(p.other_keys, char(10) || ?3) > 0)"
            } else {
                "(instr(p.name_key, ?3) > 0 or instr(p.other_keys, ?3) > 0)"
            };
            let rows = conn
                .prepare_cached(&format!(
                    "select d.name, p.address, p.name, p.raw_name, p.size, p.aliases from procedures p join documents d on d.id = p.document_id
                     where d.target_id = ?1 and (?2 is null or d.name = ?2) and {cond}
                     order by d.name, p.address limit ?4 offset ?5"
                ))?
                .query_map(params![target_id, document, key, limit, offset], procedure_row)?
                .collect::<Result<Vec<_>, _>>()?;
            let total: i64 = conn
                .prepare_cached(&format!(
                    "select count(*) from procedures p join documents d on d.id = p.document_id
                     where d.target_id = ?1 and (?2 is null or d.name = ?2) and {cond}"
                ))?
                .query_row(params![target_id, document, key], |r| r.get(0))?;
            Ok((rows, total.max(0) as u64))
        })
    }

    /// Procedures of the target (or one document) at `address`, or whose name, raw name or one
    /// of whose aliases is exactly `name`.
    pub fn find_procedures(
        &self,
        target_id: i64,
        document: Option<&str>,
        address: Option<u64>,
        name: Option<&str>,
    ) -> Result<Vec<ProcedureRow>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "select d.name, p.address, p.name, p.raw_name, p.size, p.aliases from procedures p join documents d on d.id = p.document_id
                     where d.target_id = ?1 and (?2 is null or d.name = ?2)
                       and ((?3 is not null and p.address = ?3) or (?4 is not null and (p.name = ?4 or p.raw_name = ?4
                            or instr(char(10) || p.aliases || char(10), char(10) || ?4 || char(10)) > 0)))
                     order by d.name, p.address limit 1000",
                )?
                .query_map(params![target_id, document, address.map(to_i64), name], procedure_row)?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Every procedure of a document, by address (for providers that need the whole inventory).
    pub fn document_procedures(
        &self,
        target_id: i64,
        document: &str,
    ) -> Result<Vec<ProcedureRow>, StoreError> {
        self.procedures(target_id, Some(document), 0, u64::MAX >> 1)
            .map(|(rows, _)| rows)
    }
}
