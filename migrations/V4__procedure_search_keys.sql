-- rea session database, schema version 4: procedures are found by every name they have.

-- The match keys (completion's case-folded, normalized form) of a procedure's other names: its
-- raw (mangled, underscored or versioned) name and each alias, one per line, null when it has
-- none. `search_procedures` matches the query against `name_key` and these lines, so a search
-- for `__libc_malloc` or `_ZN5vault5Store` finds the procedure whose primary name differs.
-- Written with the inventory, in the transaction that writes `procedures`.
alter table procedures add column other_keys text;
