-- rea session database, schema version 8: analyst annotations, kept as residual unknowns are
-- (one row per annotation holding its head, every revision kept, cited Evidence by revision).
-- Each revision is also an Evidence record (operation `annotate`, authority analyst-inference,
-- confidence inferred) whose result repeats the revision's columns, so an edited row is found by
-- comparing it with the record its `evidence_id` names.

-- One row per annotation, holding its head (latest) revision. An annotation is about one place of
-- one document of a target, named by the target's sha256 and the document's name so it is found
-- again after resume and in any session that opens the same file: a procedure (`scope`
-- procedure, `address` its start), an instruction or data address (`scope` address or data), or
-- the document itself (`scope` document, `address` null). `key` is the match key of `text` for
-- names (Procedure completion offers analyst names from it) and null otherwise. A withdrawn head
-- keeps its last text in its revisions only: `text` is null here.
create table annotations (
    id text primary key,
    target_sha256 text not null,
    document text not null,
    scope text not null check (scope in ('procedure', 'address', 'data', 'document')),
    address integer,
    kind text not null check (kind in ('name', 'comment', 'prototype', 'type')),
    head_revision integer not null,
    withdrawn integer not null check (withdrawn in (0, 1)),
    text text,
    key text,
    evidence_id text not null references evidence (id),
    updated_at text not null
) strict, without rowid;

-- Views read the heads of one target's document (and of every document) in one indexed query.
create index annotations_by_place on annotations (target_sha256, document, address);

-- Procedure completion offers analyst names of live heads by match-key prefix.
create index annotations_names on annotations (target_sha256, key) where kind = 'name' and withdrawn = 0;

-- Every revision of every annotation, kept for the audit trail: revisions are only appended.
-- `evidence_id` is the revision's Evidence record.
create table annotation_revisions (
    annotation_id text not null references annotations (id),
    revision integer not null,
    withdrawn integer not null check (withdrawn in (0, 1)),
    text text not null,
    rationale text not null,
    evidence_id text not null references evidence (id),
    recorded_at text not null,
    primary key (annotation_id, revision)
) strict, without rowid;

-- Evidence cited by a revision; the foreign key keeps "each cited id is in the ledger" true.
create table annotation_evidence (
    annotation_id text not null,
    revision integer not null,
    evidence_id text not null references evidence (id),
    primary key (annotation_id, revision, evidence_id),
    foreign key (annotation_id, revision) references annotation_revisions (annotation_id, revision)
) strict, without rowid;
