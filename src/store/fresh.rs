//! A new session's database written in one script: the schema every migration makes, with its
//! notes and the rows the migrations insert, kept in `fresh.sql` beside this file.
//!
//! Running the migrations one by one, then copying their notes into the schema, costs a new
//! session about 5 ms of one core (refinery's parsing of the migration names, ten scripts, a
//! schema rebuilt in memory to check the notes), taken while the first file of the session is
//! being listed on the same cores. As with Rails's `db/schema.rb`, a new database is loaded from
//! the result instead, and marked as having had every migration, as refinery marks it (same
//! versions, names and checksums; the time of this load). A database that already has a schema
//! still goes through the migrations, so only new ones take this path.
//!
//! The script is generated, and a test regenerates it from the migrations and fails on any
//! difference (`REA_WRITE_FRESH_SCHEMA=1 cargo test --lib fresh_schema` writes it again).
//! `build.rs` passes the highest migration version in `migrations/`; where the script was made
//! before a newer migration, new databases take the migrations instead, so a stale script costs
//! time, never a wrong schema.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// The script (see the module's documentation).
const FRESH_SQL: &str = include_str!("fresh.sql");

/// The first line of [`FRESH_SQL`] names the highest migration version it contains.
const THROUGH: &str = "-- Through migration V";

/// Whether [`FRESH_SQL`] holds every migration in `migrations/`.
fn current() -> bool {
    let through = FRESH_SQL
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(THROUGH))
        .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next());
    through == Some(env!("REA_LATEST_MIGRATION"))
}

/// Writes the whole schema into `conn`, a database with none, in one transaction, when
/// [`FRESH_SQL`] is current; whether it did.
pub(super) fn write(conn: &mut Connection, now: &str) -> Result<bool, StoreError> {
    if !current() {
        return Ok(false);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(FRESH_SQL)?;
    tx.execute("update refinery_schema_history set applied_on = ?1", [now])?;
    tx.commit()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use rusqlite::types::ValueRef;

    use super::*;
    use crate::store::embedded;

    /// The script that loads what `conn` holds: its objects (tables first, then indexes, views
    /// and triggers, each in the order they were made), then every table's rows, refinery's
    /// with their time left empty.
    fn render(conn: &Connection) -> String {
        let latest = embedded::migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| m.version())
            .max()
            .unwrap();
        let mut out = format!(
            "{THROUGH}{latest}: generated from the migrations by `fresh.rs`; do not edit.\n"
        );
        let objects: Vec<(String, String, String)> = conn
            .prepare(
                "select type, name, sql from sqlite_schema
                 where sql is not null and name not like 'sqlite\\_%' escape '\\'
                 order by case type when 'table' then 0 when 'index' then 1
                                    when 'view' then 2 else 3 end, rowid",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (_, _, sql) in &objects {
            out.push_str(sql);
            out.push_str(";\n");
        }
        let tables = objects.iter().filter(|(kind, _, _)| kind == "table");
        for (_, table, _) in tables {
            let history = table == "refinery_schema_history";
            let columns: Vec<String> = conn
                .prepare(&format!("select * from \"{table}\""))
                .unwrap()
                .column_names()
                .map(str::to_owned)
                .collect();
            // Some tables have no rowid: every column orders the rows.
            let order: Vec<String> = (1..=columns.len()).map(|n| n.to_string()).collect();
            let mut statement = conn
                .prepare(&format!(
                    "select * from \"{table}\" order by {}",
                    order.join(", ")
                ))
                .unwrap();
            let mut rows = statement.query([]).unwrap();
            while let Some(row) = rows.next().unwrap() {
                let values: Vec<String> = (0..columns.len())
                    .map(|n| match row.get_ref(n).unwrap() {
                        _ if history && columns[n] == "applied_on" => "''".to_owned(),
                        ValueRef::Null => "null".to_owned(),
                        ValueRef::Integer(v) => v.to_string(),
                        ValueRef::Real(v) => format!("{v:?}"),
                        ValueRef::Text(t) => {
                            format!("'{}'", String::from_utf8_lossy(t).replace('\'', "''"))
                        }
                        ValueRef::Blob(b) => {
                            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                            format!("x'{hex}'")
                        }
                    })
                    .collect();
                out.push_str(&format!(
                    "insert into \"{table}\" ({}) values ({});\n",
                    columns.join(", "),
                    values.join(", ")
                ));
            }
        }
        out
    }

    /// A database made the long way, as `Store::open` makes one with no script.
    fn migrated(path: &std::path::Path) -> Connection {
        let mut conn = Connection::open(path).unwrap();
        super::super::configure(&conn, super::super::Role::Writer).unwrap();
        super::super::migrate(&mut conn, path).unwrap();
        conn
    }

    #[test]
    fn the_fresh_schema_is_what_the_migrations_make_regression_30() {
        let dir = tempfile::tempdir().unwrap();
        let long = migrated(&dir.path().join("long.db"));
        let expected = render(&long);
        if std::env::var_os("REA_WRITE_FRESH_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store/fresh.sql");
            std::fs::write(path, &expected).unwrap();
            return;
        }
        assert!(
            FRESH_SQL == expected,
            "src/store/fresh.sql is not what the migrations make: \
             REA_WRITE_FRESH_SCHEMA=1 cargo test --lib fresh_schema"
        );
        assert!(
            current(),
            "build.rs and fresh.sql disagree on the latest migration"
        );

        // A new store takes the script, and ends as the long way does.
        let store = super::super::Store::open(&dir.path().join("short.db")).unwrap();
        store.close();
        let mut short = Connection::open(dir.path().join("short.db")).unwrap();
        assert_eq!(render(&short), expected);
        for pragma in ["application_id", "user_version", "journal_mode"] {
            let value = |c: &Connection| -> String {
                c.pragma_query_value(None, pragma, |r| r.get::<_, rusqlite::types::Value>(0))
                    .map(|v| format!("{v:?}"))
                    .unwrap()
            };
            assert_eq!(value(&short), value(&long), "{pragma}");
        }
        // refinery reads it as migrated, with nothing left to apply, and a time it parses.
        let report = embedded::migrations::runner().run(&mut short).unwrap();
        assert!(report.applied_migrations().is_empty());
        let applied = embedded::migrations::runner()
            .get_applied_migrations(&mut short)
            .unwrap();
        assert_eq!(
            applied.len(),
            embedded::migrations::runner().get_migrations().len()
        );
        assert!(applied.iter().all(|m| m.applied_on().is_some()));
    }
}
