//! Comparing two captures dimension by dimension (exit status, stdout, stderr, the limit that
//! ended each, the crash site, the crash's backtrace), after normalization rules that hide what
//! is expected to vary.

use regex::bytes::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use super::backtrace::Backtrace;
use super::outcome::{Capture, CapturedStream, Fault};

/// A built-in normalization, named by the caller (what each does: [`TaggedRule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BuiltinRule {
    /// Date-times and clock times.
    Timestamps,
    /// Long hex addresses.
    HexAddresses,
    /// Process and thread ids.
    Pids,
}

/// One rewrite applied to both captures' stdout and stderr before they are compared.
///
/// It is written as a built-in rule's name (`"pids"`), as `{"pattern": …, "replacement": …}`,
/// or as the tagged object of [`TaggedRule`] (`{"kind": "pids"}`,
/// `{"kind": "pattern", "pattern": …, "replacement": …}`): the one form every MCP client can
/// describe, since it needs no union of a string and an object. Its schema is that tagged form;
/// it is serialized as before (name or pattern object), so recorded Evidence keeps its ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NormalizationRule {
    /// A built-in rule by name: `"timestamps"`, `"hex-addresses"` or `"pids"`.
    Builtin(BuiltinRule),
    /// A caller's rule: every match of `pattern` is replaced by `replacement`.
    Pattern {
        /// A regular expression (Rust `regex` syntax, matched on bytes; `(?i)` for case-blind).
        pattern: String,
        /// The replacement; `$1` or `${name}` insert capture groups, `$$` is a literal `$`.
        replacement: String,
    },
}

// The built-in rules are empty struct variants, not unit ones: serde refuses unknown fields
// only in struct variants, and `{"kind": "pids", "pattern": …}` must not pass.
/// A normalization rule: a built-in one by its kind, or a caller's pattern.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TaggedRule {
    /// ISO-8601 date-times (`2024-05-01T12:00:00Z`, with optional fraction and offset) become
    /// `<timestamp>`, then clock times `HH:MM:SS` become `<time>`.
    Timestamps {},
    /// `0x` followed by six or more hex digits becomes `0x<address>`.
    HexAddresses {},
    /// Numbers after `pid`, `ppid`, `tid` or `process` (with `=`, `:`, `#` or spaces between)
    /// and `name[1234]` as in syslog lines become `<pid>`.
    Pids {},
    /// A caller's rule: every match of `pattern` is replaced by `replacement`.
    Pattern {
        /// A regular expression (Rust `regex` syntax, matched on bytes; `(?i)` for case-blind).
        pattern: String,
        /// The replacement; `$1` or `${name}` insert capture groups, `$$` is a literal `$`.
        replacement: String,
    },
}

impl From<TaggedRule> for NormalizationRule {
    fn from(rule: TaggedRule) -> Self {
        match rule {
            TaggedRule::Timestamps {} => NormalizationRule::Builtin(BuiltinRule::Timestamps),
            TaggedRule::HexAddresses {} => NormalizationRule::Builtin(BuiltinRule::HexAddresses),
            TaggedRule::Pids {} => NormalizationRule::Builtin(BuiltinRule::Pids),
            TaggedRule::Pattern {
                pattern,
                replacement,
            } => NormalizationRule::Pattern {
                pattern,
                replacement,
            },
        }
    }
}

impl<'de> Deserialize<'de> for NormalizationRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The pattern object without a tag, as callers wrote it before the tagged form.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Untagged {
            pattern: String,
            replacement: String,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Name(BuiltinRule),
            Tagged(TaggedRule),
            Untagged(Untagged),
        }
        match Form::deserialize(deserializer) {
            Ok(Form::Name(rule)) => Ok(NormalizationRule::Builtin(rule)),
            Ok(Form::Tagged(rule)) => Ok(rule.into()),
            Ok(Form::Untagged(Untagged {
                pattern,
                replacement,
            })) => Ok(NormalizationRule::Pattern {
                pattern,
                replacement,
            }),
            Err(_) => Err(serde::de::Error::custom(
                "a normalization rule is {\"kind\": \"timestamps\"|\"hex-addresses\"|\"pids\"}, \
                 {\"kind\": \"pattern\", \"pattern\": REGEX, \"replacement\": TEXT}, or a built-in name",
            )),
        }
    }
}

impl schemars::JsonSchema for NormalizationRule {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NormalizationRule".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TaggedRule::json_schema(generator)
    }
}

impl NormalizationRule {
    /// A short description for the comparison's `rules` list.
    fn describe(&self) -> String {
        match self {
            NormalizationRule::Builtin(BuiltinRule::Timestamps) => "timestamps".to_owned(),
            NormalizationRule::Builtin(BuiltinRule::HexAddresses) => "hex-addresses".to_owned(),
            NormalizationRule::Builtin(BuiltinRule::Pids) => "pids".to_owned(),
            NormalizationRule::Pattern {
                pattern,
                replacement,
            } => format!("/{pattern}/ -> {replacement:?}"),
        }
    }

    /// The regular expressions and replacements this rule applies, in order.
    fn compile(&self) -> Result<Vec<(Regex, Vec<u8>)>, regex::Error> {
        let sources: Vec<(String, String)> = match self {
            NormalizationRule::Builtin(BuiltinRule::Timestamps) => vec![
                (
                    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
                        .to_owned(),
                    "<timestamp>".to_owned(),
                ),
                (
                    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b".to_owned(),
                    "<time>".to_owned(),
                ),
            ],
            NormalizationRule::Builtin(BuiltinRule::HexAddresses) => vec![(
                r"(?i)\b0x[0-9a-f]{6,}\b".to_owned(),
                "0x<address>".to_owned(),
            )],
            NormalizationRule::Builtin(BuiltinRule::Pids) => vec![
                (
                    r"(?i)\b(pid|ppid|tid|process)(\s*[:=#]?\s*)\d+\b".to_owned(),
                    "${1}${2}<pid>".to_owned(),
                ),
                (
                    r"\b([A-Za-z_][\w.-]*)\[\d+\]".to_owned(),
                    "${1}[<pid>]".to_owned(),
                ),
            ],
            NormalizationRule::Pattern {
                pattern,
                replacement,
            } => vec![(pattern.clone(), replacement.clone())],
        };
        sources
            .into_iter()
            .map(|(pattern, replacement)| {
                // Bounded compiled size: a hostile pattern is rejected instead of eating memory.
                let regex = RegexBuilder::new(&pattern)
                    .size_limit(1 << 22)
                    .dfa_size_limit(1 << 22)
                    .build()?;
                Ok((regex, replacement.into_bytes()))
            })
            .collect()
    }
}

/// A caller's rule that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvalidRule {
    /// Position of the rule in the list given, from 0.
    pub index: usize,
    /// The rule as described in `rules`.
    pub rule: String,
    /// What the regular-expression compiler said.
    pub message: String,
}

/// Errors of `validate_rules`, for callers that want to reject bad rules up front.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A pattern is not a valid regular expression (or compiles too large).
    #[error("normalization rule {index} ({rule}) is invalid: {message}")]
    InvalidRule {
        /// Position of the rule, from 0.
        index: usize,
        /// The rule.
        rule: String,
        /// What the compiler said.
        message: String,
    },
}

/// Checks that every rule compiles.
pub fn validate_rules(rules: &[NormalizationRule]) -> Result<(), CompareError> {
    for (index, rule) in rules.iter().enumerate() {
        if let Err(error) = rule.compile() {
            return Err(CompareError::InvalidRule {
                index,
                rule: rule.describe(),
                message: error.to_string(),
            });
        }
    }
    Ok(())
}

/// The verdict on one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The two captures agree on it.
    Equal,
    /// They disagree.
    Different,
    /// It cannot be decided (a truncated stream, an invalid rule, a crash site without a
    /// static address).
    Unknown,
}

/// One dimension of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DimensionComparison {
    /// Equal, different or unknown.
    pub verdict: Verdict,
    /// The left capture's value, summarized.
    pub left: String,
    /// The right capture's value, summarized.
    pub right: String,
    /// Where they first differ, or why the verdict is unknown.
    pub detail: Option<String>,
}

/// Two captures compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaptureComparison {
    /// `different` if any dimension differs, else `unknown` if any is unknown, else `equal`.
    pub verdict: Verdict,
    /// How the leaders ended (exit code, or signal and core dump).
    pub exit_status: DimensionComparison,
    /// stdout after normalization; unknown if either was truncated.
    pub stdout: DimensionComparison,
    /// stderr after normalization; unknown if either was truncated.
    pub stderr: DimensionComparison,
    /// Which limit ended each run.
    pub ended_by: DimensionComparison,
    /// The crash site: signal, module file name and static address.
    pub fault: DimensionComparison,
    /// The crashes' backtraces, frame by frame (module file name and static address, innermost
    /// first), and how each walk ended; `detail` names the first frame where they differ.
    /// Unknown when a frame has no static address, when both walks were cut at the frame
    /// limit, or when a capture was recorded before backtraces were kept.
    pub backtrace: DimensionComparison,
    /// The normalization rules applied, in order.
    pub rules: Vec<String>,
    /// Rules that did not compile; while any is listed, stdout and stderr are `unknown`.
    pub invalid_rules: Vec<InvalidRule>,
}

/// Compares `left` and `right` after applying `rules` to both outputs.
pub fn compare(left: &Capture, right: &Capture, rules: &[NormalizationRule]) -> CaptureComparison {
    let mut compiled = Vec::new();
    let mut invalid_rules = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        match rule.compile() {
            Ok(parts) => compiled.extend(parts),
            Err(error) => invalid_rules.push(InvalidRule {
                index,
                rule: rule.describe(),
                message: error.to_string(),
            }),
        }
    }
    let rules_ok = invalid_rules.is_empty();

    let exit_status = plain(
        left.termination.describe(),
        right.termination.describe(),
        left.termination == right.termination,
    );
    let ended_by = plain(
        left.ended_by.as_str().to_owned(),
        right.ended_by.as_str().to_owned(),
        left.ended_by == right.ended_by,
    );
    let stdout = compare_streams("stdout", &left.stdout, &right.stdout, &compiled, rules_ok);
    let stderr = compare_streams("stderr", &left.stderr, &right.stderr, &compiled, rules_ok);
    let fault = compare_faults(left.fault.as_ref(), right.fault.as_ref());
    let backtrace = compare_backtraces(left.fault.as_ref(), right.fault.as_ref());

    let dimensions = [
        &exit_status,
        &stdout,
        &stderr,
        &ended_by,
        &fault,
        &backtrace,
    ];
    let verdict = if dimensions.iter().any(|d| d.verdict == Verdict::Different) {
        Verdict::Different
    } else if dimensions.iter().any(|d| d.verdict == Verdict::Unknown) {
        Verdict::Unknown
    } else {
        Verdict::Equal
    };
    CaptureComparison {
        verdict,
        exit_status,
        stdout,
        stderr,
        ended_by,
        fault,
        backtrace,
        rules: rules.iter().map(NormalizationRule::describe).collect(),
        invalid_rules,
    }
}

fn plain(left: String, right: String, equal: bool) -> DimensionComparison {
    DimensionComparison {
        verdict: if equal {
            Verdict::Equal
        } else {
            Verdict::Different
        },
        left,
        right,
        detail: None,
    }
}

fn summarize_stream(stream: &CapturedStream) -> String {
    if stream.truncated {
        format!(
            "{} bytes kept of {} (truncated)",
            stream.captured_bytes, stream.total_bytes
        )
    } else {
        format!("{} bytes", stream.captured_bytes)
    }
}

fn normalize(bytes: &[u8], rules: &[(Regex, Vec<u8>)]) -> Vec<u8> {
    let mut current = bytes.to_vec();
    for (regex, replacement) in rules {
        current = regex
            .replace_all(&current, replacement.as_slice())
            .into_owned();
    }
    current
}

fn compare_streams(
    name: &str,
    left: &CapturedStream,
    right: &CapturedStream,
    rules: &[(Regex, Vec<u8>)],
    rules_ok: bool,
) -> DimensionComparison {
    let mut result = DimensionComparison {
        verdict: Verdict::Unknown,
        left: summarize_stream(left),
        right: summarize_stream(right),
        detail: None,
    };
    if left.truncated || right.truncated {
        let which = match (left.truncated, right.truncated) {
            (true, true) => "both",
            (true, false) => "the left",
            _ => "the right",
        };
        result.detail = Some(format!(
            "{which} {name} was truncated at its cap, so the full outputs cannot be compared"
        ));
        return result;
    }
    if !rules_ok {
        result.detail = Some("a normalization rule is invalid (see invalid_rules)".to_owned());
        return result;
    }
    let (Some(left_bytes), Some(right_bytes)) = (left.bytes(), right.bytes()) else {
        result.detail = Some(format!("a {name} is not valid for its encoding"));
        return result;
    };
    let left_normal = normalize(&left_bytes, rules);
    let right_normal = normalize(&right_bytes, rules);
    if left_normal == right_normal {
        result.verdict = Verdict::Equal;
    } else {
        result.verdict = Verdict::Different;
        result.detail = Some(first_difference(&left_normal, &right_normal));
    }
    result
}

/// Describes where two byte strings first differ: byte offset, line, and a little context.
fn first_difference(left: &[u8], right: &[u8]) -> String {
    let at = left
        .iter()
        .zip(right)
        .position(|(l, r)| l != r)
        .unwrap_or(left.len().min(right.len()));
    let line = left[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = left[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let excerpt = |bytes: &[u8]| {
        let start = line_start.min(bytes.len());
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p)
            .min(start + 120);
        String::from_utf8_lossy(&bytes[start..end]).into_owned()
    };
    format!(
        "first difference at byte {at} (line {line}) after normalization: left {:?}, right {:?}",
        excerpt(left),
        excerpt(right)
    )
}

fn describe_fault(fault: Option<&Fault>) -> String {
    match fault {
        None => "no crash".to_owned(),
        Some(fault) => {
            let module = fault
                .module
                .as_ref()
                .and_then(|m| m.file_name())
                .map_or_else(|| "?".to_owned(), |n| n.to_string_lossy().into_owned());
            format!(
                "{} in {} at {}",
                fault.signal.name,
                module,
                fault
                    .static_address
                    .as_deref()
                    .unwrap_or("(no static address)")
            )
        }
    }
}

/// Crash sites are compared by signal, module file name (the two versions may live in
/// different directories) and static address.
fn compare_faults(left: Option<&Fault>, right: Option<&Fault>) -> DimensionComparison {
    let mut result = DimensionComparison {
        verdict: Verdict::Equal,
        left: describe_fault(left),
        right: describe_fault(right),
        detail: None,
    };
    match (left, right) {
        (None, None) => {}
        (Some(_), None) | (None, Some(_)) => result.verdict = Verdict::Different,
        (Some(l), Some(r)) => {
            let name = |f: &Fault| {
                f.module
                    .as_ref()
                    .and_then(|m| m.file_name())
                    .map(|n| n.to_owned())
            };
            if l.signal.number != r.signal.number || name(l) != name(r) {
                result.verdict = Verdict::Different;
            } else if l.static_address.is_none() || r.static_address.is_none() {
                result.verdict = Verdict::Unknown;
                result.detail = Some(
                    "a crash site has no static address (anonymous memory or not an ELF)"
                        .to_owned(),
                );
            } else if l.static_address != r.static_address {
                result.verdict = Verdict::Different;
            }
        }
    }
    result
}

fn describe_backtrace(fault: Option<&Fault>) -> String {
    match fault {
        None => "no crash".to_owned(),
        Some(Fault {
            backtrace: None, ..
        }) => "no backtrace recorded".to_owned(),
        Some(Fault {
            backtrace: Some(backtrace),
            ..
        }) => backtrace.describe(),
    }
}

/// Backtraces are compared frame by frame at the same depth, each frame by module file name
/// and static address (run-time addresses move with ASLR), and then by how the walks ended.
fn compare_backtraces(left: Option<&Fault>, right: Option<&Fault>) -> DimensionComparison {
    let mut result = DimensionComparison {
        verdict: Verdict::Equal,
        left: describe_backtrace(left),
        right: describe_backtrace(right),
        detail: None,
    };
    let (l, r) = match (left, right) {
        (None, None) => return result,
        (Some(_), None) | (None, Some(_)) => {
            result.verdict = Verdict::Different;
            result.detail = Some("only one of the runs crashed".to_owned());
            return result;
        }
        (Some(l), Some(r)) => (l, r),
    };
    let (Some(l), Some(r)) = (&l.backtrace, &r.backtrace) else {
        result.verdict = Verdict::Unknown;
        result.detail = Some("a capture was recorded before backtraces were kept".to_owned());
        return result;
    };
    let (verdict, detail) = backtrace_difference(l, r);
    result.verdict = verdict;
    result.detail = detail;
    result
}

fn backtrace_difference(left: &Backtrace, right: &Backtrace) -> (Verdict, Option<String>) {
    let mut undecided = None;
    for (l, r) in left.frames.iter().zip(&right.frames) {
        match (l.comparison_key(), r.comparison_key()) {
            (Some(lk), Some(rk)) if lk != rk => {
                return (
                    Verdict::Different,
                    Some(format!(
                        "first difference at frame {}: left {}, right {}",
                        l.index,
                        l.describe(),
                        r.describe()
                    )),
                );
            }
            (Some(_), Some(_)) => {}
            _ => {
                undecided.get_or_insert(l.index);
            }
        }
    }
    let (ln, rn) = (left.frames.len(), right.frames.len());
    if ln != rn {
        let (longer, extra) = if ln > rn {
            ("left", &left.frames[rn])
        } else {
            ("right", &right.frames[ln])
        };
        return (
            Verdict::Different,
            Some(format!(
                "the left has {ln} frames and the right {rn}; the first {} agree, then the {longer} goes on with frame {}: {}",
                ln.min(rn),
                extra.index,
                extra.describe()
            )),
        );
    }
    if let Some(index) = undecided {
        return (
            Verdict::Unknown,
            Some(format!(
                "frame {index} has no static address (anonymous memory or not an ELF)"
            )),
        );
    }
    if left.end != right.end {
        return (
            Verdict::Different,
            Some(format!(
                "the {ln} frames agree, but the walks ended differently: left {}, right {}",
                left.end.as_str(),
                right.end.as_str()
            )),
        );
    }
    if left.truncated && right.truncated {
        return (
            Verdict::Unknown,
            Some(format!(
                "the {ln} frames read agree, but both walks were cut at the frame limit, so deeper frames are not compared"
            )),
        );
    }
    (Verdict::Equal, None)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::analyzers::capture::backtrace::{Frame, FrameKind, FrameSource, WalkEnd};
    use crate::analyzers::capture::outcome::{
        EndedBy, ExecutableFormat, Limits, NetworkIsolation, OutputOverflow, ScenarioEcho,
        SignalId, Termination,
    };

    #[test]
    fn rules_parse_in_every_form_and_serialize_as_before() {
        let pids = NormalizationRule::Builtin(BuiltinRule::Pids);
        let pattern = NormalizationRule::Pattern {
            pattern: "a+".into(),
            replacement: "b".into(),
        };
        for (text, rule) in [
            (r#""pids""#, &pids),
            (r#"{"kind":"pids"}"#, &pids),
            (r#"{"pattern":"a+","replacement":"b"}"#, &pattern),
            (
                r#"{"kind":"pattern","pattern":"a+","replacement":"b"}"#,
                &pattern,
            ),
        ] {
            assert_eq!(
                &serde_json::from_str::<NormalizationRule>(text).unwrap(),
                rule,
                "{text}"
            );
        }
        // Serialized as before the tagged form existed, so recorded parameters keep their ids.
        assert_eq!(serde_json::to_string(&pids).unwrap(), r#""pids""#);
        assert_eq!(
            serde_json::to_string(&pattern).unwrap(),
            r#"{"pattern":"a+","replacement":"b"}"#
        );
        for bad in [
            r#"{"kind":"pids","pattern":"x"}"#,
            r#"{"kind":"pattern","pattern":"x"}"#,
            r#""uuids""#,
            r#"{"pattern":"x","replacement":"y","extra":1}"#,
        ] {
            let error = serde_json::from_str::<NormalizationRule>(bad).unwrap_err();
            assert!(
                error.to_string().contains("a normalization rule is"),
                "{bad}: {error}"
            );
        }
    }

    fn capture(stdout: &str, code: i32) -> Capture {
        Capture {
            scenario: ScenarioEcho {
                executable: PathBuf::from("/bin/prog"),
                resolved_executable: PathBuf::from("/usr/bin/prog"),
                format: ExecutableFormat::Elf {
                    machine: "x86_64".to_owned(),
                },
                arguments: Vec::new(),
                working_directory: PathBuf::from("/tmp"),
                environment_names: Vec::new(),
                stdin_bytes: 0,
                network: false,
            },
            limits: Limits {
                wall_time_ms: 1000,
                cpu_time_ms: 1000,
                cpu_time_limit_seconds: 1,
                memory_bytes: 1 << 30,
                stdout_cap_bytes: 1 << 20,
                stderr_cap_bytes: 1 << 20,
                max_processes: 64,
                core_dumps: false,
                output_overflow: OutputOverflow::Kill,
            },
            network_isolation: NetworkIsolation::NetworkNamespace,
            traced: true,
            termination: Termination::Exited { code },
            ended_by: EndedBy::None,
            wall_time_ms: 5,
            user_cpu_time_ms: 1,
            system_cpu_time_ms: 1,
            cpu_time_ms: 2,
            peak_rss_bytes: 1 << 20,
            leader_memory: None,
            stdout: CapturedStream::from_bytes(stdout.as_bytes(), stdout.len() as u64, false),
            stderr: CapturedStream::from_bytes(b"", 0, false),
            fault: None,
            leftover_processes: Vec::new(),
        }
    }

    #[test]
    fn builtin_rules_hide_what_varies() {
        let left = capture(
            "2024-05-01T12:00:00.123Z started pid=4242 at 0x7ffd12345678\nworker[77]: ok 10:11:12\n",
            0,
        );
        let right = capture(
            "2025-01-02 08:09:10+02:00 started pid=17 at 0x55d0c0a01139\nworker[9001]: ok 23:59:59\n",
            0,
        );
        let raw = compare(&left, &right, &[]);
        assert_eq!(raw.stdout.verdict, Verdict::Different);
        assert!(raw.stdout.detail.as_deref().unwrap().contains("byte 3"));
        let rules = [
            NormalizationRule::Builtin(BuiltinRule::Timestamps),
            NormalizationRule::Builtin(BuiltinRule::Pids),
            NormalizationRule::Builtin(BuiltinRule::HexAddresses),
        ];
        let normalized = compare(&left, &right, &rules);
        assert_eq!(normalized.stdout.verdict, Verdict::Equal, "{normalized:?}");
        assert_eq!(normalized.verdict, Verdict::Equal);
        assert_eq!(
            normalized.rules,
            vec!["timestamps", "pids", "hex-addresses"]
        );
    }

    #[test]
    fn caller_rules_exit_status_and_truncation() {
        let left = capture("build 1234 done\n", 0);
        let right = capture("build 9 done\n", 1);
        let rules = [NormalizationRule::Pattern {
            pattern: r"build \d+".to_owned(),
            replacement: "build N".to_owned(),
        }];
        let result = compare(&left, &right, &rules);
        assert_eq!(result.stdout.verdict, Verdict::Equal);
        assert_eq!(result.exit_status.verdict, Verdict::Different);
        assert_eq!(result.exit_status.right, "exit code 1");
        assert_eq!(result.verdict, Verdict::Different);

        let mut truncated = capture("same", 0);
        truncated.stdout.truncated = true;
        truncated.stdout.total_bytes = 10_000;
        let result = compare(&truncated, &truncated.clone(), &[]);
        assert_eq!(result.stdout.verdict, Verdict::Unknown);
        assert_eq!(result.verdict, Verdict::Unknown);
    }

    #[test]
    fn invalid_rule_makes_outputs_unknown() {
        let left = capture("a", 0);
        let rules = [NormalizationRule::Pattern {
            pattern: "(".to_owned(),
            replacement: String::new(),
        }];
        let result = compare(&left, &left.clone(), &rules);
        assert_eq!(result.invalid_rules.len(), 1);
        assert_eq!(result.stdout.verdict, Verdict::Unknown);
        assert!(validate_rules(&rules).is_err());
        assert!(validate_rules(&[NormalizationRule::Builtin(BuiltinRule::Pids)]).is_ok());
    }

    #[test]
    fn rules_parse_from_json() {
        let rules: Vec<NormalizationRule> = serde_json::from_str(
            r#"["timestamps", "hex-addresses", {"pattern": "a+", "replacement": "a"}]"#,
        )
        .unwrap();
        assert_eq!(
            rules[1],
            NormalizationRule::Builtin(BuiltinRule::HexAddresses)
        );
        assert!(matches!(rules[2], NormalizationRule::Pattern { .. }));
    }

    #[test]
    fn faults_compare_by_module_name_and_static_address() {
        let fault = |module: &str, address: &str| Fault {
            signal: SignalId::from_number(11),
            code: 1,
            address: Some("0x0".to_owned()),
            instruction_pointer: "0x55d0c0a01139".to_owned(),
            module: Some(PathBuf::from(module)),
            module_offset: Some("0x1139".to_owned()),
            static_address: Some(address.to_owned()),
            registers: Vec::new(),
            backtrace: None,
        };
        let mut left = capture("", 0);
        let mut right = capture("", 0);
        left.fault = Some(fault("/v1/app", "0x1139"));
        right.fault = Some(fault("/v2/app", "0x1139"));
        assert_eq!(compare(&left, &right, &[]).fault.verdict, Verdict::Equal);
        right.fault = Some(fault("/v2/app", "0x2000"));
        assert_eq!(
            compare(&left, &right, &[]).fault.verdict,
            Verdict::Different
        );
        right.fault = None;
        assert_eq!(
            compare(&left, &right, &[]).fault.verdict,
            Verdict::Different
        );
    }

    fn frame(index: u32, module: &str, address: Option<&str>) -> Frame {
        Frame {
            index,
            kind: if index == 0 {
                FrameKind::Fault
            } else {
                FrameKind::Call
            },
            found_by: FrameSource::CallFrameInfo,
            instruction_pointer: format!("0x55d0c0a0{index:04x}"),
            stack_pointer: Some("0x7ffc00001000".to_owned()),
            module: Some(PathBuf::from(module)),
            module_offset: address.map(str::to_owned),
            static_address: address.map(str::to_owned),
        }
    }

    fn crashed(frames: Vec<Frame>, end: WalkEnd) -> Capture {
        let mut capture = capture("", 0);
        let truncated = end == WalkEnd::FrameLimit;
        capture.fault = Some(Fault {
            signal: SignalId::from_number(11),
            code: 1,
            address: Some("0x0".to_owned()),
            instruction_pointer: frames[0].instruction_pointer.clone(),
            module: frames[0].module.clone(),
            module_offset: frames[0].module_offset.clone(),
            static_address: frames[0].static_address.clone(),
            registers: Vec::new(),
            backtrace: Some(Backtrace {
                frames,
                end,
                end_detail: String::new(),
                truncated,
                memory_reads: 3,
            }),
        });
        capture
    }

    #[test]
    fn backtraces_compare_frame_by_frame() {
        let abc = |b: &str| {
            vec![
                frame(0, "/v1/app", Some("0x1139")),
                frame(1, "/v1/app", Some(b)),
                frame(2, "/v2/app", Some("0x1180")),
            ]
        };
        let left = crashed(abc("0x1160"), WalkEnd::Outermost);
        // Another directory and other run-time addresses: the same backtrace.
        let mut moved = abc("0x1160");
        for f in &mut moved {
            f.module = Some(PathBuf::from("/elsewhere/app"));
            f.instruction_pointer = "0x7f0000001000".to_owned();
        }
        let same = compare(&left, &crashed(moved, WalkEnd::Outermost), &[]);
        assert_eq!(
            same.backtrace.verdict,
            Verdict::Equal,
            "{:?}",
            same.backtrace
        );
        assert_eq!(
            same.backtrace.left,
            "3 frames: app 0x1139 <- app 0x1160 <- app 0x1180 (ended: outermost)"
        );
        assert_eq!(same.verdict, Verdict::Equal);

        let other = compare(&left, &crashed(abc("0x11a0"), WalkEnd::Outermost), &[]);
        assert_eq!(other.backtrace.verdict, Verdict::Different);
        assert_eq!(
            other.backtrace.detail.as_deref(),
            Some("first difference at frame 1: left app 0x1160, right app 0x11a0")
        );
        assert_eq!(other.fault.verdict, Verdict::Equal);
        assert_eq!(other.verdict, Verdict::Different);

        let mut shorter = abc("0x1160");
        shorter.pop();
        let short = compare(&left, &crashed(shorter, WalkEnd::UnreadableMemory), &[]);
        assert_eq!(short.backtrace.verdict, Verdict::Different);
        assert_eq!(
            short.backtrace.detail.as_deref(),
            Some(
                "the left has 3 frames and the right 2; the first 2 agree, then the left goes on with frame 2: app 0x1180"
            )
        );

        let ended = compare(
            &left,
            &crashed(abc("0x1160"), WalkEnd::BadReturnAddress),
            &[],
        );
        assert_eq!(ended.backtrace.verdict, Verdict::Different);

        let mut anonymous = abc("0x1160");
        anonymous[2].static_address = None;
        let unknown = compare(&left, &crashed(anonymous, WalkEnd::Outermost), &[]);
        assert_eq!(unknown.backtrace.verdict, Verdict::Unknown);

        let deep = |n: u32| (0..n).map(|i| frame(i, "/app", Some("0x10"))).collect();
        let cut = compare(
            &crashed(deep(64), WalkEnd::FrameLimit),
            &crashed(deep(64), WalkEnd::FrameLimit),
            &[],
        );
        assert_eq!(cut.backtrace.verdict, Verdict::Unknown);

        let mut old = left.clone();
        old.fault.as_mut().unwrap().backtrace = None;
        let before = compare(&old, &left, &[]);
        assert_eq!(before.backtrace.verdict, Verdict::Unknown);
        assert_eq!(before.backtrace.left, "no backtrace recorded");

        let none = compare(&capture("", 0), &left, &[]);
        assert_eq!(none.backtrace.verdict, Verdict::Different);
        let neither = compare(&capture("", 0), &capture("", 0), &[]);
        assert_eq!(neither.backtrace.verdict, Verdict::Equal);
        assert_eq!(neither.backtrace.left, "no crash");
    }
}
