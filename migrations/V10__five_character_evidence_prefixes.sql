-- rea session database, schema version 10: Evidence ids counted by five-character prefix.

-- `evidence_id_prefixes` (V2) counted ids by their first four characters (`ev_0` … `ev_f`, 16
-- rows), so the exact total of a five-character prefix such as `ev_00` was found by counting its
-- index entries: 39k of them in a ledger of ten million rows, 2.4 ms, over the 1 ms a completion
-- may take. Counted by five characters (`ev_00` … `ev_ff`, 256 rows), a prefix of up to five
-- characters is a sum over at most 256 rows, and a longer one matches at most one id in 4096
-- (2.4k index entries at ten million rows). Ledgers written before are counted again here, from
-- the id index, once.
delete from evidence_id_prefixes;
insert into evidence_id_prefixes (prefix, rows)
select substr(id, 1, 5), count(*) from evidence group by 1;
