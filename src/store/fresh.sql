-- Through migration V12: generated from the migrations by `fresh.rs`; do not edit.
CREATE TABLE refinery_schema_history(
             version int4 PRIMARY KEY,
             name VARCHAR(255),
             applied_on VARCHAR(255),
             checksum VARCHAR(255));
CREATE TABLE meta (
    -- Facts about the session itself (id, creation time, rea version, key algorithm version), so a
    -- database found on disk explains itself and keys written by another algorithm can be recomputed.
    name text primary key,
    value text not null
) strict, without rowid;
CREATE TABLE evidence (
    -- The ledger: one row per distinct observation. `id` is ev_ + sha256 of `record` (RFC 8785
    -- canonical JSON); `seq` orders rows as first stored; `created_at` is row metadata outside the hash.
    -- The other columns copy fields of the record so audits can filter without parsing JSON.
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
CREATE TABLE evidence_links (
    -- Links between Evidence: a record that rests on others names them; both ends must be in the ledger.
    from_id text not null references evidence (id),
    to_id text not null references evidence (id),
    primary key (from_id, to_id)
) strict, without rowid;
CREATE TABLE targets (
    -- Targets the session opened. Exactly one is active at a time; switching keeps the others' rows.
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
CREATE TABLE documents (
    -- Documents of each target: universal slices, images of a bundle, or the file itself.
    -- `key` is the match key of `name`, for Document completion.
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
CREATE TABLE procedures (
    -- The complete procedure inventory of each document, written once when its target is opened.
    -- `address` is the virtual address; `name_key` is the match key of `name`, for search_procedures.
    --
    -- Schema version 3:
    -- A procedure's other names: the aliases of its address (`__libc_malloc` beside `malloc`,
    -- `_IO_printf` beside `printf`), the local name of an IFUNC's resolver, other versions of a
    -- versioned symbol. Displayed like `name` (demangled, without Mach-O's leading underscore),
    -- sorted, one per line; null when the procedure has no other name. `name` stays the primary
    -- name. Written with the inventory, in the transaction that writes `procedures`.
    --
    -- Schema version 4:
    -- The match keys (completion's case-folded, normalized form) of a procedure's other names: its
    -- raw (mangled, underscored or versioned) name and each alias, one per line, null when it has
    -- none. `search_procedures` matches the query against `name_key` and these lines, so a search
    -- for `__libc_malloc` or `_ZN5vault5Store` finds the procedure whose primary name differs.
    -- Written with the inventory, in the transaction that writes `procedures`.
    document_id integer not null references documents (id) on delete cascade,
    address integer not null,
    name text,
    raw_name text,
    name_key text,
    size integer, aliases text, other_keys text,
    primary key (document_id, address)
) strict, without rowid;
CREATE TABLE procedure_completions (
    -- Procedure completion: the distinct values offered for each inventory scope — every canonical
    -- address, and every name that identifies exactly one address in that scope. `document_id` 0 is the
    -- scope of all documents of the target. Written in the transaction that writes `procedures`.
    target_id integer not null references targets (id) on delete cascade,
    document_id integer not null,
    key text not null,
    value text not null,
    primary key (target_id, document_id, key, value)
) strict, without rowid;
CREATE TABLE artifact_manifests (
    -- Artifact manifests (agm_…) from schema-valid inventories, each tied to the Evidence page that
    -- carried it. Only rows here feed Artifact manifest completion.
    id text primary key,
    evidence_id text not null references evidence (id),
    target_sha256 text not null,
    pages integer not null,
    complete integer not null check (complete in (0, 1))
) strict, without rowid;
CREATE TABLE artifact_occurrences (
    -- Occurrences (occ_…) of schema-valid inventory pages. Feed Artifact occurrence completion.
    id text primary key,
    manifest_id text not null references artifact_manifests (id),
    evidence_id text not null references evidence (id),
    part text not null,
    kind text not null,
    value text not null
) strict, without rowid;
CREATE TABLE process_captures (
    -- Evidence whose operation is a process capture and whose result validated as one.
    -- Only rows here feed Process capture completion.
    evidence_id text primary key references evidence (id)
) strict, without rowid;
CREATE TABLE unknowns (
    -- Residual unknowns: one row per unknown, holding its head (latest) revision. Updates name the
    -- revision they expect, so concurrent edits cannot overwrite each other.
    id text primary key,
    head_revision integer not null,
    status text not null check (status in ('open', 'investigating', 'blocked', 'contradicted', 'resolved')),
    question text not null,
    updated_at text not null
) strict, without rowid;
CREATE TABLE unknown_revisions (
    -- Every revision of every unknown, kept for the audit trail.
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
CREATE TABLE unknown_evidence (
    -- Evidence cited by a revision of an unknown; the foreign key is what makes "verified needs
    -- Evidence retained in this ledger" hold.
    unknown_id text not null,
    revision integer not null,
    evidence_id text not null references evidence (id),
    role text not null check (role in ('supporting', 'contradicting')),
    primary key (unknown_id, revision, evidence_id, role),
    foreign key (unknown_id, revision) references unknown_revisions (unknown_id, revision)
) strict, without rowid;
CREATE TABLE evidence_id_prefixes (
    -- How many Evidence ids start with each four-character prefix (`ev_0` … `ev_f`). Completion
    -- needs the exact number of matches; for a short typed prefix such as `e` or `ev_a` that is most
    -- of the ledger, and counting index entries would take time in proportion to it. The total for
    -- any typed prefix of up to four characters is the sum of the few rows whose prefix starts with
    -- it. Rows are only ever added to `evidence`, so counts only grow. rea's insert of an Evidence
    -- row updates its count in the same transaction, so a count can never be stale. (Not a trigger:
    -- a trigger makes every insert open a statement journal, which halved ingest.)
    prefix text primary key,
    rows integer not null check (rows > 0)
) strict, without rowid;
CREATE TABLE procedure_completion_prefixes (
    -- For each procedure completion scope (a target's document, or `document_id` 0 for the whole
    -- target) and each prefix of zero to two characters of a completion key: how many values have a
    -- key with that prefix, and the first of them in code-point order (a JSON array of at most 100
    -- strings, the most one completion answer holds). Typing the first characters of a procedure
    -- matches most of an inventory (every address starts with `0x`); counting those matches took
    -- time in proportion to the inventory, this table answers in one lookup. Written from
    -- `procedure_completions` in the transaction that writes it, and rebuilt with it when the key
    -- algorithm changes; a target's completion values never change after that transaction.
    --
    -- Schema version 9:
    -- `procedure_completion_prefixes` (V6) now also holds, for each scope, every longer prefix at
    -- which the scope's sorted keys part (two keys differ there, or one ends there while others go
    -- on) and that matches more than 256 values; any other longer prefix matches either what the
    -- first such row at or after it matches, or at most 256 values, which completion scans. Every
    -- Mach-O address starts `0x1000`, so typing one passed through prefixes that matched the whole
    -- inventory and were counted by reading all of it. The rows written before are removed here;
    -- opening the database counts every target again (a target with completion values and no
    -- prefix rows is counted when the store opens).
    target_id integer not null references targets (id) on delete cascade,
    document_id integer not null,
    prefix text not null,
    rows integer not null check (rows > 0),
    head text not null,
    primary key (target_id, document_id, prefix)
) strict, without rowid;
CREATE TABLE ledger_chain (
    -- One row per ledger row as it was committed: an Evidence row, a revision of an unknown (and,
    -- once they land, a revision of an annotation). `digest` is the sha256 of the row's content: for
    -- Evidence the digest its id carries (ev_ + hex of it), for a revision the digest of its fields in
    -- canonical JSON. `hash` is sha256(the previous row's hash || kind || digest), 32 zero bytes before
    -- the first row, so changing, removing or reordering any row changes every later hash. `seq`
    -- counts rows without gaps. rea appends a row in the transaction of the row it covers, and after
    -- each commit writes the last `seq` and `hash` to `session.chain` beside this file (outside the
    -- WAL), so a tail the WAL lost, or a rewritten chain, shows against it. Read `hash` and `digest`
    -- with `hex()`.
    seq integer primary key,
    kind text not null check (kind in ('evidence', 'unknown_revision', 'annotation_revision')),
    evidence_seq integer check ((kind = 'evidence') = (evidence_seq is not null)),
    item text check ((kind = 'evidence') = (item is null)),
    revision integer check ((kind = 'evidence') = (revision is null)),
    digest blob not null check (length(digest) = 32),
    hash blob not null check (length(hash) = 32)
) strict;
CREATE TABLE ledger_unchained_revisions (
    -- Revisions that were in the ledger before it had a chain (written by schema version 6 or
    -- older): the chain's unchained prefix, which verify reports as such rather than as damage.
    -- Evidence rows of that prefix are those up to `meta.chain_unchained_evidence`.
    kind text not null,
    item text not null,
    revision integer not null,
    primary key (kind, item, revision)
) strict, without rowid;
CREATE TABLE annotations (
    -- One row per annotation, holding its head (latest) revision. An annotation is about one place of
    -- one document of a target, named by the target's sha256 and the document's name so it is found
    -- again after resume and in any session that opens the same file: a procedure (`scope`
    -- procedure, `address` its start), an instruction or data address (`scope` address or data), or
    -- the document itself (`scope` document, `address` null). `key` is the match key of `text` for
    -- names (Procedure completion offers analyst names from it) and null otherwise. A withdrawn head
    -- keeps its last text in its revisions only: `text` is null here.
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
CREATE TABLE annotation_revisions (
    -- Every revision of every annotation, kept for the audit trail: revisions are only appended.
    -- `evidence_id` is the revision's Evidence record.
    annotation_id text not null references annotations (id),
    revision integer not null,
    withdrawn integer not null check (withdrawn in (0, 1)),
    text text not null,
    rationale text not null,
    evidence_id text not null references evidence (id),
    recorded_at text not null,
    primary key (annotation_id, revision)
) strict, without rowid;
CREATE TABLE annotation_evidence (
    -- Evidence cited by a revision; the foreign key keeps "each cited id is in the ledger" true.
    annotation_id text not null,
    revision integer not null,
    evidence_id text not null references evidence (id),
    primary key (annotation_id, revision, evidence_id),
    foreign key (annotation_id, revision) references annotation_revisions (annotation_id, revision)
) strict, without rowid;
CREATE INDEX evidence_by_operation on evidence (operation, seq) /* Audits list a session's Evidence by operation in recording order (list_evidence, rea evidence). */;
CREATE INDEX evidence_links_by_target on evidence_links (to_id, from_id) /* "What rests on this record?" is answered from the target side. */;
CREATE UNIQUE INDEX targets_one_active on targets (active) where active = 1 /* At most one active target: the partial unique index makes a second active row an error. */;
CREATE INDEX documents_by_key on documents (target_id, key, name) /* Document completion: prefix range over the active target's document keys. */;
CREATE INDEX artifact_occurrences_by_manifest on artifact_occurrences (manifest_id, kind) /* Occurrences of one manifest, by kind, for comparisons and audits. */;
CREATE INDEX unknowns_unresolved on unknowns (id) where status <> 'resolved' /* Residual unknown completion offers non-resolved heads only: a partial index holds exactly those. */;
CREATE INDEX annotations_by_place on annotations (target_sha256, document, address) /* Views read the heads of one target's document (and of every document) in one indexed query. */;
CREATE INDEX annotations_names on annotations (target_sha256, key) where kind = 'name' and withdrawn = 0 /* Procedure completion offers analyst names of live heads by match-key prefix. */;
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (1, 'init', '', '15297547806897997475');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (2, 'evidence_id_prefix_counts', '', '15816869908623528628');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (3, 'procedure_aliases', '', '5656560964634760480');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (4, 'procedure_search_keys', '', '4155970573143249971');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (6, 'procedure_completion_prefixes', '', '18081566418379856803');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (7, 'ledger_chain', '', '11674461067565982189');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (8, 'annotations', '', '6159609064462583660');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (9, 'longer_completion_prefixes', '', '5523146370590904077');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (10, 'five_character_evidence_prefixes', '', '5597687455427049604');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (11, 'one_completion_scope_for_one_document', '', '18132847303707628935');
insert into "refinery_schema_history" (version, name, applied_on, checksum) values (12, 'address_completions_from_procedures', '', '14480031534824709300');
insert into "meta" (name, value) values ('chain_unchained_evidence', '0');
insert into "meta" (name, value) values ('key_algorithm', 'nfkd-fold-di-nfkd/icu4x-2.4');
