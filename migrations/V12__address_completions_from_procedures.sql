-- rea session database, schema version 12: procedure addresses are completed from `procedures`.

-- Every procedure's address was also written here as text, as its own key and value: half the
-- rows and a third of the time `open_binary` spent storing a stripped 10 MB ELF, repeating what
-- `procedures` holds. The addresses of a scope are now read from `procedures` (those of the
-- scope's document, or of every document of the target for `document_id` 0), and this table
-- keeps the names alone. A name whose text is the address of a procedure of the same scope is
-- that address's value and is not kept either. The prefix counts (V6, V9) still count the
-- addresses with the names. Rows written before are dropped here.
delete from procedure_completions
where (target_id, document_id, key, value) in (
    select d.target_id, d.id, printf('0x%x', p.address), printf('0x%x', p.address)
    from procedures p
    join documents d on d.id = p.document_id
    union all
    select d.target_id, 0, printf('0x%x', p.address), printf('0x%x', p.address)
    from procedures p
    join documents d on d.id = p.document_id
    where d.target_id in (select target_id from documents group by target_id having count(*) > 1));
