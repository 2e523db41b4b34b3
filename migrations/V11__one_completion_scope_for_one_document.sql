-- rea session database, schema version 11: a target of one document keeps one procedure
-- completion scope.

-- The target-wide scope (`document_id` 0) of a target with a single document held the same
-- values as that document's own scope: every row was written twice, a quarter of `open_binary`'s
-- time on a stripped 10 MB ELF. Such a target now keeps only its document's rows, and completion
-- over the whole target reads them. Rows written before are dropped here.
delete from procedure_completions
where document_id = 0
  and target_id in (select target_id from documents group by target_id having count(*) = 1);

-- The prefix counts of a target of one document are those of its document's scope alone (see
-- `procedure_completions`, schema version 11).
delete from procedure_completion_prefixes
where document_id = 0
  and target_id in (select target_id from documents group by target_id having count(*) = 1);
