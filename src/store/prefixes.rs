//! Procedure completion prefix counts (migrations V6 and V9): for each scope, the number of
//! values matching a key prefix and the first [`HEAD_VALUES`] of them in code-point order, so
//! completing a procedure costs one lookup, or a scan of at most [`SCANNED_AT_MOST`] index
//! entries, however large the inventory and however long the prefix.
//!
//! Two kinds of prefix are stored. Every prefix of up to [`COUNTED_PROCEDURE_PREFIX_CHARS`]
//! characters of a key has a row, so a short prefix without one matches nothing. A longer prefix
//! has a row when it is a branching point of the scope's sorted keys (two keys part there, or a
//! key ends there while others go on) matching more than [`SCANNED_AT_MOST`] values. A longer
//! prefix `p` that is not itself such a point matches exactly what the first stored prefix at or
//! after `p` matches, when that one starts with `p`: the keys below `p` run on together to it.
//! When none does, `p` matches at most [`SCANNED_AT_MOST`] values, and the caller scans them.

use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;

/// Prefixes of up to this many characters of a completion key are counted.
pub const COUNTED_PROCEDURE_PREFIX_CHARS: usize = 2;

/// A longer prefix matching more values than this is counted; one that is not is scanned.
pub const SCANNED_AT_MOST: usize = 256;

/// Values kept per prefix: the most one MCP completion answer holds.
pub const HEAD_VALUES: usize = 100;

/// A stored prefix's exact number of matching values and the first of them in code-point order.
pub(super) struct Counted {
    pub(super) total: u64,
    pub(super) head: Vec<String>,
}

/// The first [`HEAD_VALUES`] of `values`, in code-point order.
fn head<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut first = super::completion::Firsts::new(HEAD_VALUES);
    for value in values {
        first.offer(value);
    }
    first.into_sorted().into_iter().map(str::to_owned).collect()
}

/// How many characters two keys share at their start.
fn common_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// The first `chars` characters of `key`.
fn first_chars(key: &str, chars: usize) -> &str {
    key.char_indices()
        .nth(chars)
        .map_or(key, |(end, _)| &key[..end])
}

/// The stored prefixes of one scope, from its `(key, value)` pairs sorted by key: each as
/// `(prefix, rows, head)`.
fn scope_prefixes<S: AsRef<str>>(entries: &[(S, S)]) -> Vec<(String, u64, Vec<String>)> {
    let mut out = Vec::new();
    let values = |from: usize, to: usize| entries[from..=to].iter().map(|(_, v)| v.as_ref());
    let key = |i: usize| entries[i].0.as_ref();
    // Short prefixes: the keys with a given first `length` characters are adjacent.
    for length in 0..=COUNTED_PROCEDURE_PREFIX_CHARS {
        let mut i = 0;
        while i < entries.len() {
            if key(i).chars().count() < length {
                i += 1;
                continue;
            }
            let prefix = first_chars(key(i), length);
            let mut j = i;
            while j + 1 < entries.len() && key(j + 1).starts_with(prefix) {
                j += 1;
            }
            out.push((prefix.to_owned(), (j - i + 1) as u64, head(values(i, j))));
            i = j + 1;
        }
    }
    // Longer branching points, from the characters adjacent keys share: each run of keys that
    // share at least `l` characters, bounded by neighbours that share fewer, is the point of
    // its first `l` characters. A stack of open runs `(l, first key)` finds them in one pass.
    let mut open: Vec<(usize, usize)> = vec![(0, 0)];
    for i in 1..=entries.len() {
        let shared = if i < entries.len() {
            common_chars(key(i - 1), key(i))
        } else {
            0
        };
        let mut first = i - 1;
        while open.last().is_some_and(|&(l, _)| shared < l) {
            let (l, from) = open.pop().unwrap_or_default();
            first = from;
            let rows = i - from;
            if l > COUNTED_PROCEDURE_PREFIX_CHARS && rows > SCANNED_AT_MOST {
                let prefix = first_chars(key(from), l).to_owned();
                out.push((prefix, rows as u64, head(values(from, i - 1))));
            }
        }
        if open.last().is_none_or(|&(l, _)| shared > l) {
            open.push((shared, first));
        }
    }
    out
}

/// A stored prefix of one scope: the prefix, its number of values, and the first of them as a
/// JSON array.
pub(super) type PrefixRow = (String, u64, String);

/// The prefix rows of one scope from its `(key, value)` pairs, sorted and unique as the primary
/// key keeps them.
pub(super) fn prefix_rows<S: AsRef<str>>(entries: &[(S, S)]) -> Vec<PrefixRow> {
    scope_prefixes(entries)
        .into_iter()
        .map(|(prefix, rows, head)| (prefix, rows, serde_json::Value::from(head).to_string()))
        .collect()
}

/// The prefix rows of one scope from its addresses (each its own text, as key and value) and
/// its `(key, value)` names, which are left sorted and unique. The addresses are put in their
/// texts' order as numbers, each text made once, and merged with the names.
pub(super) fn scope_prefix_rows(
    addresses: &[u64],
    names: &mut Vec<(String, String)>,
) -> Vec<PrefixRow> {
    let mut in_text_order = addresses.to_vec();
    in_text_order.sort_unstable_by_key(|&a| super::addresses::text_order(a));
    let texts: Vec<String> = in_text_order
        .into_iter()
        .map(super::addresses::text_of_address)
        .collect();
    names.sort_unstable();
    names.dedup();
    prefix_rows(&merged(&texts, names))
}

/// The `(key, value)` pairs of a scope's address texts (each its own key) and its names, both
/// sorted, merged in order without repeats.
fn merged<'a>(texts: &'a [String], names: &'a [(String, String)]) -> Vec<(&'a str, &'a str)> {
    let mut values: Vec<(&str, &str)> = Vec::with_capacity(texts.len() + names.len());
    let mut names = names
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .peekable();
    for text in texts {
        let text = (text.as_str(), text.as_str());
        while let Some(name) = names.next_if(|&name| name < text) {
            values.push(name);
        }
        values.push(text);
    }
    values.extend(names);
    values.dedup();
    values
}

/// Stores the prefix rows of one scope of `target_id`. Runs in the caller's transaction.
pub(super) fn insert_scope_prefixes(
    conn: &Connection,
    target_id: i64,
    document: i64,
    rows: &[PrefixRow],
) -> Result<(), StoreError> {
    super::insert_rows(
        conn,
        "insert into procedure_completion_prefixes (target_id, document_id, prefix, rows, head) values",
        5,
        rows,
        |insert, n, (prefix, count, head)| {
            insert.raw_bind_parameter(n, target_id)?;
            insert.raw_bind_parameter(n + 1, document)?;
            insert.raw_bind_parameter(n + 2, prefix)?;
            insert.raw_bind_parameter(n + 3, *count as i64)?;
            insert.raw_bind_parameter(n + 4, head)
        },
    )
}

/// Counts the completion values of every scope of `target_id` by prefix (its names kept in
/// `procedure_completions` with its addresses read from `procedures`) and stores the counts,
/// replacing any stored before. Runs in the caller's transaction.
pub(super) fn write_prefixes(conn: &Connection, target_id: i64) -> Result<(), StoreError> {
    conn.prepare_cached("delete from procedure_completion_prefixes where target_id = ?1")?
        .execute([target_id])?;
    // A target of one document keeps its document's scope alone (schema version 11).
    let mut scopes: Vec<i64> = conn
        .prepare_cached("select id from documents where target_id = ?1 order by id")?
        .query_map([target_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if scopes.len() > 1 {
        scopes.insert(0, 0);
    }
    let mut named = conn.prepare_cached(
        "select key, value from procedure_completions where target_id = ?1 and document_id = ?2",
    )?;
    for document in scopes {
        let mut names: Vec<(String, String)> = named
            .query_map(params![target_id, document], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut addresses: Vec<u64> = Vec::new();
        super::addresses::each_in_scope(conn, target_id, document, "", |address| {
            addresses.push(address);
        })?;
        let rows = scope_prefix_rows(&addresses, &mut names);
        if !rows.is_empty() {
            insert_scope_prefixes(conn, target_id, document, &rows)?;
        }
    }
    Ok(())
}

/// Recounts every target's prefixes (after its completion keys were recomputed, or for a ledger
/// whose targets were stored before migration V6 added the counts or V9 the longer ones).
pub(super) fn rewrite_all_prefixes(conn: &Connection) -> Result<(), StoreError> {
    let targets: Vec<i64> = conn
        .prepare("select id from targets")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for target in targets {
        write_prefixes(conn, target)?;
    }
    Ok(())
}

/// The count for `key` (a normalized prefix) in one scope, with at most `limit` first values:
/// `None` when the caller scans instead, which is then at most [`SCANNED_AT_MOST`] index
/// entries for a key longer than [`COUNTED_PROCEDURE_PREFIX_CHARS`] (unless the scope's counts
/// are not stored: a ledger a read-only reader opened before it was migrated).
pub(super) fn counted_page(
    conn: &Connection,
    target_id: i64,
    document_id: i64,
    key: &str,
    limit: usize,
) -> Result<Option<Counted>, StoreError> {
    if limit > HEAD_VALUES {
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
    let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, i64, String)> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    };
    let row = if key.chars().count() <= COUNTED_PROCEDURE_PREFIX_CHARS {
        let row = conn
            .prepare_cached(
                "select prefix, rows, head from procedure_completion_prefixes
                 where target_id = ?1 and document_id = ?2 and prefix = ?3",
            )?
            .query_row(params![target_id, document_id, key], read)
            .optional()?;
        if row.is_none() {
            // Every short prefix of a stored value has a row; none means the scope has no such
            // value, unless the scope has no rows at all (its counts were never written).
            let any: bool = conn
                .prepare_cached(
                    "select 1 from procedure_completion_prefixes where target_id = ?1 and document_id = ?2 and prefix = ''",
                )?
                .query_row(params![target_id, document_id], |_| Ok(()))
                .optional()?
                .is_some();
            return Ok(any.then(|| Counted {
                total: 0,
                head: Vec::new(),
            }));
        }
        row
    } else {
        // The branching point the keys below `key` run on to, if it is counted.
        conn.prepare_cached(
            "select prefix, rows, head from procedure_completion_prefixes
             where target_id = ?1 and document_id = ?2 and prefix >= ?3 order by prefix limit 1",
        )?
        .query_row(params![target_id, document_id, key], read)
        .optional()?
        .filter(|(prefix, _, _)| prefix.starts_with(key))
    };
    let Some((_, rows, head)) = row else {
        return Ok(None);
    };
    let mut values: Vec<String> =
        serde_json::from_str(&head).map_err(|source| StoreError::CorruptRecord {
            id: format!("procedure completion prefix {key:?}"),
            source,
        })?;
    values.truncate(limit);
    Ok(Some(Counted {
        total: rows.max(0) as u64,
        head: values,
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::ids::Address;

    /// The completion values of a scope, merged from its addresses in their texts' order and
    /// its sorted names, are the pairs sorted as text and without repeats (issue 30): at every
    /// count of digits, with names sorting before, among and after the addresses, a name that
    /// is the text of its own address and one that is another address's text.
    #[test]
    fn merged_values_are_the_sorted_pairs_regression_30() {
        let addresses: Vec<u64> = (0..64)
            .flat_map(|b| [1u64 << b, (1u64 << b) - 1, (3u64 << b) / 2])
            .chain([u64::MAX, 0x10, 0x1f, 0x100, 0xabc, 0x1000_0000])
            .collect::<BTreeSet<u64>>()
            .into_iter()
            .collect();
        let names: Vec<(String, String)> = [
            ("!", "!"),
            ("0x10", "0x10"),
            ("0x100", "0x100"),
            ("0x01", "0x01"),
            ("0x1g", "0x1G"),
            ("0xab", "0xAB"),
            ("0xabc0", "0xABC0"),
            ("main", "main"),
            ("main", "Main"),
            ("~", "~"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
        let mut in_text_order = addresses.clone();
        in_text_order.sort_unstable_by_key(|&a| super::super::addresses::text_order(a));
        let texts: Vec<String> = in_text_order
            .into_iter()
            .map(super::super::addresses::text_of_address)
            .collect();
        let mut expected: Vec<(String, String)> = addresses
            .iter()
            .map(|&a| (Address(a).to_string(), Address(a).to_string()))
            .chain(names.iter().cloned())
            .collect();
        expected.sort_unstable();
        expected.dedup();
        let got: Vec<(String, String)> = merged(&texts, &names)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(got, expected);
        // Two pairs were the same value: `0x10` and `0x100`, named as their own texts.
        assert_eq!(got.len(), addresses.len() + names.len() - 2);
    }

    /// Every prefix of every key, answered from the stored rows as `counted_page` does, against
    /// counting the keys that start with it.
    fn check(keys: &[&str]) {
        let mut entries: Vec<(String, String)> = keys
            .iter()
            .map(|k| (k.to_string(), k.to_uppercase()))
            .collect();
        entries.sort();
        let stored = scope_prefixes(&entries);
        let mut sorted: Vec<&(String, u64, Vec<String>)> = stored.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut typed: Vec<String> = Vec::new();
        for (key, _) in &entries {
            for n in 0..=key.chars().count() {
                typed.push(first_chars(key, n).to_owned());
            }
            typed.push(format!("{key}~"));
        }
        typed.sort();
        typed.dedup();
        for p in typed {
            let matching: Vec<&(String, String)> =
                entries.iter().filter(|(k, _)| k.starts_with(&p)).collect();
            let found = if p.chars().count() <= COUNTED_PROCEDURE_PREFIX_CHARS {
                sorted.iter().find(|s| s.0 == p)
            } else {
                sorted
                    .iter()
                    .find(|s| s.0 >= p)
                    .filter(|s| s.0.starts_with(&p))
            };
            match found {
                Some((_, rows, head)) => {
                    assert_eq!(*rows as usize, matching.len(), "{p:?}");
                    let mut want: Vec<String> = matching.iter().map(|(_, v)| v.clone()).collect();
                    want.sort();
                    want.truncate(HEAD_VALUES);
                    assert_eq!(*head, want, "{p:?}");
                }
                None if p.chars().count() <= COUNTED_PROCEDURE_PREFIX_CHARS => {
                    assert!(matching.is_empty(), "{p:?}");
                }
                None => assert!(
                    matching.len() <= SCANNED_AT_MOST,
                    "{p:?}: {}",
                    matching.len()
                ),
            }
        }
    }

    #[test]
    fn every_prefix_is_counted_or_scans_at_most_the_bound() {
        // Mach-O style addresses: all share `0x1000`, then part digit by digit.
        let addresses: Vec<String> = (0..3000u64)
            .map(|i| format!("0x{:x}", 0x1_0000_4000 + i * 52))
            .collect();
        // Names sharing long runs, keys that are prefixes of others, and non-ASCII characters.
        let mut names: Vec<String> = (0..700)
            .map(|i| format!("__zn4core3ptr{}drop_in_place{i}", i % 3))
            .collect();
        names.extend((0..400).map(|i| format!("évènement_{i}")));
        names.extend(["a", "ab", "abc", "__zn4core"].map(str::to_owned));
        let mut keys: Vec<&str> = addresses.iter().map(String::as_str).collect();
        keys.extend(names.iter().map(String::as_str));
        check(&keys);
        check(&[]);
        check(&["x"]);
    }

    #[test]
    fn long_prefixes_are_stored_only_where_keys_part() {
        let keys: Vec<String> = (0..600).map(|i| format!("0x1000{:03}", i)).collect();
        let entries: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), k.clone())).collect();
        let stored = scope_prefixes(&entries);
        let long: Vec<(&str, u64)> = stored
            .iter()
            .filter(|s| s.0.chars().count() > COUNTED_PROCEDURE_PREFIX_CHARS)
            .map(|s| (s.0.as_str(), s.1))
            .collect();
        // `0x1`, `0x10`, `0x100` run on to `0x1000` (600 keys), which parts into `0x10000`…
        // `0x10005` (100 each): only `0x1000` matches more than the bound.
        assert_eq!(long, [("0x1000", 600)]);
        assert_eq!(stored.iter().filter(|s| s.0.is_empty()).count(), 1);
    }
}
