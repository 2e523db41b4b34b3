-- rea session database, schema version 7: a hash chain over every ledger row, in commit order.

-- One row per ledger row as it was committed: an Evidence row, a revision of an unknown (and,
-- once they land, a revision of an annotation). `digest` is the sha256 of the row's content: for
-- Evidence the digest its id carries (ev_ + hex of it), for a revision the digest of its fields in
-- canonical JSON. `hash` is sha256(the previous row's hash || kind || digest), 32 zero bytes before
-- the first row, so changing, removing or reordering any row changes every later hash. `seq`
-- counts rows without gaps. rea appends a row in the transaction of the row it covers, and after
-- each commit writes the last `seq` and `hash` to `session.chain` beside this file (outside the
-- WAL), so a tail the WAL lost, or a rewritten chain, shows against it. Read `hash` and `digest`
-- with `hex()`.
create table ledger_chain (
    seq integer primary key,
    kind text not null check (kind in ('evidence', 'unknown_revision', 'annotation_revision')),
    evidence_seq integer check ((kind = 'evidence') = (evidence_seq is not null)),
    item text check ((kind = 'evidence') = (item is null)),
    revision integer check ((kind = 'evidence') = (revision is null)),
    digest blob not null check (length(digest) = 32),
    hash blob not null check (length(hash) = 32)
) strict;

-- Revisions that were in the ledger before it had a chain (written by schema version 6 or
-- older): the chain's unchained prefix, which verify reports as such rather than as damage.
-- Evidence rows of that prefix are those up to `meta.chain_unchained_evidence`.
create table ledger_unchained_revisions (
    kind text not null,
    item text not null,
    revision integer not null,
    primary key (kind, item, revision)
) strict, without rowid;

insert into ledger_unchained_revisions (kind, item, revision)
select 'unknown_revision', unknown_id, revision from unknown_revisions;

insert into meta (name, value)
select 'chain_unchained_evidence', cast(coalesce(max(seq), 0) as text) from evidence;
