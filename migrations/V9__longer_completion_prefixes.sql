-- rea session database, schema version 9: procedure completion prefixes longer than two
-- characters are counted where they match many values.

-- `procedure_completion_prefixes` (V6) now also holds, for each scope, every longer prefix at
-- which the scope's sorted keys part (two keys differ there, or one ends there while others go
-- on) and that matches more than 256 values; any other longer prefix matches either what the
-- first such row at or after it matches, or at most 256 values, which completion scans. Every
-- Mach-O address starts `0x1000`, so typing one passed through prefixes that matched the whole
-- inventory and were counted by reading all of it. The rows written before are removed here;
-- opening the database counts every target again (a target with completion values and no
-- prefix rows is counted when the store opens).
delete from procedure_completion_prefixes;
