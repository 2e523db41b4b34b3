-- rea session database, schema version 1.
-- One database per binary session. Every table is STRICT; ids are canonical lowercase text.
-- Completion reads are range scans `key >= prefix and key < successor(prefix)` on the indexes
-- below; keys come from rea's match_key (NFKD, full case folding, NFKD, ignorables removed).

-- Facts about the session itself (id, creation time, rea version, key algorithm version), so a
-- database found on disk explains itself and keys written by another algorithm can be recomputed.
create table meta (
    name text primary key,
    value text not null
) strict, without rowid;

-- The ledger: one row per distinct observation. `id` is ev_ + sha256 of `record` (RFC 8785
-- canonical JSON); `seq` orders rows as first stored; `created_at` is row metadata outside the hash.
-- The other columns copy fields of the record so audits can filter without parsing JSON.
create table evidence (
    seq integer primary key,
    id text not null unique,
    operation text not null,
    subject_sha256 text,
    provider_id text not null,
    provider_version text not null,
    confidence text not null check (confidence in ('observed', 'derived', 'inferred')),
    authority text not null,
    created_at text not null,
    record text not null
) strict;

-- Audits list a session's Evidence by operation in recording order (list_evidence, rea evidence).
create index evidence_by_operation on evidence (operation, seq);

-- Links between Evidence: a record that rests on others names them; both ends must be in the ledger.
create table evidence_links (
    from_id text not null references evidence (id),
    to_id text not null references evidence (id),
    primary key (from_id, to_id)
) strict, without rowid;

-- "What rests on this record?" is answered from the target side.
create index evidence_links_by_target on evidence_links (to_id, from_id);

-- Targets the session opened. Exactly one is active at a time; switching keeps the others' rows.
create table targets (
    id integer primary key,
    path text not null,
    name text not null,
    sha256 text not null,
    format text not null,
    architecture text not null,
    active integer not null default 0 check (active in (0, 1)),
    opened_at text not null,
    unique (path, sha256)
) strict;

-- At most one active target: the partial unique index makes a second active row an error.
create unique index targets_one_active on targets (active) where active = 1;

-- Documents of each target: universal slices, images of a bundle, or the file itself.
-- `key` is the match key of `name`, for Document completion.
create table documents (
    id integer primary key,
    target_id integer not null references targets (id) on delete cascade,
    name text not null,
    key text not null,
    format text not null,
    architecture text not null,
    role text not null,
    file text not null,
    file_offset integer not null,
    file_size integer not null,
    unique (target_id, name)
) strict;

-- Document completion: prefix range over the active target's document keys.
create index documents_by_key on documents (target_id, key, name);

-- The complete procedure inventory of each document, written once when its target is opened.
-- `address` is the virtual address; `name_key` is the match key of `name`, for search_procedures.
create table procedures (
    document_id integer not null references documents (id) on delete cascade,
    address integer not null,
    name text,
    raw_name text,
    name_key text,
    size integer,
    primary key (document_id, address)
) strict, without rowid;

-- Procedure completion: the distinct values offered for each inventory scope — every canonical
-- address, and every name that identifies exactly one address in that scope. `document_id` 0 is the
-- scope of all documents of the target. Written in the transaction that writes `procedures`.
create table procedure_completions (
    target_id integer not null references targets (id) on delete cascade,
    document_id integer not null,
    key text not null,
    value text not null,
    primary key (target_id, document_id, key, value)
) strict, without rowid;

-- Artifact manifests (agm_…) from schema-valid inventories, each tied to the Evidence page that
-- carried it. Only rows here feed Artifact manifest completion.
create table artifact_manifests (
    id text primary key,
    evidence_id text not null references evidence (id),
    target_sha256 text not null,
    pages integer not null,
    complete integer not null check (complete in (0, 1))
) strict, without rowid;

-- Occurrences (occ_…) of schema-valid inventory pages. Feed Artifact occurrence completion.
create table artifact_occurrences (
    id text primary key,
    manifest_id text not null references artifact_manifests (id),
    evidence_id text not null references evidence (id),
    part text not null,
    kind text not null,
    value text not null
) strict, without rowid;

-- Occurrences of one manifest, by kind, for comparisons and audits.
create index artifact_occurrences_by_manifest on artifact_occurrences (manifest_id, kind);

-- Evidence whose operation is a process capture and whose result validated as one.
-- Only rows here feed Process capture completion.
create table process_captures (
    evidence_id text primary key references evidence (id)
) strict, without rowid;

-- Residual unknowns: one row per unknown, holding its head (latest) revision. Updates name the
-- revision they expect, so concurrent edits cannot overwrite each other.
create table unknowns (
    id text primary key,
    head_revision integer not null,
    status text not null check (status in ('open', 'investigating', 'blocked', 'contradicted', 'resolved')),
    question text not null,
    updated_at text not null
) strict, without rowid;

-- Residual unknown completion offers non-resolved heads only: a partial index holds exactly those.
create index unknowns_unresolved on unknowns (id) where status <> 'resolved';

-- Every revision of every unknown, kept for the audit trail.
create table unknown_revisions (
    unknown_id text not null references unknowns (id),
    revision integer not null,
    status text not null,
    question text not null,
    resolution text check (resolution in ('verified', 'withdrawn', 'out-of-scope')),
    rationale text,
    note text,
    recorded_at text not null,
    primary key (unknown_id, revision)
) strict, without rowid;

-- Evidence cited by a revision of an unknown; the foreign key is what makes "verified needs
-- Evidence retained in this ledger" hold.
create table unknown_evidence (
    unknown_id text not null,
    revision integer not null,
    evidence_id text not null references evidence (id),
    role text not null check (role in ('supporting', 'contradicting')),
    primary key (unknown_id, revision, evidence_id, role),
    foreign key (unknown_id, revision) references unknown_revisions (unknown_id, revision)
) strict, without rowid;
