//! Analyst annotations: what the analyst has learned about one place of a document, kept as
//! residual unknowns are (a head per annotation, every revision appended, the Evidence each
//! revision cites). Each revision is also an Evidence record; the store writes the record and the
//! revision's rows in one transaction, and [`check_annotation_rows`] holds the rows to the record.
//! The rules for what may be annotated are the investigation layer's.

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::chain::{AnnotationContent, ChainKind, append_revision};
use super::evidence::{PreparedEvidence, RecordOutcome, insert_prepared};
use super::{ReadOnlyStore, Store, StoreError, now_rfc3339};
use crate::completion::key::match_key;
use crate::evidence::EvidenceRecord;
use crate::ids::{Address, AnnotationId, EvidenceId};

/// What an annotation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationScope {
    /// A procedure, by its start address.
    Procedure,
    /// An instruction address.
    Address,
    /// A data location.
    Data,
    /// The document itself.
    Document,
}

impl AnnotationScope {
    /// Wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Procedure => "procedure",
            Self::Address => "address",
            Self::Data => "data",
            Self::Document => "document",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "procedure" => Self::Procedure,
            "address" => Self::Address,
            "data" => Self::Data,
            _ => Self::Document,
        }
    }
}

/// What an annotation says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    /// A name (procedure or data).
    Name,
    /// A comment (procedure or address).
    Comment,
    /// A procedure's C prototype.
    Prototype,
    /// A C type: of a data location, or a struct/enum/typedef of the document.
    Type,
}

impl AnnotationKind {
    /// Wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Comment => "comment",
            Self::Prototype => "prototype",
            Self::Type => "type",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "name" => Self::Name,
            "comment" => Self::Comment,
            "prototype" => Self::Prototype,
            _ => Self::Type,
        }
    }
}

/// A plain string-enum schema: the variants' documentation stays out of `tools/list`, whose
/// budget the field's own description already covers.
macro_rules! plain_enum_schema {
    ($name:ident, $($text:literal),+) => {
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$($text),+] })
            }
        }
    };
}

plain_enum_schema!(AnnotationScope, "procedure", "address", "data", "document");
plain_enum_schema!(AnnotationKind, "name", "comment", "prototype", "type");

/// The one place of a document an annotation is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnnotationPlace {
    /// The document.
    pub document: String,
    /// What kind of place it is.
    pub scope: AnnotationScope,
    /// Its address; absent for the document itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub address: Option<Address>,
}

/// One revision as stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AnnotationRevision {
    /// Revision number, from 1.
    pub revision: i64,
    /// The text at this revision (the last text given, when withdrawn).
    pub text: String,
    /// Whether this revision withdraws the annotation.
    pub withdrawn: bool,
    /// Why the analyst holds it.
    pub rationale: String,
    /// Evidence ids it cites.
    pub cites: Vec<EvidenceId>,
    /// The revision's own Evidence record.
    pub evidence_id: EvidenceId,
    /// When recorded.
    pub recorded_at: String,
}

/// An annotation at its head revision.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AnnotationHead {
    /// Stable id (ann_…).
    pub id: AnnotationId,
    /// What it is about.
    #[serde(flatten)]
    pub place: AnnotationPlace,
    /// What it says.
    pub kind: AnnotationKind,
    /// The head revision.
    pub head: AnnotationRevision,
    /// Earlier revisions, oldest first, when asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<AnnotationRevision>,
}

/// A revision to record, already checked against the rules. `record` is its Evidence record, whose
/// result repeats these fields (see [`AnnotationRecord`]).
#[derive(Debug, Clone)]
pub struct NewAnnotation {
    /// The annotation (a new id for revision 1).
    pub id: AnnotationId,
    /// The revision this one is made on, or `None` for a new annotation.
    pub supersedes: Option<i64>,
    /// Digest of the target the place belongs to.
    pub target_sha256: String,
    /// The place.
    pub place: AnnotationPlace,
    /// The kind.
    pub kind: AnnotationKind,
    /// The text.
    pub text: String,
    /// Whether it withdraws the annotation.
    pub withdrawn: bool,
    /// Why.
    pub rationale: String,
    /// Evidence cited; each must be in the ledger.
    pub cites: Vec<EvidenceId>,
    /// The revision's Evidence record.
    pub record: EvidenceRecord,
}

/// What the result of an `annotate` Evidence record holds: the revision's stored columns, so a row
/// can be held to its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnnotationRecord {
    /// The annotation.
    pub annotation_id: AnnotationId,
    /// The revision.
    pub revision: i64,
    /// The place.
    #[serde(flatten)]
    pub place: AnnotationPlace,
    /// The kind.
    pub kind: AnnotationKind,
    /// The text.
    pub text: String,
    /// Whether it withdraws.
    pub withdrawn: bool,
    /// Why.
    pub rationale: String,
}

/// Evidence ids of `ids` that are not in the ledger.
fn missing_evidence(conn: &Connection, ids: &[EvidenceId]) -> Result<Option<String>, StoreError> {
    for id in ids {
        let present = conn
            .prepare_cached("select 1 from evidence where id = ?1")?
            .query_row([id.as_str()], |_| Ok(()))
            .optional()?;
        if present.is_none() {
            return Ok(Some(id.to_string()));
        }
    }
    Ok(None)
}

const HEAD_COLUMNS: &str = "id, document, scope, address, kind, head_revision";

fn head_of(
    r: &rusqlite::Row<'_>,
) -> rusqlite::Result<(String, AnnotationPlace, AnnotationKind, i64)> {
    Ok((
        r.get(0)?,
        AnnotationPlace {
            document: r.get(1)?,
            scope: AnnotationScope::parse(&r.get::<_, String>(2)?),
            address: r.get::<_, Option<i64>>(3)?.map(|a| Address(a as u64)),
        },
        AnnotationKind::parse(&r.get::<_, String>(4)?),
        r.get(5)?,
    ))
}

fn read_revision(
    conn: &Connection,
    id: &str,
    revision: i64,
) -> Result<Option<AnnotationRevision>, StoreError> {
    let rev = conn
        .prepare_cached(
            "select withdrawn, text, rationale, evidence_id, recorded_at from annotation_revisions
             where annotation_id = ?1 and revision = ?2",
        )?
        .query_row(params![id, revision], |r| {
            Ok((
                r.get::<_, i64>(0)? != 0,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .optional()?;
    let Some((withdrawn, text, rationale, evidence, recorded_at)) = rev else {
        return Ok(None);
    };
    let cites: Vec<String> = conn
        .prepare_cached(
            "select evidence_id from annotation_evidence where annotation_id = ?1 and revision = ?2 order by evidence_id",
        )?
        .query_map(params![id, revision], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let Ok(evidence_id) = EvidenceId::parse(&evidence) else {
        return Ok(None);
    };
    Ok(Some(AnnotationRevision {
        revision,
        text,
        withdrawn,
        rationale,
        cites: cites
            .iter()
            .filter_map(|e| EvidenceId::parse(e).ok())
            .collect(),
        evidence_id,
        recorded_at,
    }))
}

fn read_head(
    conn: &Connection,
    row: (String, AnnotationPlace, AnnotationKind, i64),
    history: bool,
) -> Result<Option<AnnotationHead>, StoreError> {
    let (id, place, kind, revision) = row;
    let Ok(parsed) = AnnotationId::parse(&id) else {
        return Ok(None);
    };
    let Some(head) = read_revision(conn, &id, revision)? else {
        return Ok(None);
    };
    let mut earlier = vec![];
    if history {
        for r in 1..revision {
            if let Some(rev) = read_revision(conn, &id, r)? {
                earlier.push(rev);
            }
        }
    }
    Ok(Some(AnnotationHead {
        id: parsed,
        place,
        kind,
        head,
        history: earlier,
    }))
}

fn annotation(conn: &Connection, id: &AnnotationId) -> Result<Option<AnnotationHead>, StoreError> {
    let row = conn
        .prepare_cached(&format!(
            "select {HEAD_COLUMNS} from annotations where id = ?1"
        ))?
        .query_row([id.as_str()], head_of)
        .optional()?;
    match row {
        Some(row) => read_head(conn, row, false),
        None => Ok(None),
    }
}

/// Writes one revision: its Evidence record, its revision row and cited Evidence, and the head.
/// The one function every annotation revision goes through, so whatever else must see each
/// revision (the ledger's chain) is one call here.
fn insert_revision(
    conn: &Connection,
    new: &NewAnnotation,
) -> Result<(AnnotationHead, RecordOutcome), StoreError> {
    if let Some(id) = missing_evidence(conn, &new.cites)? {
        return Err(StoreError::EvidenceNotInLedger { id });
    }
    let head: Option<i64> = conn
        .prepare_cached("select head_revision from annotations where id = ?1")?
        .query_row([new.id.as_str()], |r| r.get(0))
        .optional()?;
    let revision = match (new.supersedes, head) {
        (None, None) => 1,
        (Some(expected), Some(actual)) if expected == actual => actual + 1,
        (Some(expected), Some(actual)) => {
            return Err(StoreError::AnnotationConflict {
                id: new.id.to_string(),
                expected,
                actual,
            });
        }
        (Some(_), None) => {
            return Err(StoreError::AnnotationNotFound {
                id: new.id.to_string(),
            });
        }
        // A fresh id that is taken: derived ids do not collide, so this is a repeated write.
        (None, Some(actual)) => {
            return Err(StoreError::AnnotationConflict {
                id: new.id.to_string(),
                expected: 0,
                actual,
            });
        }
    };
    let prepared = PreparedEvidence::new(&new.record)?;
    let now = now_rfc3339();
    let evidence = insert_prepared(conn, &prepared, &now)?;
    let address = new.place.address.map(|a| a.0 as i64);
    let key = (new.kind == AnnotationKind::Name && !new.withdrawn).then(|| match_key(&new.text));
    let head_text = (!new.withdrawn).then_some(new.text.as_str());
    if revision == 1 {
        conn.prepare_cached(
            "insert into annotations (id, target_sha256, document, scope, address, kind, head_revision, withdrawn, text, key, evidence_id, updated_at)
             values (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            new.id.as_str(),
            new.target_sha256,
            new.place.document,
            new.place.scope.as_str(),
            address,
            new.kind.as_str(),
            new.withdrawn,
            head_text,
            key,
            evidence.id.as_str(),
            now
        ])?;
    }
    conn.prepare_cached(
        "insert into annotation_revisions (annotation_id, revision, withdrawn, text, rationale, evidence_id, recorded_at)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        new.id.as_str(),
        revision,
        new.withdrawn,
        new.text,
        new.rationale,
        evidence.id.as_str(),
        now
    ])?;
    let mut cite = conn.prepare_cached(
        "insert or ignore into annotation_evidence (annotation_id, revision, evidence_id) values (?1, ?2, ?3)",
    )?;
    for e in &new.cites {
        cite.execute(params![new.id.as_str(), revision, e.as_str()])?;
    }
    if revision > 1 {
        conn.prepare_cached(
            "update annotations set head_revision = ?2, withdrawn = ?3, text = ?4, key = ?5, evidence_id = ?6, updated_at = ?7 where id = ?1",
        )?
        .execute(params![
            new.id.as_str(),
            revision,
            new.withdrawn,
            head_text,
            key,
            evidence.id.as_str(),
            now
        ])?;
    }
    let digest = AnnotationContent {
        item: new.id.as_str(),
        revision,
        withdrawn: new.withdrawn,
        text: &new.text,
        rationale: &new.rationale,
        evidence_id: evidence.id.as_str(),
        recorded_at: &now,
        cites: new.cites.iter().map(|e| e.as_str().to_owned()).collect(),
    }
    .digest();
    append_revision(
        conn,
        ChainKind::AnnotationRevision,
        new.id.as_str(),
        revision,
        &digest,
    )?;
    let head = annotation(conn, &new.id)?.ok_or(StoreError::AnnotationNotFound {
        id: new.id.to_string(),
    })?;
    Ok((head, evidence))
}

/// A revision row's id, revision, withdrawn flag, text, rationale and Evidence id.
type RevisionColumns = (String, i64, i64, String, String, String);

/// Every annotation revision held to the Evidence record it names: the record must be in the
/// ledger, be an `annotate` record, and its result must repeat the row's id, revision, text,
/// withdrawal and rationale; each head must match its head revision. One line per problem.
/// Returns no lines for a database without annotation tables.
pub(super) fn check_annotation_rows(conn: &Connection) -> Vec<String> {
    let has_table: bool = conn
        .query_row(
            "select count(*) from sqlite_schema where type = 'table' and name = 'annotation_revisions'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )
        .unwrap_or(false);
    if !has_table {
        return vec![];
    }
    let mut problems = vec![];
    let rows: Result<Vec<RevisionColumns>, _> = conn
        .prepare(
            "select annotation_id, revision, withdrawn, text, rationale, evidence_id from annotation_revisions order by annotation_id, revision",
        )
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
            })?
            .collect()
        });
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => return vec![format!("annotation revisions unreadable: {e}")],
    };
    for (id, revision, withdrawn, text, rationale, evidence) in rows {
        let record: Option<String> = conn
            .query_row(
                "select record from evidence where id = ?1",
                [&evidence],
                |r| r.get(0),
            )
            .optional()
            .unwrap_or(None);
        let stored = record
            .as_deref()
            .and_then(|r| serde_json::from_str::<EvidenceRecord>(r).ok())
            .filter(|r| r.operation == "annotate")
            .and_then(|r| serde_json::from_value::<AnnotationRecord>(r.result).ok());
        let Some(stored) = stored else {
            problems.push(format!(
                "annotation {id} revision {revision}: its Evidence {evidence} is not an annotate record of this ledger"
            ));
            continue;
        };
        if stored.annotation_id.as_str() != id
            || stored.revision != revision
            || stored.text != text
            || stored.withdrawn != (withdrawn != 0)
            || stored.rationale != rationale
        {
            problems.push(format!(
                "annotation {id} revision {revision}: the row does not hold what its Evidence {evidence} records"
            ));
        }
    }
    let heads: Result<Vec<(String, i64)>, _> = conn
        .prepare(
            "select a.id, a.head_revision from annotations a
             where not exists (select 1 from annotation_revisions r where r.annotation_id = a.id and r.revision = a.head_revision
                 and r.withdrawn = a.withdrawn and (a.withdrawn = 1 or r.text = a.text))",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        });
    match heads {
        Ok(heads) => {
            for (id, revision) in heads {
                problems.push(format!(
                    "annotation {id}: its head does not match its revision {revision}"
                ));
            }
        }
        Err(e) => problems.push(format!("annotations unreadable: {e}")),
    }
    problems
}

/// Analyst names of live procedure annotations of target row `target` whose match key lies in
/// `[lower, upper)`, offered beside the inventory's values in scope `document` (a document row,
/// or 0 for the whole target): those that name exactly one procedure of the scope and are not
/// already a completion value of it. The scope's values are those of completion scope `values`
/// (a target of one document keeps them in the document's scope alone). Few rows (annotations
/// are written by hand), read through the partial index on live names.
pub(super) fn analyst_completions(
    conn: &Connection,
    reprepares: &std::sync::atomic::AtomicU64,
    target: i64,
    document: i64,
    values: i64,
    lower: &str,
    upper: Option<&str>,
) -> Result<Vec<String>, StoreError> {
    let mut select = conn.prepare_cached(
            "select a.text from annotations a join targets t on t.id = ?1 and a.target_sha256 = t.sha256
             where a.kind = 'name' and a.withdrawn = 0 and a.scope = 'procedure' and a.key >= ?3 and (?4 is null or a.key < ?4)
               and (?2 = 0 or a.document = (select name from documents where id = ?2))
               and not exists (select 1 from procedure_completions c
                   where c.target_id = ?1 and c.document_id = ?5 and c.key = a.key and c.value = a.text)
             group by a.text having count(*) = 1 order by a.text",
    )?;
    let names: Vec<String> = select
        .query_map(params![target, document, lower, upper, values], |r| {
            r.get(0)
        })?
        .collect::<Result<_, _>>()?;
    super::completion::tally_reprepares(reprepares, &mut select);
    Ok(names)
}

impl Store {
    /// Records one annotation revision with its Evidence record, in one transaction: a new
    /// annotation (`supersedes` none) or the revision after `supersedes`, which must still be the
    /// head when the write runs (else [`StoreError::AnnotationConflict`]). A cited id not in the
    /// ledger refuses the whole write.
    pub async fn record_annotation(
        &self,
        new: NewAnnotation,
    ) -> Result<(AnnotationHead, RecordOutcome), StoreError> {
        self.write(move |conn| insert_revision(conn, &new)).await
    }

    /// Records `cited` (records the new annotations cite that may not be in the ledger yet), then
    /// several new annotations, then the record of the operation that made them (`summary`), in
    /// one write: all of them, or none when any is refused. Carrying annotations to another
    /// version goes through here, so a refused carry keeps nothing.
    pub async fn record_annotations(
        &self,
        cited: Vec<EvidenceRecord>,
        news: Vec<NewAnnotation>,
        summary: EvidenceRecord,
    ) -> Result<(Vec<AnnotationHead>, RecordOutcome), StoreError> {
        self.write(move |conn| {
            for record in &cited {
                insert_prepared(conn, &PreparedEvidence::new(record)?, &now_rfc3339())?;
            }
            let mut heads = Vec::with_capacity(news.len());
            for new in &news {
                heads.push(insert_revision(conn, new)?.0);
            }
            let prepared = PreparedEvidence::new(&summary)?;
            let outcome = insert_prepared(conn, &prepared, &now_rfc3339())?;
            Ok((heads, outcome))
        })
        .await
    }
}

/// Filters of [`ReadOnlyStore::list_annotations`].
#[derive(Debug, Clone, Default)]
pub struct AnnotationFilter {
    /// Only this document.
    pub document: Option<String>,
    /// Only this address.
    pub address: Option<Address>,
    /// Only this kind.
    pub kind: Option<AnnotationKind>,
    /// Also withdrawn heads, and every head's earlier revisions.
    pub history: bool,
}

impl ReadOnlyStore {
    /// One annotation at its head.
    pub fn annotation(&self, id: &AnnotationId) -> Result<Option<AnnotationHead>, StoreError> {
        self.read(|conn| annotation(conn, id))
    }

    /// Annotation heads of a target matching `filter`, by document, address and id, with the
    /// total.
    pub fn list_annotations(
        &self,
        target_sha256: &str,
        filter: &AnnotationFilter,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<AnnotationHead>, u64), StoreError> {
        self.read(|conn| {
            let condition = "target_sha256 = ?1 and (?2 is null or document = ?2) and (?3 is null or address = ?3)
                 and (?4 is null or kind = ?4) and (?5 or withdrawn = 0)";
            let address = filter.address.map(|a| a.0 as i64);
            let kind = filter.kind.map(AnnotationKind::as_str);
            let rows: Vec<_> = conn
                .prepare_cached(&format!(
                    "select {HEAD_COLUMNS} from annotations where {condition}
                     order by document, address, id limit ?6 offset ?7"
                ))?
                .query_map(
                    params![
                        target_sha256,
                        filter.document,
                        address,
                        kind,
                        filter.history,
                        i64::try_from(limit).unwrap_or(i64::MAX),
                        i64::try_from(offset).unwrap_or(i64::MAX)
                    ],
                    head_of,
                )?
                .collect::<Result<_, _>>()?;
            let total: i64 = conn
                .prepare_cached(&format!("select count(*) from annotations where {condition}"))?
                .query_row(
                    params![target_sha256, filter.document, address, kind, filter.history],
                    |r| r.get(0),
                )?;
            let mut heads = Vec::with_capacity(rows.len());
            for row in rows {
                if let Some(head) = read_head(conn, row, filter.history)? {
                    heads.push(head);
                }
            }
            Ok((heads, total.max(0) as u64))
        })
    }

    /// The live (not withdrawn) heads of a target, optionally of one document, for views to show
    /// beside the file's facts: `(document, address, kind, text, id, evidence id)`. One indexed
    /// query.
    pub fn annotation_heads(
        &self,
        target_sha256: &str,
        document: Option<&str>,
    ) -> Result<Vec<LiveAnnotation>, StoreError> {
        self.read(|conn| {
            let rows = conn
                .prepare_cached(
                    "select document, scope, address, kind, text, id, evidence_id from annotations
                     where target_sha256 = ?1 and (?2 is null or document = ?2) and withdrawn = 0",
                )?
                .query_map(params![target_sha256, document], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows
                .into_iter()
                .filter_map(|(document, scope, address, kind, text, id, evidence)| {
                    Some(LiveAnnotation {
                        document,
                        scope: AnnotationScope::parse(&scope),
                        address: address.map(|a| a as u64),
                        kind: AnnotationKind::parse(&kind),
                        text: text?,
                        id: AnnotationId::parse(&id).ok()?,
                        evidence_id: EvidenceId::parse(&evidence).ok()?,
                    })
                })
                .collect())
        })
    }
}

/// A live annotation head as views use it.
#[derive(Debug, Clone)]
pub struct LiveAnnotation {
    /// Its document.
    pub document: String,
    /// What it is about.
    pub scope: AnnotationScope,
    /// Its address, when it has one.
    pub address: Option<u64>,
    /// What it says.
    pub kind: AnnotationKind,
    /// The text.
    pub text: String,
    /// Its id.
    pub id: AnnotationId,
    /// Its head revision's Evidence.
    pub evidence_id: EvidenceId,
}
