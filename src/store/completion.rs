//! Completion queries: indexed prefix range scans over the session's distinct values.
//!
//! Each family answers with the first `limit` values in code-point order, the exact number of all
//! matches (no scan bound), and whether any were left out. The typed prefix is normalized with
//! [`match_key`] and becomes the range `key >= prefix AND key < successor(prefix)`; SQLite's BINARY
//! collation on UTF-8 is code-point order, so the range is exactly the keys with that prefix.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Store, StoreError};
use crate::completion::key::{MAX_PREFIX_CHARS, match_key, successor};

/// One completion answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionPage {
    /// The first values, in code-point order, without duplicates.
    pub values: Vec<String>,
    /// The exact number of values that match.
    pub total: u64,
    /// Whether matches were left out of `values`.
    pub has_more: bool,
}

/// Which procedure inventory a Procedure completion draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcedureScope<'a> {
    /// One document of the active target, by name.
    Document(&'a str),
    /// Every document of the active target.
    Target,
}

/// The prefix range for a typed value, or `None` when the prefix can match nothing.
fn range(typed: &str) -> Option<(String, Option<String>)> {
    if typed.chars().count() > MAX_PREFIX_CHARS {
        return None;
    }
    let key = match_key(typed);
    let upper = successor(&key);
    Some((key, upper))
}

/// Runs the value and count statements of one family. Both statements hold `{upper}` where the
/// upper bound goes; it is dropped when the prefix has none. `key_column` is the column the range
/// applies to. Named parameters: `:lower`, `:upper`, `:limit`, and `:s1`, `:s2` for `scope`.
#[allow(clippy::too_many_arguments)]
fn page(
    conn: &Connection,
    values_sql: &str,
    count_sql: &str,
    key_column: &str,
    scope: &[&dyn rusqlite::ToSql],
    lower: &str,
    upper: Option<&str>,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let bound = match upper {
        Some(_) => format!("and {key_column} < :upper"),
        None => String::new(),
    };
    let values_sql = values_sql.replace("{upper}", &bound);
    let count_sql = count_sql.replace("{upper}", &bound);
    let mut named: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":lower", &lower)];
    if let Some(u) = &upper {
        named.push((":upper", u));
    }
    for (name, value) in [":s1", ":s2"].into_iter().zip(scope) {
        named.push((name, *value));
    }
    let total: i64 = conn.prepare_cached(&count_sql)?.query_row(named.as_slice(), |r| r.get(0))?;
    let limit_i = i64::try_from(limit).unwrap_or(i64::MAX);
    named.push((":limit", &limit_i));
    let values = conn
        .prepare_cached(&values_sql)?
        .query_map(named.as_slice(), |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let total = total.max(0) as u64;
    Ok(CompletionPage { has_more: total > values.len() as u64, values, total })
}

/// The id families: a canonical id is lowercase ASCII, so it is its own key.
fn id_family(
    conn: &Connection,
    table: &str,
    column: &str,
    filter: &str,
    typed: &str,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let Some((lower, upper)) = range(typed) else { return Ok(CompletionPage::default()) };
    let values = format!(
        "select {column} from {table} where {filter} {column} >= :lower {{upper}} order by {column} limit :limit"
    );
    let count = format!("select count(*) from {table} where {filter} {column} >= :lower {{upper}}");
    page(conn, &values, &count, column, &[], &lower, upper.as_deref(), limit)
}

impl Store {
    /// Evidence ids retained in the ledger.
    pub fn complete_evidence(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        self.read(|conn| id_family(conn, "evidence", "id", "", typed, limit))
    }

    /// Evidence ids whose operation and validated result identify a process capture.
    pub fn complete_process_captures(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        self.read(|conn| id_family(conn, "process_captures", "evidence_id", "", typed, limit))
    }

    /// Manifest ids of schema-valid artifact inventories.
    pub fn complete_manifests(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        self.read(|conn| id_family(conn, "artifact_manifests", "id", "", typed, limit))
    }

    /// Occurrence ids of schema-valid artifact inventory pages.
    pub fn complete_occurrences(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        self.read(|conn| id_family(conn, "artifact_occurrences", "id", "", typed, limit))
    }

    /// Ids of residual unknowns whose head is not resolved.
    pub fn complete_unknowns(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        self.read(|conn| id_family(conn, "unknowns", "id", "status <> 'resolved' and", typed, limit))
    }

    /// Names of the active target's documents.
    pub fn complete_documents(&self, typed: &str, limit: usize) -> Result<CompletionPage, StoreError> {
        let Some((lower, upper)) = range(typed) else { return Ok(CompletionPage::default()) };
        self.read(|conn| {
            let Some(target) = active_target_id(conn)? else { return Ok(CompletionPage::default()) };
            page(
                conn,
                "select name from documents where target_id = :s1 and key >= :lower {upper} order by name limit :limit",
                "select count(*) from documents where target_id = :s1 and key >= :lower {upper}",
                "key",
                &[&target],
                &lower,
                upper.as_deref(),
                limit,
            )
        })
    }

    /// Procedure addresses and uniquely naming names of the active target's inventory (one
    /// document, or all of them).
    pub fn complete_procedures(
        &self,
        scope: ProcedureScope<'_>,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        let Some((lower, upper)) = range(typed) else { return Ok(CompletionPage::default()) };
        self.read(|conn| {
            let Some(target) = active_target_id(conn)? else { return Ok(CompletionPage::default()) };
            let document: i64 = match scope {
                ProcedureScope::Target => 0,
                ProcedureScope::Document(name) => {
                    match conn
                        .prepare_cached("select id from documents where target_id = ?1 and name = ?2")?
                        .query_row(params![target, name], |r| r.get(0))
                        .optional()?
                    {
                        Some(id) => id,
                        None => return Ok(CompletionPage::default()),
                    }
                }
            };
            page(
                conn,
                "select value from procedure_completions where target_id = :s1 and document_id = :s2 and key >= :lower {upper}
                 order by value limit :limit",
                "select count(*) from procedure_completions where target_id = :s1 and document_id = :s2 and key >= :lower {upper}",
                "key",
                &[&target, &document],
                &lower,
                upper.as_deref(),
                limit,
            )
        })
    }
}

fn active_target_id(conn: &Connection) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("select id from targets where active = 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}
