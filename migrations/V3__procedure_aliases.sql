-- rea session database, schema version 3: every name of a procedure, not only the primary one.

-- A procedure's other names: the aliases of its address (`__libc_malloc` beside `malloc`,
-- `_IO_printf` beside `printf`), the local name of an IFUNC's resolver, other versions of a
-- versioned symbol. Displayed like `name` (demangled, without Mach-O's leading underscore),
-- sorted, one per line; null when the procedure has no other name. `name` stays the primary
-- name. Written with the inventory, in the transaction that writes `procedures`.
alter table procedures add column aliases text;
