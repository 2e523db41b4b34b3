//! `doctor`: the server's own check (version, state and config directories, deep provider
//! candidates, process capture) and, optionally, whether a path would open as a target. Starts
//! nothing and opens nothing; its record is kept when a session is open, and `rea doctor --json`
//! prints the same record.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::observe::{self, EvidenceInline, Qualifiers, subject_of};
use super::{Investigation, Result, blocking};
use crate::evidence::Authority;
use crate::providers::{deep, native};
use crate::store::Recording;
use crate::vocabulary::{Architecture, Format};

/// Arguments of `doctor`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorArgs {
    /// A file or .app bundle to check for admission, without opening it (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub target: Option<String>,
}

/// What `doctor` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoctorReport {
    /// rea's version.
    pub version: String,
    /// The state directory and whether it is writable.
    pub state_dir: String,
    /// Whether a session can be created there.
    pub state_dir_writable: bool,
    /// The config directory, when set.
    pub config_dir: Option<String>,
    /// Roots every path must lie under; empty means unrestricted.
    pub allowed_roots: Vec<String>,
    /// Number of guided prompts offered.
    pub prompts: usize,
    /// Deep provider candidates found on PATH (never started).
    pub deep_candidates: Vec<deep::Candidate>,
    /// Whether process capture is available on this server.
    pub process_capture: String,
    /// The admission check of `target`, when one was given.
    pub target: Option<TargetCheck>,
}

/// What `doctor` found, with its Evidence when a session was open to keep it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoctorResult {
    /// The report.
    #[serde(flatten)]
    pub report: DoctorReport,
    /// The Evidence the report is recorded as; absent when no session is open (doctor starts
    /// none) and when the path policy refused `target` (a refused path is not kept in the ledger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceInline>,
}

/// Whether a path would open as a target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TargetCheck {
    /// The path checked.
    pub path: String,
    /// Whether open_binary would admit it.
    pub admitted: bool,
    /// Format, when admitted.
    pub format: Option<Format>,
    /// Architecture, when admitted.
    pub architecture: Option<Architecture>,
    /// Documents it would list, when admitted.
    pub documents: Vec<String>,
    /// Why not, when refused.
    pub refusal: Option<String>,
    /// The analysis that applies instead, when refused and one is known.
    pub available_action: Option<String>,
}

/// Checks whether what `path` opened admits as a target, and the target when it does.
fn check_target(opened: &crate::fsroot::Opened) -> (TargetCheck, Option<native::Target>) {
    let path = opened.path();
    match super::admit(opened) {
        Ok(t) => (
            TargetCheck {
                path: t.path.display().to_string(),
                admitted: true,
                format: Some(t.format),
                architecture: Some(t.architecture),
                documents: t.documents.iter().map(|d| d.name.clone()).collect(),
                refusal: None,
                available_action: None,
            },
            Some(t),
        ),
        Err(e) => (
            TargetCheck {
                path: path.display().to_string(),
                admitted: false,
                format: None,
                architecture: None,
                documents: vec![],
                available_action: match &e {
                    super::InvestigationError::Admit(
                        native::AdmitError::UnsupportedDirectory { suggestion, .. },
                    ) => suggestion.map(str::to_owned),
                    _ => None,
                },
                refusal: Some(e.to_string()),
            },
            None,
        ),
    }
}

fn writable(dir: &Path) -> bool {
    use std::io::Write;
    let probe: PathBuf = dir.join(format!(".rea-doctor-{}", std::process::id()));
    // An empty file needs only an inode, which a full file system still has: the probe writes a
    // page of data and syncs it, as a session database's first write would need.
    let ok = std::fs::File::create(&probe)
        .and_then(|mut f| {
            f.write_all(&[0u8; 4096])?;
            f.sync_all()
        })
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

impl Investigation {
    /// The report, its recording, and whether the path policy refused the target (then nothing
    /// is kept). Blocking: admission reads the target.
    fn doctor_recording(
        &self,
        args: DoctorArgs,
        prompts: usize,
    ) -> Result<(DoctorReport, Recording, bool)> {
        let settings = &self.settings;
        let mut args = args;
        let mut refused = false;
        let (check, target) = match args.target.as_deref() {
            Some(t) => match settings.check_path(Path::new(t)) {
                Ok(opened) => {
                    // Parameters name the path it resolved to, as every operation's do.
                    args.target = Some(opened.path().display().to_string());
                    let (check, target) = check_target(&opened);
                    (Some(check), target)
                }
                Err(refusal) => {
                    refused = true;
                    (
                        Some(TargetCheck {
                            path: t.to_owned(),
                            admitted: false,
                            format: None,
                            architecture: None,
                            documents: vec![],
                            refusal: Some(refusal),
                            available_action: None,
                        }),
                        None,
                    )
                }
            },
            None => (None, None),
        };
        let policy = self.policy.current();
        let report = DoctorReport {
            version: env!("CARGO_PKG_VERSION").into(),
            state_dir: settings.state_dir.display().to_string(),
            state_dir_writable: std::fs::create_dir_all(&settings.state_dir).is_ok()
                && writable(&settings.state_dir),
            config_dir: settings
                .config_dir
                .as_ref()
                .map(|d| d.display().to_string()),
            allowed_roots: settings
                .allowed_roots
                .paths()
                .map(|r| r.display().to_string())
                .collect(),
            prompts,
            deep_candidates: deep::candidates(deep::ANY_FORMAT, None),
            process_capture: if !cfg!(target_os = "linux") {
                format!(
                    "not available: process capture runs on Linux only (this is {})",
                    std::env::consts::OS
                )
            } else if policy.enabled {
                format!(
                    "enabled: executables under {:?}, working directories under {:?}",
                    policy.executable_roots, policy.working_directory_roots
                )
            } else {
                "disabled: an operator enables it in $REA_CONFIG_DIR/rea.toml ([capture] enabled = true with roots)".into()
            },
            target: check,
        };
        let mut q = Qualifiers::observed();
        q.authority = Authority::HostEnvironment;
        let record = observe::record("doctor", target.as_ref().map(subject_of), &args, &report, q)?;
        Ok((report, Recording::of(record), refused))
    }

    /// `doctor`: the check, recorded when a session is open, unless the path policy refused the
    /// target: a path outside the roots is not kept in the ledger. `prompts` is the number of
    /// guided prompts the caller offers.
    pub async fn doctor(&self, args: DoctorArgs, prompts: usize) -> Result<DoctorResult> {
        let (report, recording, refused) = {
            // Admission runs on a worker thread, which needs the settings and policy only.
            let this = Investigation::new(self.settings.clone(), self.policy.clone());
            blocking(move || this.doctor_recording(args, prompts)).await?
        };
        let snapshot = if refused { None } else { self.snapshot() };
        let Some(s) = snapshot else {
            return Ok(DoctorResult {
                report,
                evidence: None,
            });
        };
        let observed = observe::commit(s.store(), recording, report).await?;
        Ok(DoctorResult {
            report: observed.result,
            evidence: Some(observed.evidence),
        })
    }

    /// What `doctor` records for `args`, without a session (`rea doctor --json`). Blocking.
    pub fn doctor_detached(
        &self,
        args: DoctorArgs,
        prompts: usize,
    ) -> Result<(DoctorReport, Recording)> {
        self.doctor_recording(args, prompts)
            .map(|(report, recording, _)| (report, recording))
    }
}
