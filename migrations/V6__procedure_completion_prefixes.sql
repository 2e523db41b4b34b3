-- rea session database, schema version 6: exact totals and first values for short procedure
-- completion prefixes.

-- For each procedure completion scope (a target's document, or `document_id` 0 for the whole
-- target) and each prefix of zero to two characters of a completion key: how many values have a
-- key with that prefix, and the first of them in code-point order (a JSON array of at most 100
-- strings, the most one completion answer holds). Typing the first characters of a procedure
-- matches most of an inventory (every address starts with `0x`); counting those matches took
-- time in proportion to the inventory, this table answers in one lookup. Written from
-- `procedure_completions` in the transaction that writes it, and rebuilt with it when the key
-- algorithm changes; a target's completion values never change after that transaction.
create table procedure_completion_prefixes (
    target_id integer not null references targets (id) on delete cascade,
    document_id integer not null,
    prefix text not null,
    rows integer not null check (rows > 0),
    head text not null,
    primary key (target_id, document_id, prefix)
) strict, without rowid;
