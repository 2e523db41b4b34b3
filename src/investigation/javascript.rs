//! `analyze_javascript_application`: static analysis of a JavaScript/Electron application
//! directory, `app.asar`, or `.app` holding one. Needs no open_binary; the first analysis starts
//! the binary session so its Evidence has a ledger.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::bound::items_budget;
use super::observe::{self, Observed, Qualifiers};
use super::{Investigation, Progress, Result, blocking};
use crate::analyzers::javascript::{self, JsAnalysis};
use crate::evidence::{EvidenceRecord, Subject};
use crate::fsroot::{Deadline, Opened};
use crate::ids::{EvidenceId, ManifestId, OccurrenceId};
use crate::store::{ManifestRegistration, OccurrenceRegistration, OccurrenceRow, Recording};
use crate::vocabulary::{Architecture, Format};

/// The operation of a JavaScript analysis record.
const ANALYZE: &str = "analyze_javascript_application";

/// The operation of the Evidence pages that keep a list cut from an analysis for the message
/// bound.
pub const LIST_PAGE_OPERATION: &str = "javascript_list_page";

/// Arguments of `analyze_javascript_application`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// A JavaScript/Electron application directory (with package.json), an app.asar file, or a
    /// .app bundle whose Contents/Resources/app.asar exists (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub input_path: String,
}

/// The analysis, with the id under which its graph completes like an artifact manifest.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Analyzed {
    /// `agm_` id of the application graph (modules, processes, channels, windows, exposed
    /// APIs); the same for a directory and the asar packed from it.
    pub graph_id: ManifestId,
    /// The analysis: package, module graph, processes, IPC map, windows, findings, occurrences.
    #[serde(flatten)]
    pub analysis: JsAnalysis,
    /// Lists cut to fit the message bound.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<ListCut>,
}

/// A list shown in part.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ListCut {
    /// Its field.
    pub list: String,
    /// Items shown.
    pub shown: u64,
    /// Items in all.
    pub total: u64,
    /// Its first page (get_evidence; each names the next_page). A plain string in the schema,
    /// as the envelope's ids are, to keep tools/list small.
    #[schemars(with = "String")]
    pub first_page: EvidenceId,
}

/// One page of a list cut from an analysis, recorded as its own Evidence: the pages from
/// `first_page` on hold the whole list in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListPage<T> {
    /// The list's field in the analysis.
    pub list: String,
    /// Index of the page's first item in the whole list.
    pub offset: u64,
    /// How many items the whole list holds.
    pub total: u64,
    /// The items.
    pub items: Vec<T>,
    /// The next page, absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page: Option<EvidenceId>,
}

/// Parameters recorded with a page: which list, from where.
#[derive(Serialize)]
struct PageParameters<'a> {
    list: &'a str,
    offset: u64,
}

/// Bytes of JSON `value` takes (an item that cannot be measured counts as too large).
fn json_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX / 4, |v| v.len())
}

/// What the cut of a result leaves room for beside the lists: the `truncated` entries and the
/// limitation sentence naming each cut list.
const CUT_RESERVE: usize = 4096;

/// Cuts `list` (field `name`) by at least `excess` bytes of JSON from its end, recording the
/// whole list as a chain of pages of at most `page_bytes` of items each (always one item, so
/// the chain moves on); returns the cut and how many bytes it took out. A list that is empty
/// or need not shrink is left as it is.
fn cut_list<T: Serialize + Clone>(
    name: &str,
    list: &mut Vec<T>,
    excess: usize,
    page_bytes: usize,
    subject: &Subject,
    pages: &mut Vec<EvidenceRecord>,
) -> Result<Option<(ListCut, usize)>> {
    if excess == 0 || list.is_empty() {
        return Ok(None);
    }
    // One comma between items.
    let sizes: Vec<usize> = list.iter().map(|item| json_len(item) + 1).collect();
    let whole: usize = sizes.iter().sum();
    let room = whole.saturating_sub(excess);
    let (mut kept, mut shown) = (0usize, 0usize);
    while shown < sizes.len() && kept + sizes[shown] <= room {
        kept += sizes[shown];
        shown += 1;
    }
    // The pages' bounds, from the first item of each page.
    let mut starts = vec![0usize];
    let mut used = 0usize;
    for (index, size) in sizes.iter().enumerate() {
        if index > *starts.last().unwrap_or(&0) && used + size > page_bytes {
            starts.push(index);
            used = 0;
        }
        used += size;
    }
    let total = list.len() as u64;
    let mut rest = std::mem::take(list);
    *list = rest[..shown].to_vec();
    let mut next: Option<EvidenceId> = None;
    let mut chain = Vec::with_capacity(starts.len());
    // Built from the last page back, since each page names the id of the next.
    for &start in starts.iter().rev() {
        let items = rest.split_off(start);
        let page = ListPage {
            list: name.to_owned(),
            offset: start as u64,
            total,
            items,
            next_page: next.take(),
        };
        let record = observe::record(
            LIST_PAGE_OPERATION,
            Some(subject.clone()),
            &PageParameters {
                list: name,
                offset: start as u64,
            },
            &page,
            Qualifiers::observed(),
        )?;
        next = Some(record.id()?);
        chain.push(record);
    }
    chain.reverse();
    pages.extend(chain);
    let Some(first_page) = next else {
        return Ok(None);
    };
    let cut = ListCut {
        list: name.to_owned(),
        shown: shown as u64,
        total,
        first_page,
    };
    Ok(Some((cut, whole - kept)))
}

/// Cuts the lists of `result`, modules and occurrences first, until its JSON takes at most the
/// share of `bound`
/// a page's items may (see [`items_budget`]), naming each cut in `truncated` and in a
/// limitation; returns the pages that keep each cut list whole, each at most a sixteenth of
/// `bound` of items so that get_evidence of one fits it. A result that fits is left as it is,
/// so its Evidence id does not change.
fn bound_result(
    result: &mut Analyzed,
    bound: u64,
    subject: &Subject,
) -> Result<Vec<EvidenceRecord>> {
    let budget = items_budget(bound);
    let mut size = json_len(result);
    if size <= budget {
        return Ok(vec![]);
    }
    let target = budget.saturating_sub(CUT_RESERVE);
    let page_bytes = usize::try_from(bound / 16).unwrap_or(usize::MAX).max(1);
    let mut pages = Vec::new();
    // The bulk first: the module list (one per source file) and the flat occurrences (also kept
    // as the graph's occurrence rows), then what the analysis found (IPC, windows, findings).
    // Within each, the largest list first, so a small list is cut only when cutting the large
    // ones was not enough; a stable sort keeps the order below between lists of one size.
    macro_rules! cut_largest_first {
        ($($field:ident),*) => {{
            let mut order = vec![$((json_len(&result.analysis.$field), stringify!($field))),*];
            order.sort_by(|a, b| b.0.cmp(&a.0));
            for (_, name) in order {
                $(if name == stringify!($field) {
                    if let Some((cut, freed)) = cut_list(
                        name,
                        &mut result.analysis.$field,
                        size.saturating_sub(target),
                        page_bytes,
                        subject,
                        &mut pages,
                    )? {
                        size = size.saturating_sub(freed);
                        result.truncated.push(cut);
                    }
                })*
            }
        }};
    }
    cut_largest_first!(modules, occurrences);
    // What the analysis found is cut in shares, never one list whole for another: the IPC map
    // (what an agent analyzes an Electron app for) first, then a fair share of each other list.
    macro_rules! cut_in_shares {
        ($($field:ident),*) => {{
            let sizes = [$(json_len(&result.analysis.$field)),*];
            let room = sizes.iter().sum::<usize>().saturating_sub(size.saturating_sub(target));
            let allotted = shares(&sizes, room);
            let mut index = 0usize;
            $(
                let excess = sizes[index].saturating_sub(allotted[index]);
                index += 1;
                // Each list's excess was settled above, so what a cut frees is not needed.
                if let Some((cut, _)) = cut_list(
                    stringify!($field),
                    &mut result.analysis.$field,
                    excess,
                    page_bytes,
                    subject,
                    &mut pages,
                )? {
                    result.truncated.push(cut);
                }
            )*
            let _ = index;
        }};
    }
    cut_in_shares!(
        ipc,
        diagnostics,
        windows,
        navigation,
        findings,
        exposed_apis,
        processes,
        electron_defaults
    );
    for cut in &result.truncated {
        result.analysis.limitations.push(format!(
            "{}: only the first {} of {} are listed, to fit the message bound; get_evidence of {} \
             (then of each page's next_page) gives the whole list.",
            cut.list, cut.shown, cut.total, cut.first_page
        ));
    }
    Ok(pages)
}

/// How many of `room` bytes each list of `sizes` keeps: the first (the IPC map) is promised half
/// of `room`, the others share the rest fairly (a list needing less than an equal share keeps
/// all of it, and what it leaves goes to the larger ones), and the first then takes whatever the
/// others left, up to its size. Lists that fit together keep everything.
fn shares(sizes: &[usize], room: usize) -> Vec<usize> {
    let mut allotted = vec![0usize; sizes.len()];
    let Some((&first, rest)) = sizes.split_first() else {
        return allotted;
    };
    let promised = first.min(room / 2);
    let mut left = room - promised;
    let mut order: Vec<usize> = (0..rest.len()).collect();
    order.sort_by_key(|&i| rest[i]);
    for (done, &i) in order.iter().enumerate() {
        let share = left / (order.len() - done);
        let take = rest[i].min(share);
        allotted[i + 1] = take;
        left -= take;
    }
    allotted[0] = first.min(promised + left);
    allotted
}

/// Which analysis a path calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A JavaScript/Electron application: a directory that looks like one, an `app.asar`, or a
    /// `.app` bundle with `Contents/Resources/app.asar`.
    JavaScript,
    /// Anything else opens as a binary (a file or a `.app` bundle).
    Binary,
}

/// The analysis `path` calls for (`rea analyze`).
pub fn route(path: &Path) -> Route {
    let app_without_asar = path.is_dir()
        && path.extension().is_some_and(|e| e == "app")
        && !path.join("Contents/Resources/app.asar").is_file();
    if javascript::looks_like_javascript_app(path) && !app_without_asar {
        Route::JavaScript
    } else {
        Route::Binary
    }
}

/// Whether `path` is a JavaScript/Electron application directory (and not a `.app` bundle): the
/// guided prompts start such a target at `analyze_javascript_application`. It is looked at only
/// through the path policy of `settings`: a path outside the allowed roots is not looked at at
/// all, so a prompt rendered for it says nothing of what exists there.
pub fn is_javascript_directory(settings: &crate::settings::Settings, path: &Path) -> bool {
    !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("app"))
        && matches!(settings.check_path(path), Ok(Opened::Dir(d)) if javascript::looks_like_javascript_dir(&d))
}

/// The canonical form of what makes the graph: relative paths only, so a directory and the asar
/// packed from it share one id; and the digest of the application's files, so two versions of
/// one package whose sources parse alike do not.
#[derive(Serialize)]
struct GraphKey<'a> {
    files_sha256: &'a str,
    modules: &'a [javascript::Module],
    processes: &'a [javascript::ProcessEntry],
    ipc: &'a [javascript::IpcChannel],
    windows: &'a [javascript::Window],
    exposed_apis: &'a [javascript::ExposedApi],
}

fn graph_id(a: &JsAnalysis) -> Result<ManifestId> {
    let key = GraphKey {
        files_sha256: &a.input.files_sha256,
        modules: &a.modules,
        processes: &a.processes,
        ipc: &a.ipc,
        windows: &a.windows,
        exposed_apis: &a.exposed_apis,
    };
    Ok(ManifestId::from_digest_of(
        crate::evidence::canonical_json(&key)?.as_bytes(),
    ))
}

fn kind_name(kind: &javascript::OccurrenceKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Runs the analysis of what `checked_path` opened (blocking, under the analysis deadline),
/// reporting every 50 files and the last.
fn analyze(input: &Opened, progress: &dyn Progress) -> Result<JsAnalysis> {
    let given = input.path().display().to_string();
    Ok(javascript::analyze_opened(
        input,
        &given,
        &Deadline::analysis(),
        &mut |p| {
            if p.files_done % 50 == 0 || p.files_done == p.files_total {
                progress.report(p.files_done as u64, p.files_total as u64, &p.current);
            }
        },
    )?)
}

/// The recording of an analysis of the application at `path`: its record, its graph registered
/// as a manifest, and its occurrences.
fn recording(
    path: &Path,
    args: &AnalyzeArgs,
    analysis: JsAnalysis,
    bound: u64,
) -> Result<(Analyzed, Recording)> {
    let id = graph_id(&analysis)?;
    let subject = Subject {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        // What the subject names is the application: its files' digest, not the graph's.
        sha256: analysis.input.files_sha256.clone(),
        format: Format::JavascriptApp,
        architecture: Architecture::Javascript,
        path: path.display().to_string(),
    };
    let rows: Vec<OccurrenceRow> = analysis
        .occurrences
        .iter()
        .map(|o| {
            let kind = kind_name(&o.kind);
            // The place (file:line:column) is the key: one value may occur many times in a file.
            let place = format!("{}:{}:{}", o.file, o.line, o.column);
            OccurrenceRow {
                id: OccurrenceId::of(&id, &o.file, &kind, Some(&place), &o.value),
                part: o.file.clone(),
                kind,
                value: o.value.clone(),
            }
        })
        .collect();
    let mut result = Analyzed {
        graph_id: id.clone(),
        analysis,
        truncated: vec![],
    };
    let pages = bound_result(&mut result, bound, &subject)?;
    let mut q = Qualifiers::observed();
    q.limitations = result.analysis.limitations.clone();
    q.links = result
        .truncated
        .iter()
        .map(|c| c.first_page.clone())
        .collect();
    let target_sha256 = subject.sha256.clone();
    let record = observe::record(ANALYZE, Some(subject), args, &result, q)?;
    let mut recording = Recording::of(record);
    recording.pages = pages;
    let evidence = recording.primary_id()?;
    recording.manifest = Some(ManifestRegistration {
        id: id.clone(),
        target_sha256,
        pages: 1,
        complete: true,
    });
    recording.occurrences.push(OccurrenceRegistration {
        manifest: id,
        evidence,
        rows,
    });
    Ok((result, recording))
}

impl Investigation {
    /// `analyze_javascript_application`: the analysis, recorded with its graph and occurrences.
    pub async fn analyze_javascript_application(
        &self,
        args: AnalyzeArgs,
        progress: std::sync::Arc<dyn Progress>,
    ) -> Result<Observed<Analyzed>> {
        let input = self.checked_path(Path::new(&args.input_path))?;
        // Parameters name the path it resolved to: one observation however it was spelled.
        let args = AnalyzeArgs {
            input_path: input.path().display().to_string(),
        };
        let bound = self.max_result_bytes()?;
        let (result, recording) = blocking(move || {
            let analysis = analyze(&input, progress.as_ref())?;
            recording(input.path(), &args, analysis, bound)
        })
        .await?;
        let s = self.ensure_session().await?;
        observe::commit(s.store(), recording, result).await
    }

    /// What `analyze_javascript_application` of `path` would record, without a session, and
    /// uncut: `rea analyze` sends no message, and pages of a cut list would be stored nowhere
    /// (the same record as the tool's for every application whose result fits the bound).
    /// Blocking.
    pub fn analyze_detached(
        &self,
        path: &Path,
        progress: &dyn Progress,
    ) -> Result<(Analyzed, Recording)> {
        let input = self.checked_path(path)?;
        let args = AnalyzeArgs {
            input_path: input.path().display().to_string(),
        };
        let analysis = analyze(&input, progress)?;
        recording(input.path(), &args, analysis, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_lists_keep_a_share_each_the_ipc_map_first_regression_29() {
        // Everything fits: nothing is cut.
        assert_eq!(shares(&[100, 50, 0], 150), [100, 50, 0]);
        // The app: a large IPC map beside a large navigation list. IPC keeps half, the
        // other half goes to navigation (the only other list that needs room).
        assert_eq!(
            shares(&[600_000, 0, 0, 100_000], 100_000),
            [50_000, 0, 0, 50_000]
        );
        // Small lists keep all they need; what they leave of the second half goes to the large.
        assert_eq!(
            shares(&[600_000, 1_000, 2_000, 100_000], 100_000),
            [50_000, 1_000, 2_000, 47_000]
        );
        // What the others leave goes back to IPC.
        assert_eq!(
            shares(&[600_000, 1_000, 2_000], 100_000),
            [97_000, 1_000, 2_000]
        );
        // An IPC map smaller than half leaves the rest to the others.
        assert_eq!(
            shares(&[10_000, 200_000, 200_000], 100_000),
            [10_000, 45_000, 45_000]
        );
        // IPC alone takes all the room, as before.
        assert_eq!(shares(&[600_000, 0], 100_000), [100_000, 0]);
        assert_eq!(shares(&[], 100), Vec::<usize>::new());
    }

    fn subject() -> Subject {
        Subject {
            name: "app".into(),
            sha256: "0".repeat(64),
            format: Format::JavascriptApp,
            architecture: Architecture::Javascript,
            path: "/app".into(),
        }
    }

    #[test]
    fn a_cut_list_keeps_the_prefix_that_fits_and_pages_the_whole_list() {
        // "aaaa" is 6 bytes of JSON, 7 with its comma: 70 in all; cutting 30 leaves room for 5.
        let mut list = vec!["aaaa".to_owned(); 10];
        let mut pages = Vec::new();
        let (cut, freed) = cut_list("modules", &mut list, 30, 21, &subject(), &mut pages)
            .unwrap()
            .unwrap();
        assert_eq!((cut.shown, cut.total, freed), (5, 10, 35));
        assert_eq!(list.len(), 5);
        // Pages of at most 21 bytes: three items each, the last one alone.
        assert_eq!(pages.len(), 4);
        assert_eq!(cut.first_page, pages[0].id().unwrap());
        let mut offsets = Vec::new();
        for (index, record) in pages.iter().enumerate() {
            assert_eq!(record.operation, LIST_PAGE_OPERATION);
            let page: ListPage<String> = serde_json::from_value(record.result.clone()).unwrap();
            offsets.push((page.offset, page.items.len(), page.total));
            let next = pages.get(index + 1).map(|r| r.id().unwrap());
            assert_eq!(page.next_page, next);
        }
        assert_eq!(offsets, [(0, 3, 10), (3, 3, 10), (6, 3, 10), (9, 1, 10)]);
    }

    #[test]
    fn a_list_that_need_not_shrink_is_not_cut() {
        let mut list = vec!["aaaa".to_owned(); 3];
        let mut pages = Vec::new();
        assert!(
            cut_list("modules", &mut list, 0, 21, &subject(), &mut pages)
                .unwrap()
                .is_none()
        );
        assert_eq!((list.len(), pages.len()), (3, 0));
    }
}
