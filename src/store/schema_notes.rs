//! Why each table and index exists, inside the schema itself, so `sqlite3 session.db .schema`
//! explains a ledger found on disk without rea's sources.
//!
//! The migrations say it in the comment block before each statement, but SQLite keeps only the
//! text of a `CREATE` statement, from `CREATE` to its end: comments before it are lost. Editing
//! old migrations would change their checksums, so the notes are written into `sqlite_schema`
//! after the migrations ran, as SQLite documents for schema changes `ALTER TABLE` cannot make
//! (`writable_schema`, then `schema_version` raised by one). Only comments are added, and the
//! rewrite is undone unless every table and index reads back exactly as before it.
//!
//! Notes come from the embedded migrations: the comment block right before `create … NAME`
//! describes NAME; a block before `alter table NAME …` or `delete from NAME` adds what that
//! schema version changed. A multi-line statement gets the notes as `--` lines after its first
//! line; a one-line statement (an index) as a `/* … */` block at its end, so the `;` `.schema`
//! prints after it stays outside the comment.

use std::collections::BTreeMap;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// Indentation of the note lines inside a multi-line statement, as the migrations indent columns.
const INDENT: &str = "    ";

/// Every object's notes, from the embedded migrations in version order.
pub(super) fn notes() -> BTreeMap<String, Vec<String>> {
    let mut notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for migration in super::embedded::migrations::runner().get_migrations() {
        let Some(sql) = migration.sql() else { continue };
        for (block, statement) in commented_statements(sql) {
            let Some((name, creates)) = described(&statement) else {
                continue;
            };
            if creates {
                notes.insert(name, block);
            } else if let Some(lines) = notes.get_mut(&name) {
                lines.push(String::new());
                lines.push(format!("Schema version {}:", migration.version()));
                lines.extend(block);
            }
        }
    }
    notes
}

/// The comment blocks of a migration that stand right before a statement (no blank line
/// between), with the statement's first line.
fn commented_statements(sql: &str) -> Vec<(Vec<String>, String)> {
    let mut out = vec![];
    let mut block: Vec<String> = vec![];
    for line in sql.lines() {
        let line = line.trim_end();
        if let Some(text) = line.strip_prefix("--") {
            block.push(text.strip_prefix(' ').unwrap_or(text).to_owned());
        } else if line.is_empty() {
            block.clear();
        } else {
            if !block.is_empty() && !line.starts_with(' ') {
                out.push((std::mem::take(&mut block), line.to_owned()));
            }
            block.clear();
        }
    }
    out
}

/// The object a statement's notes describe, and whether the statement creates it.
fn described(statement: &str) -> Option<(String, bool)> {
    let lower = statement.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '(' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let (name, creates) = match words.as_slice() {
        ["create", "table" | "index" | "trigger" | "view", name, ..]
        | ["create", "unique", "index", name, ..] => (*name, true),
        ["alter", "table", name, ..] | ["delete", "from", name, ..] => (*name, false),
        _ => return None,
    };
    Some((name.to_owned(), creates))
}

/// `sql` without notes an earlier run added: the `--` lines after its first line, or the block
/// comment at its end. The migrations' statements have no comments inside them.
fn without_notes(sql: &str) -> String {
    match sql.split_once('\n') {
        Some((first, rest)) => {
            let mut out = String::from(first);
            let mut lines = rest.split('\n').peekable();
            while lines
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("--"))
            {
                lines.next();
            }
            for line in lines {
                out.push('\n');
                out.push_str(line);
            }
            out
        }
        None => match sql.strip_suffix("*/").and_then(|s| s.rfind(" /*")) {
            Some(at) => sql[..at].to_owned(),
            None => sql.to_owned(),
        },
    }
}

/// `sql` (without notes) with `notes` in it, or `None` when they cannot be put in safely: a note
/// that would end the block comment, or a first line that leaves a quote open.
fn with_notes(sql: &str, notes: &[String]) -> Option<String> {
    match sql.split_once('\n') {
        Some((first, rest)) => {
            if first.matches('\'').count() % 2 != 0 || first.matches('"').count() % 2 != 0 {
                return None;
            }
            let mut out = format!("{first}\n");
            for note in notes {
                if note.is_empty() {
                    out.push_str(&format!("{INDENT}--\n"));
                } else {
                    out.push_str(&format!("{INDENT}-- {note}\n"));
                }
            }
            out.push_str(rest);
            Some(out)
        }
        None => {
            let text = notes.join(" ");
            if text.contains("*/") || text.contains("/*") {
                return None;
            }
            Some(format!("{sql} /* {text} */"))
        }
    }
}

/// What every table and index is, as SQLite reads it back: columns, index columns, foreign
/// keys. Equal before and after the rewrite, or the rewrite is undone.
fn shape(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    // One query a pragma over every object: each row carries its own position (`cid`, `seqno`,
    // `seq`, `id`), so the lines can be compared sorted.
    let mut out = vec![];
    for (kind, pragma) in [
        ("table", "table_xinfo"),
        ("table", "foreign_key_list"),
        ("table", "index_list"),
        ("index", "index_xinfo"),
    ] {
        let mut statement = conn.prepare(&format!(
            "select o.name, o.tbl_name, p.* from sqlite_schema o, pragma_{pragma}(o.name) p
             where o.type = '{kind}' and o.name not like 'sqlite\\_%' escape '\\'"
        ))?;
        let columns = statement.column_count();
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let (name, table): (String, String) = (row.get(0)?, row.get(1)?);
            let mut line = format!("{kind} {name} on {table} {pragma}:");
            for i in 2..columns {
                let value: rusqlite::types::Value = row.get(i)?;
                line.push_str(&format!(" {value:?}"));
            }
            out.push(line);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Writes the notes into the schema where they are missing or out of date. Does nothing (and
/// writes nothing) when every object already carries its notes.
pub(super) fn annotate_schema(conn: &mut Connection) -> Result<(), StoreError> {
    let notes = notes();
    let current: Vec<(String, String)> = conn
        .prepare("select name, sql from sqlite_schema where sql is not null")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let changes: Vec<(String, String, String)> = current
        .into_iter()
        .filter_map(|(name, sql)| {
            let wanted = with_notes(&without_notes(&sql), notes.get(&name)?)?;
            (wanted != sql).then_some((name, sql, wanted))
        })
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    // The schema as it will read: every object's final text, parsed by a fresh in-memory
    // database, must have the shape the file has now. Only then is anything written.
    let rebuilt = Connection::open_in_memory()?;
    let mut texts: Vec<(String, String, String)> = conn
        .prepare(
            "select type, name, sql from sqlite_schema
             where sql is not null and name not like 'sqlite\\_%' escape '\\'
             order by type = 'table' desc, rowid",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (_, name, sql) in &mut texts {
        if let Some((_, _, new)) = changes.iter().find(|(n, _, _)| n == name) {
            *sql = new.clone();
        }
        rebuilt.execute_batch(sql)?;
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if shape(&tx)? != shape(&rebuilt)? {
        tracing::warn!("the schema notes would change what the schema means; not written");
        return Ok(());
    }
    let version: i64 = tx.pragma_query_value(None, "schema_version", |r| r.get(0))?;
    tx.pragma_update(None, "writable_schema", "ON")?;
    let written = (|| -> rusqlite::Result<()> {
        let mut update =
            tx.prepare("update sqlite_schema set sql = ?3 where name = ?1 and sql = ?2")?;
        for (name, old, new) in &changes {
            update.execute([name, old, new])?;
        }
        // Other connections see the new version and read the schema again.
        tx.pragma_update(None, "schema_version", version + 1)
    })();
    tx.pragma_update(None, "writable_schema", "RESET")?;
    written?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_created_object_has_notes_and_later_versions_add_theirs() {
        let notes = notes();
        let aliases = &notes["procedures"];
        assert!(
            aliases.iter().any(|l| l == "Schema version 3:"),
            "{aliases:?}"
        );
        assert!(
            aliases
                .iter()
                .any(|l| l.starts_with("A procedure's other names"))
        );
        let prefixes = &notes["procedure_completion_prefixes"];
        assert!(
            prefixes.iter().any(|l| l == "Schema version 9:"),
            "{prefixes:?}"
        );
        // The file header (followed by a blank line) describes no object.
        assert!(
            notes
                .values()
                .flatten()
                .all(|l| !l.starts_with("rea session database"))
        );
    }

    /// The shape sees what a schema means and nothing of its comments: a column's type, an
    /// index's columns or a foreign key differ; notes do not.
    #[test]
    fn the_shape_differs_in_meaning_not_in_notes() {
        let shape_of = |sql: &str| {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch(sql).unwrap();
            shape(&conn).unwrap()
        };
        let base = "CREATE TABLE p (id integer primary key);
                    CREATE TABLE t (a int, b text references p (id));
                    CREATE INDEX i on t (a, b);";
        let noted = "CREATE TABLE p (id integer primary key);
                     CREATE TABLE t (\n -- why\n a int, b text references p (id));
                     CREATE INDEX i on t (a, b) /* why */;";
        assert_eq!(shape_of(base), shape_of(noted));
        assert!(shape_of(base).len() > 5, "{:?}", shape_of(base));
        for changed in [
            base.replace("a int", "a text"),
            base.replace("(a, b)", "(b, a)"),
            base.replace(" references p (id)", ""),
            base.replace("CREATE INDEX", "CREATE UNIQUE INDEX"),
        ] {
            assert_ne!(shape_of(base), shape_of(&changed), "{changed}");
        }
    }

    #[test]
    fn notes_round_trip_and_stay_outside_quotes_and_the_final_semicolon() {
        let table = "CREATE TABLE t (\n    a text\n) strict";
        let noted = with_notes(table, &["why".into(), String::new(), "more".into()]).unwrap();
        assert_eq!(
            noted,
            "CREATE TABLE t (\n    -- why\n    --\n    -- more\n    a text\n) strict"
        );
        assert_eq!(without_notes(&noted), table);
        let index = "CREATE INDEX i on t (a)";
        let noted = with_notes(index, &["one".into(), "two".into()]).unwrap();
        assert_eq!(noted, "CREATE INDEX i on t (a) /* one two */");
        assert_eq!(without_notes(&noted), index);
        assert_eq!(with_notes(index, &["a */ b".into()]), None);
        assert_eq!(with_notes("CREATE TABLE 'x\ny' (a)", &["n".into()]), None);
    }
}
