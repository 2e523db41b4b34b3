//! Completion queries: indexed prefix range scans over the session's distinct values.
//!
//! Each family answers with the first `limit` values in code-point order, the exact number of all
//! matches (no scan bound), and whether any were left out. The typed prefix is normalized with
//! [`match_key`] and becomes the range `key >= prefix AND key < successor(prefix)`; SQLite's BINARY
//! collation on UTF-8 is code-point order, so the range is exactly the keys with that prefix.

use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OptionalExtension, StatementStatus, params};

use super::{ReadOnlyStore, StoreError};
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

/// Evidence ids are counted by their prefix of this many characters in `evidence_id_prefixes`
/// (migrations V2 and V10), so the total for a typed prefix no longer than that is a sum of at
/// most 256 rows (`ev_` and two hex digits), and a longer prefix matches one id in 4096 at most,
/// whose index entries are counted.
pub const COUNTED_PREFIX_CHARS: usize = 5;

/// Adds the re-prepares SQLite counted on `stmt` since the last call to the store's tally (see
/// [`ReadOnlyStore::completion_reprepares`]).
pub(super) fn tally_reprepares(reprepares: &AtomicU64, stmt: &mut rusqlite::Statement<'_>) {
    let n = stmt.reset_status(StatementStatus::RePrepare);
    if n > 0 {
        reprepares.fetch_add(n as u64, Ordering::Relaxed);
    }
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
/// applies to. Named parameters: `:lower` and `:upper`; `:limit` is replaced by the literal limit.
#[allow(clippy::too_many_arguments)]
fn page(
    conn: &Connection,
    reprepares: &AtomicU64,
    values_sql: &str,
    count_sql: &str,
    key_column: &str,
    lower: &str,
    upper: Option<&str>,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let bound = match upper {
        Some(_) => format!("and {key_column} < :upper"),
        None => String::new(),
    };
    // The limit is written into the statement, not bound: SQLite re-prepares a statement whose
    // bound LIMIT value changes (the planner specializes on it), which would defeat the cache.
    let values_sql = values_sql
        .replace("{upper}", &bound)
        .replace(":limit", &limit.to_string());
    let count_sql = count_sql.replace("{upper}", &bound);
    let mut named: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":lower", &lower)];
    if let Some(u) = &upper {
        named.push((":upper", u));
    }
    let mut select = conn.prepare_cached(&values_sql)?;
    let values = select
        .query_map(named.as_slice(), |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    tally_reprepares(reprepares, &mut select);
    // An empty count statement means the caller knows the total; it fills it in.
    let mut total = values.len() as i64;
    if !count_sql.is_empty() {
        let mut count = conn.prepare_cached(&count_sql)?;
        total = count.query_row(named.as_slice(), |r| r.get(0))?;
        tally_reprepares(reprepares, &mut count);
    }
    let total = total.max(0) as u64;
    Ok(CompletionPage {
        has_more: total > values.len() as u64,
        values,
        total,
    })
}

/// The id families: a canonical id is lowercase ASCII, so it is its own key.
fn id_family(
    conn: &Connection,
    reprepares: &AtomicU64,
    table: &str,
    column: &str,
    filter: &str,
    typed: &str,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let Some((lower, upper)) = range(typed) else {
        return Ok(CompletionPage::default());
    };
    let values = format!(
        "select {column} from {table} where {filter} {column} >= :lower {{upper}} order by {column} limit :limit"
    );
    let count = format!("select count(*) from {table} where {filter} {column} >= :lower {{upper}}");
    page(
        conn,
        reprepares,
        &values,
        &count,
        column,
        &lower,
        upper.as_deref(),
        limit,
    )
}

/// The first values offered, at most `limit` of them in order, and how many were.
pub(super) struct Firsts<T> {
    limit: usize,
    total: u64,
    /// Max-heap of the smallest `limit` values offered so far.
    first: std::collections::BinaryHeap<T>,
}

impl<T: Ord> Firsts<T> {
    pub(super) fn new(limit: usize) -> Firsts<T> {
        Firsts {
            limit,
            total: 0,
            first: std::collections::BinaryHeap::with_capacity(limit + 1),
        }
    }

    pub(super) fn offer(&mut self, value: T) {
        self.total += 1;
        if self.first.len() < self.limit {
            self.first.push(value);
        } else if self.first.peek().is_some_and(|largest| value < *largest) {
            self.first.pop();
            self.first.push(value);
        }
    }

    /// The values kept, in order.
    pub(super) fn into_sorted(self) -> Vec<T> {
        self.first.into_sorted_vec()
    }
}

impl Firsts<String> {
    fn page(self) -> CompletionPage {
        let total = self.total;
        let values = self.into_sorted();
        CompletionPage {
            has_more: total > values.len() as u64,
            values,
            total,
        }
    }
}

/// One pass over the matches of a scoped family (an equality scope plus the key range): runs
/// `sql` (which holds `{upper}` where the upper bound goes, and names its parameters `:lower`,
/// `:upper`, `:s1`, `:s2`; `scope` binds the last two) and hands `each` every row. The statement
/// carries no ORDER BY or LIMIT: with an equality constraint SQLite would re-prepare such a
/// statement on every new binding, and the count needs the whole range anyway.
fn scan_rows(
    conn: &Connection,
    reprepares: &AtomicU64,
    sql: &str,
    scope: &[&dyn rusqlite::ToSql],
    lower: &str,
    upper: Option<&str>,
    mut each: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    let sql = sql.replace(
        "{upper}",
        if upper.is_some() {
            "and key < :upper"
        } else {
            ""
        },
    );
    let mut named: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":lower", &lower)];
    if let Some(u) = &upper {
        named.push((":upper", u));
    }
    for (name, value) in [":s1", ":s2"].into_iter().zip(scope) {
        named.push((name, *value));
    }
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(named.as_slice())?;
    while let Some(row) = rows.next()? {
        each(row)?;
    }
    drop(rows);
    tally_reprepares(reprepares, &mut stmt);
    Ok(())
}

/// [`scan_rows`] of a statement whose first column is the value: counts every match and keeps
/// the first `limit` values in code-point order.
fn scan_page(
    conn: &Connection,
    reprepares: &AtomicU64,
    sql: &str,
    scope: &[&dyn rusqlite::ToSql],
    lower: &str,
    upper: Option<&str>,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let mut firsts = Firsts::new(limit);
    scan_rows(conn, reprepares, sql, scope, lower, upper, |row| {
        firsts.offer(row.get(0)?);
        Ok(())
    })?;
    Ok(firsts.page())
}

/// The procedure completion values of scope `document` of `target` whose key has the prefix
/// `lower` (`upper` its successor): the names `procedure_completions` keeps, and the addresses
/// of `procedures` (schema version 12).
fn scan_procedures(
    conn: &Connection,
    reprepares: &AtomicU64,
    target: i64,
    document: i64,
    lower: &str,
    upper: Option<&str>,
    limit: usize,
) -> Result<CompletionPage, StoreError> {
    let mut firsts = Firsts::new(limit);
    // A value kept here that is an address's text is that address's value, offered once: a
    // name with that text, or an address a ledger written before version 12 kept here (one a
    // reader opened before it was migrated).
    let mut kept: std::collections::HashSet<u64> = std::collections::HashSet::new();
    scan_rows(
        conn,
        reprepares,
        "select key, value from procedure_completions where target_id = :s1 and document_id = :s2 and key >= :lower {upper}",
        &[&target, &document],
        lower,
        upper,
        |row| {
            let (key, value): (String, String) = (row.get(0)?, row.get(1)?);
            if key == value
                && let Some(address) = super::addresses::address_of_text(&value)
            {
                kept.insert(address);
            }
            firsts.offer(value);
            Ok(())
        },
    )?;
    super::addresses::each_in_scope(conn, target, document, lower, |address| {
        if !kept.contains(&address) {
            firsts.offer(super::addresses::text_of_address(address));
        }
    })?;
    Ok(firsts.page())
}

impl ReadOnlyStore {
    /// How many times SQLite had to re-prepare a cached completion statement of this store. Stays
    /// 0 as long as nothing changes the schema or its statistics under a cached statement (rea
    /// never runs ANALYZE or PRAGMA optimize).
    pub fn completion_reprepares(&self) -> u64 {
        self.reprepares.load(Ordering::Relaxed)
    }

    /// Evidence ids retained in the ledger. The total for a prefix of up to
    /// [`COUNTED_PREFIX_CHARS`] characters comes from the prefix count table in one lookup.
    pub fn complete_evidence(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        let Some((key, upper)) = range(typed) else {
            return Ok(CompletionPage::default());
        };
        if key.chars().count() > COUNTED_PREFIX_CHARS {
            return self.read(|conn| {
                id_family(conn, &self.reprepares, "evidence", "id", "", typed, limit)
            });
        }
        self.read(|conn| {
            // Every id's counted prefix starts with the typed key exactly when the id does.
            let count = match upper {
                Some(_) => "select coalesce(sum(rows), 0) from evidence_id_prefixes where prefix >= ?1 and prefix < ?2",
                None => "select coalesce(sum(rows), 0) from evidence_id_prefixes where prefix >= ?1",
            };
            let mut count = conn.prepare_cached(count)?;
            let total: i64 = match &upper {
                Some(upper) => count.query_row([&key, upper], |r| r.get(0))?,
                None => count.query_row([&key], |r| r.get(0))?,
            };
            tally_reprepares(&self.reprepares, &mut count);
            let mut page = page(
                conn,
                &self.reprepares,
                "select id from evidence where id >= :lower {upper} order by id limit :limit",
                "",
                "id",
                &key,
                upper.as_deref(),
                limit,
            )?;
            page.total = total.max(0) as u64;
            page.has_more = page.total > page.values.len() as u64;
            Ok(page)
        })
    }

    /// Evidence ids whose operation and validated result identify a process capture.
    pub fn complete_process_captures(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        self.read(|conn| {
            id_family(
                conn,
                &self.reprepares,
                "process_captures",
                "evidence_id",
                "",
                typed,
                limit,
            )
        })
    }

    /// Manifest ids of schema-valid artifact inventories.
    pub fn complete_manifests(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        self.read(|conn| {
            id_family(
                conn,
                &self.reprepares,
                "artifact_manifests",
                "id",
                "",
                typed,
                limit,
            )
        })
    }

    /// Occurrence ids of schema-valid artifact inventory pages.
    pub fn complete_occurrences(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        self.read(|conn| {
            id_family(
                conn,
                &self.reprepares,
                "artifact_occurrences",
                "id",
                "",
                typed,
                limit,
            )
        })
    }

    /// Ids of residual unknowns whose head is not resolved.
    pub fn complete_unknowns(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        self.read(|conn| {
            id_family(
                conn,
                &self.reprepares,
                "unknowns",
                "id",
                "status <> 'resolved' and",
                typed,
                limit,
            )
        })
    }

    /// Ids of the active target's annotations (live or withdrawn: a withdrawn head can be revised
    /// again), for `supersedes`.
    pub fn complete_annotations(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        self.read(|conn| {
            id_family(
                conn,
                &self.reprepares,
                "annotations",
                "id",
                "target_sha256 = (select sha256 from targets where active = 1) and",
                typed,
                limit,
            )
        })
    }

    /// Names of the active target's documents.
    pub fn complete_documents(
        &self,
        typed: &str,
        limit: usize,
    ) -> Result<CompletionPage, StoreError> {
        let Some((lower, upper)) = range(typed) else {
            return Ok(CompletionPage::default());
        };
        self.read(|conn| {
            let Some(target) = active_target_id(conn)? else {
                return Ok(CompletionPage::default());
            };
            scan_page(
                conn,
                &self.reprepares,
                "select name from documents where target_id = :s1 and key >= :lower {upper}",
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
        let Some((lower, upper)) = range(typed) else {
            return Ok(CompletionPage::default());
        };
        self.read(|conn| {
            let Some(target) = active_target_id(conn)? else {
                return Ok(CompletionPage::default());
            };
            // The scope asked for (a document row, or 0 for the whole target), and the scope
            // whose completion values it has: a target of one document keeps them in the
            // document's scope alone (migration V11).
            let (asked, document): (i64, i64) = match scope {
                ProcedureScope::Target => match conn
                    .prepare_cached("select min(id), count(*) from documents where target_id = ?1")?
                    .query_row([target], |r| {
                        Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, i64>(1)?))
                    })? {
                    (Some(only), 1) => (0, only),
                    _ => (0, 0),
                },
                ProcedureScope::Document(name) => {
                    match conn
                        .prepare_cached(
                            "select id from documents where target_id = ?1 and name = ?2",
                        )?
                        .query_row(params![target, name], |r| r.get(0))
                        .optional()?
                    {
                        Some(id) => (id, id),
                        None => return Ok(CompletionPage::default()),
                    }
                }
            };
            let page = match super::prefixes::counted_page(conn, target, document, &lower, limit)? {
                Some(counted) => CompletionPage {
                    has_more: counted.total > counted.head.len() as u64,
                    values: counted.head,
                    total: counted.total,
                },
                None => scan_procedures(
                    conn,
                    &self.reprepares,
                    target,
                    document,
                    &lower,
                    upper.as_deref(),
                    limit,
                )?,
            };
            // Analyst names are live (annotating changes the next answer), so they are read
            // beside the inventory's fixed values, never written into them.
            let analyst = super::annotations::analyst_completions(
                conn,
                &self.reprepares,
                target,
                asked,
                document,
                &lower,
                upper.as_deref(),
            )?;
            Ok(merged(page, analyst, limit))
        })
    }
}

/// `page` with `extra` values (none of them among the page's matches) merged in: code-point
/// order, the first `limit`, the exact total.
fn merged(page: CompletionPage, extra: Vec<String>, limit: usize) -> CompletionPage {
    if extra.is_empty() {
        return page;
    }
    let total = page.total + extra.len() as u64;
    let mut values = page.values;
    values.extend(extra);
    values.sort();
    values.dedup();
    values.truncate(limit);
    CompletionPage {
        has_more: total > values.len() as u64,
        values,
        total,
    }
}

fn active_target_id(conn: &Connection) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("select id from targets where active = 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}
