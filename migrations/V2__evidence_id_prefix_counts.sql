-- rea session database, schema version 2: exact totals for short Evidence id prefixes.

-- How many Evidence ids start with each four-character prefix (`ev_0` … `ev_f`). Completion
-- needs the exact number of matches; for a short typed prefix such as `e` or `ev_a` that is most
-- of the ledger, and counting index entries would take time in proportion to it. The total for
-- any typed prefix of up to four characters is the sum of the few rows whose prefix starts with
-- it. Rows are only ever added to `evidence`, so counts only grow. rea's insert of an Evidence
-- row updates its count in the same transaction, so a count can never be stale. (Not a trigger:
-- a trigger makes every insert open a statement journal, which halved ingest.)
create table evidence_id_prefixes (
    prefix text primary key,
    rows integer not null check (rows > 0)
) strict, without rowid;

-- Ledgers written by schema version 1 get their counts here.
insert into evidence_id_prefixes (prefix, rows)
select substr(id, 1, 4), count(*) from evidence group by 1;
