-- rea session database, schema version 2: exact totals for short Evidence id prefixes.

-- How many Evidence ids start with each prefix of one to four characters. Completion needs the
-- exact number of matches; for a short typed prefix such as `e` or `ev_a` that is most of the
-- ledger, and counting index entries would take time in proportion to it. With this table the
-- total is one lookup. Rows are only ever added to `evidence`, so counts only grow.
create table evidence_id_prefixes (
    prefix text primary key,
    rows integer not null check (rows > 0)
) strict, without rowid;

-- Kept in the transaction that inserts the Evidence row, so a count can never be stale.
create trigger evidence_id_prefixes_count after insert on evidence
begin
    insert into evidence_id_prefixes (prefix, rows)
    values (substr(new.id, 1, 1), 1), (substr(new.id, 1, 2), 1), (substr(new.id, 1, 3), 1),
           (substr(new.id, 1, 4), 1)
    on conflict (prefix) do update set rows = rows + 1;
end;

-- Ledgers written by schema version 1 get their counts here.
insert into evidence_id_prefixes (prefix, rows)
select prefix, count(*) from (
    select substr(id, 1, 1) as prefix from evidence
    union all select substr(id, 1, 2) from evidence
    union all select substr(id, 1, 3) from evidence
    union all select substr(id, 1, 4) from evidence
)
group by prefix;
