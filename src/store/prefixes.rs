//! Procedure completion prefix counts (migration V6): for each scope and each key prefix of up
//! to [`COUNTED_PROCEDURE_PREFIX_CHARS`] characters, the number of matching values and the first
//! [`HEAD_VALUES`] of them in code-point order, so completing the first characters of a procedure
//! costs one lookup however large the inventory.

use std::collections::{BTreeMap, BinaryHeap};

use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;
use super::completion::CompletionPage;

/// Prefixes of up to this many characters of a completion key are counted.
pub const COUNTED_PROCEDURE_PREFIX_CHARS: usize = 2;

/// Values kept per prefix: the most one MCP completion answer holds.
pub const HEAD_VALUES: usize = 100;

/// One prefix's tally while the scope's values are read.
#[derive(Default)]
struct Tally {
    rows: u64,
    /// Max-heap of the smallest values seen so far.
    head: BinaryHeap<String>,
}

impl Tally {
    fn add(&mut self, value: &str) {
        self.rows += 1;
        if self.head.len() < HEAD_VALUES {
            self.head.push(value.to_owned());
        } else if self
            .head
            .peek()
            .is_some_and(|largest| value < largest.as_str())
        {
            self.head.pop();
            self.head.push(value.to_owned());
        }
    }
}

/// Counts the completion values of every scope of `target_id` by prefix and stores the counts,
/// replacing any stored before. Runs in the caller's transaction.
pub(super) fn write_prefixes(conn: &Connection, target_id: i64) -> Result<(), StoreError> {
    let mut tallies: BTreeMap<(i64, String), Tally> = BTreeMap::new();
    {
        let mut values = conn.prepare_cached(
            "select document_id, key, value from procedure_completions where target_id = ?1",
        )?;
        let mut rows = values.query([target_id])?;
        while let Some(row) = rows.next()? {
            let document: i64 = row.get(0)?;
            let key: String = row.get(1)?;
            let value: String = row.get(2)?;
            // The byte ends of the key's prefixes of 0, 1, … characters: each once, also for a
            // key shorter than the counted prefixes (an empty key has only the empty prefix).
            let ends = key
                .char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(key.len()))
                .take(COUNTED_PROCEDURE_PREFIX_CHARS + 1);
            for end in ends {
                tallies
                    .entry((document, key[..end].to_owned()))
                    .or_default()
                    .add(&value);
            }
        }
    }
    conn.prepare_cached("delete from procedure_completion_prefixes where target_id = ?1")?
        .execute([target_id])?;
    let mut insert = conn.prepare_cached(
        "insert into procedure_completion_prefixes (target_id, document_id, prefix, rows, head)
         values (?1, ?2, ?3, ?4, ?5)",
    )?;
    for ((document, prefix), tally) in tallies {
        let head = serde_json::Value::from(tally.head.into_sorted_vec()).to_string();
        insert.execute(params![
            target_id,
            document,
            prefix,
            tally.rows as i64,
            head
        ])?;
    }
    Ok(())
}

/// Recounts every target's prefixes (after its completion keys were recomputed, or for a ledger
/// whose targets were stored before migration V6).
pub(super) fn rewrite_all_prefixes(conn: &Connection) -> Result<(), StoreError> {
    let targets: Vec<i64> = conn
        .prepare("select distinct target_id from procedure_completions")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for target in targets {
        write_prefixes(conn, target)?;
    }
    Ok(())
}

/// The answer for `key` (a normalized prefix of at most [`COUNTED_PROCEDURE_PREFIX_CHARS`]
/// characters) in one scope, from the stored counts: `None` when the scope's counts are not
/// stored (a ledger a read-only reader opened before it was migrated), so the caller scans.
pub(super) fn counted_page(
    conn: &Connection,
    target_id: i64,
    document_id: i64,
    key: &str,
    limit: usize,
) -> Result<Option<CompletionPage>, StoreError> {
    if limit > HEAD_VALUES || key.chars().count() > COUNTED_PROCEDURE_PREFIX_CHARS {
        return Ok(None);
    }
    let stored = conn
        .prepare_cached("select 1 from sqlite_schema where name = 'procedure_completion_prefixes'")?
        .query_row([], |_| Ok(()))
        .optional()?
        .is_some();
    if !stored {
        return Ok(None);
    }
    let row: Option<(i64, String)> = conn
        .prepare_cached(
            "select rows, head from procedure_completion_prefixes
             where target_id = ?1 and document_id = ?2 and prefix = ?3",
        )?
        .query_row(params![target_id, document_id, key], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let Some((rows, head)) = row else {
        // Every prefix of a stored value has a row; none means the scope has no such value,
        // unless the scope has no rows at all (its counts were never written).
        let any: bool = conn
            .prepare_cached(
                "select 1 from procedure_completion_prefixes where target_id = ?1 and document_id = ?2 and prefix = ''",
            )?
            .query_row(params![target_id, document_id], |_| Ok(()))
            .optional()?
            .is_some();
        return Ok(any.then(CompletionPage::default));
    };
    let mut values: Vec<String> =
        serde_json::from_str(&head).map_err(|source| StoreError::CorruptRecord {
            id: format!("procedure completion prefix {key:?}"),
            source,
        })?;
    values.truncate(limit);
    let total = rows.max(0) as u64;
    Ok(Some(CompletionPage {
        has_more: total > values.len() as u64,
        values,
        total,
    }))
}
