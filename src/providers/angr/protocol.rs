//! The worker's protocol: JSON lines, one request on its stdin and one reply on its stdout, in
//! order, each line at most a fixed number of bytes. The types here are exactly what
//! `worker.py` reads and writes.

use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::providers::decompile::AnalystHints;

/// The protocol version `worker.py` announces; a worker announcing another is not used.
pub(crate) const PROTOCOL: u32 = 1;

/// A request, tagged by `op`.
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub(crate) enum Request {
    /// Map the document (its bytes come on descriptor 3) and learn rea's names.
    Load(Load),
    /// Decompile the procedure `[start, end)`.
    Decompile {
        start: u64,
        end: u64,
        /// Longest text the worker returns; longer code is cut at a line end, and says so.
        max_text_bytes: usize,
        /// rea's direct call instructions in the region: code holding one that angr's CFG does
        /// not reach from the entry is decompiled on its own.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        sites: Vec<u64>,
        /// The target each of `sites` calls, in the same order: a call angr's code does not
        /// show has its block decompiled on its own.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        targets: Vec<u64>,
        /// The procedures the region calls or tail-jumps to: angr finds their prototypes in
        /// their own code, so calls to them show their arguments, and a tail jump reads as a
        /// call.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        callees: Vec<CalleeRegion>,
        /// The analyst's names, prototypes and types to apply (left out when there are none).
        #[serde(skip_serializing_if = "AnalystHints::is_empty")]
        hints: AnalystHints,
    },
    /// Parse a C declaration as the decompiler would (`prototype`, `type` of a document,
    /// `data-type`), the document's types given first.
    Check {
        kind: &'static str,
        text: String,
        types: Vec<String>,
    },
}

/// A procedure a decompiled region reaches directly: its own region `[start, end)`, and whether
/// the region tail-jumps to it (lifted with the region, so that the jump reads as a call) or
/// only calls it (lifted apart, for its prototype alone: whether a callee returns is angr's to
/// judge from the call, not from a region rea may have cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct CalleeRegion {
    pub start: u64,
    pub end: u64,
    pub tail: bool,
}

/// The reply to [`Request::Check`]: whether the declaration parses, and where it failed.
#[derive(Debug, Deserialize)]
pub(crate) struct Checked {
    pub valid: bool,
    #[serde(default)]
    pub position: Option<usize>,
    #[serde(default)]
    pub problem: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// What the worker needs to map a document without a loader of its own.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Load {
    /// archinfo's name of the architecture (`AMD64`, `AARCH64`).
    pub arch: &'static str,
    /// `windows` for a PE document: angr then reads calls in the Microsoft x64 convention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<&'static str>,
    /// The entry point, when the document has one.
    pub entry: Option<u64>,
    /// Bytes of the document mapped at addresses: `size` bytes from `offset` at `address`.
    pub segments: Vec<Segment>,
    /// Zero-filled ranges (`.bss`, `__common`).
    pub zero: Vec<Zero>,
    /// rea's name of every named address: procedures, import stubs, data symbols.
    pub names: Vec<Named>,
    /// Addresses that stand for an imported function (stubs, PLT entries), with the import's
    /// own name, for angr's library prototypes.
    pub imports: Vec<Named>,
    /// Pointer slots holding an import's address at run time (GOT, Mach-O pointers, IAT).
    pub slots: Vec<Named>,
}

/// One mapped range of document bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Segment {
    pub offset: u64,
    pub address: u64,
    pub size: u64,
}

/// One zero-filled range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Zero {
    pub address: u64,
    pub size: u64,
}

/// A name at an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Named {
    pub address: u64,
    pub name: String,
}

/// The first line a worker prints once angr is imported.
#[derive(Debug, Deserialize)]
pub(crate) struct Ready {
    pub event: String,
    pub protocol: u32,
    pub angr: String,
}

/// Every reply's envelope: `ok`, and on failure what failed.
#[derive(Debug, Deserialize)]
pub(crate) struct Envelope {
    pub ok: bool,
    pub error: Option<Failure>,
}

/// A failure the worker reports; it goes on serving after it.
#[derive(Debug, Deserialize)]
pub(crate) struct Failure {
    /// `bad-request`, `lift`, `decompile` or `angr` (an exception inside angr).
    pub kind: String,
    pub message: String,
}

/// The reply to [`Request::Load`]: nothing but `ok`.
#[derive(Debug, Deserialize)]
pub(crate) struct Loaded {}

/// The reply to [`Request::Decompile`].
#[derive(Debug, Deserialize)]
pub(crate) struct Decompiled {
    pub text: String,
    #[serde(default)]
    pub references: Vec<RawReference>,
    #[serde(default)]
    pub limitations: Vec<String>,
    pub cfg_seconds: f64,
    pub decompile_seconds: f64,
}

/// A reference as the worker sees it, before rea resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RawReference {
    /// `call`, `function`, `string` or `data`.
    pub kind: String,
    pub address: u64,
    /// 1-based line of the text.
    pub line: usize,
    /// The text shown for it.
    pub text: String,
}

/// One request as a line (with its newline).
pub(crate) fn encode(request: &Request) -> Vec<u8> {
    let mut line = serde_json::to_vec(request).expect("requests always serialize");
    line.push(b'\n');
    line
}

/// Why a reply could not be used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReplyError {
    /// The worker reported a failure.
    Failed { kind: String, message: String },
    /// The line is not the reply expected.
    Malformed(String),
}

/// Parses a reply line into `T`, or the failure it reports.
pub(crate) fn reply<T: for<'de> Deserialize<'de>>(line: &[u8]) -> Result<T, ReplyError> {
    let envelope: Envelope =
        serde_json::from_slice(line).map_err(|e| ReplyError::Malformed(snippet(line, &e)))?;
    if !envelope.ok {
        let failure = envelope.error.unwrap_or(Failure {
            kind: "unknown".into(),
            message: "the worker reported a failure without saying which".into(),
        });
        return Err(ReplyError::Failed {
            kind: failure.kind,
            message: failure.message,
        });
    }
    serde_json::from_slice(line).map_err(|e| ReplyError::Malformed(snippet(line, &e)))
}

/// A progress line the worker writes while it decompiles, before the reply.
#[derive(Debug, Deserialize, PartialEq)]
pub(crate) struct Progress {
    /// `cfg` or `decompile`.
    pub stage: String,
    /// Share of the stage done, 0 to 100, as angr reports it.
    pub percent: f64,
    /// What angr says it is doing, when it says.
    #[serde(default)]
    pub text: Option<String>,
}

/// The progress a line carries, or `None` when it is not a progress line (then it is a reply).
pub(crate) fn progress(line: &[u8]) -> Option<Progress> {
    #[derive(Deserialize)]
    struct Event {
        event: String,
        #[serde(flatten)]
        progress: Progress,
    }
    if !line.starts_with(br#"{"event":"#) {
        return None;
    }
    serde_json::from_slice::<Event>(line)
        .ok()
        .filter(|e| e.event == "progress")
        .map(|e| e.progress)
}

/// Parses the worker's first line.
pub(crate) fn ready(line: &[u8]) -> Result<Ready, ReplyError> {
    let ready: Ready =
        serde_json::from_slice(line).map_err(|e| ReplyError::Malformed(snippet(line, &e)))?;
    if ready.event != "ready" {
        return Err(ReplyError::Malformed(format!(
            "expected the ready event, got {:?}",
            ready.event
        )));
    }
    if ready.protocol != PROTOCOL {
        return Err(ReplyError::Malformed(format!(
            "the worker speaks protocol {}, rea speaks {PROTOCOL}",
            ready.protocol
        )));
    }
    Ok(ready)
}

fn snippet(line: &[u8], error: &serde_json::Error) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]);
    format!("{error} in {text:?}")
}

/// One frame read from the worker's stdout.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the cap: reading stops there.
    TooLong,
    /// The stream ended (possibly in the middle of a line, which is dropped).
    End,
}

/// Reads one line of at most `cap` bytes (newline excluded). Bytes past the cap are not kept.
pub(crate) fn read_frame(reader: &mut impl BufRead, cap: usize) -> Frame {
    let mut line = Vec::new();
    loop {
        let available = match reader.fill_buf() {
            Ok([]) => return Frame::End,
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Frame::End,
        };
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if line.len() + chunk.len() > cap {
            return Frame::TooLong;
        }
        line.extend_from_slice(chunk);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Frame::Line(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor};

    #[test]
    fn requests_are_one_json_line_tagged_by_op() {
        let load = Request::Load(Load {
            arch: "AMD64",
            platform: None,
            entry: Some(0x1070),
            segments: vec![Segment {
                offset: 0x1000,
                address: 0x1000,
                size: 0x231,
            }],
            zero: vec![Zero {
                address: 0x4028,
                size: 8,
            }],
            names: vec![Named {
                address: 0x1166,
                name: "count_spaces".into(),
            }],
            imports: vec![],
            slots: vec![],
        });
        let line = encode(&load);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            "{\"op\":\"load\",\"arch\":\"AMD64\",\"entry\":4208,\"segments\":[{\"offset\":4096,\"address\":4096,\"size\":561}],\
             \"zero\":[{\"address\":16424,\"size\":8}],\"names\":[{\"address\":4454,\"name\":\"count_spaces\"}],\
             \"imports\":[],\"slots\":[]}\n"
        );
        // A name with a newline stays inside its JSON string: framing cannot break.
        let tricky = Request::Load(Load {
            names: vec![Named {
                address: 1,
                name: "a\nb".into(),
            }],
            ..Load::default()
        });
        assert_eq!(encode(&tricky).iter().filter(|&&b| b == b'\n').count(), 1);
        let decompile = Request::Decompile {
            start: u64::MAX,
            end: 0,
            max_text_bytes: 10,
            sites: Vec::new(),
            targets: Vec::new(),
            callees: Vec::new(),
            hints: AnalystHints::default(),
        };
        assert_eq!(
            encode(&decompile),
            b"{\"op\":\"decompile\",\"start\":18446744073709551615,\"end\":0,\"max_text_bytes\":10}\n"
        );
        // The analyst's hints travel with the request, each field only when given.
        let hinted = Request::Decompile {
            start: 1,
            end: 2,
            max_text_bytes: 10,
            hints: AnalystHints {
                procedures: vec![crate::providers::decompile::ProcedureHint {
                    address: 1,
                    name: Some("dispatch".into()),
                    prototype: None,
                }],
                data: vec![crate::providers::decompile::DataHint {
                    address: 8,
                    name: None,
                    ty: Some("op_fn[4]".into()),
                }],
                types: vec!["typedef int (*op_fn)(int, int);".into()],
            },
            sites: Vec::new(),
            targets: Vec::new(),
            callees: Vec::new(),
        };
        assert_eq!(
            std::str::from_utf8(&encode(&hinted)).unwrap(),
            "{\"op\":\"decompile\",\"start\":1,\"end\":2,\"max_text_bytes\":10,\"hints\":{\"procedures\":[{\"address\":1,\"name\":\"dispatch\"}],\
             \"data\":[{\"address\":8,\"type\":\"op_fn[4]\"}],\"types\":[\"typedef int (*op_fn)(int, int);\"]}}\n"
        );
    }

    #[test]
    fn replies_parse_or_say_what_failed() {
        let ok = br#"{"ok":true,"name":"f","text":"int f()\n{}","references":[{"kind":"call","address":4160,"line":2,"text":"strlen"}],"limitations":["x"],"cfg_seconds":0.01,"decompile_seconds":0.1}"#;
        let parsed: Decompiled = reply(ok).unwrap();
        assert_eq!(parsed.text, "int f()\n{}");
        assert_eq!(
            parsed.references,
            [RawReference {
                kind: "call".into(),
                address: 4160,
                line: 2,
                text: "strlen".into()
            }]
        );
        assert_eq!(parsed.limitations, ["x"]);
        assert_eq!(
            progress(br#"{"event":"progress","stage":"cfg","percent":12.5,"text":null}"#),
            Some(Progress {
                stage: "cfg".into(),
                percent: 12.5,
                text: None
            })
        );
        assert_eq!(progress(br#"{"event":"ready","protocol":1}"#), None);
        assert_eq!(
            progress(br#"{"ok":true,"text":"{\"event\":\"progress\"}"}"#),
            None
        );
        let failed = br#"{"ok":false,"error":{"kind":"lift","message":"no function at 0x10"}}"#;
        assert_eq!(
            reply::<Decompiled>(failed).unwrap_err(),
            ReplyError::Failed {
                kind: "lift".into(),
                message: "no function at 0x10".into()
            }
        );
        let bare = br#"{"ok":false}"#;
        assert!(matches!(
            reply::<Loaded>(bare),
            Err(ReplyError::Failed { kind, .. }) if kind == "unknown"
        ));
        assert!(matches!(
            reply::<Loaded>(b"not json"),
            Err(ReplyError::Malformed(_))
        ));
        assert!(matches!(
            reply::<Decompiled>(br#"{"ok":true,"seconds":1}"#),
            Err(ReplyError::Malformed(_))
        ));
        assert!(reply::<Loaded>(br#"{"ok":true,"seconds":0.003}"#).is_ok());
    }

    #[test]
    fn the_ready_line_names_the_versions_and_protocol() {
        let line =
            br#"{"event":"ready","protocol":1,"angr":"9.2.213","python":"3.11.7","seconds":0.6}"#;
        let ready = ready(line).unwrap();
        assert_eq!(ready.angr, "9.2.213");
        assert!(
            super::ready(br#"{"event":"ready","protocol":2,"angr":"","python":"","seconds":0}"#)
                .is_err()
        );
        assert!(
            super::ready(br#"{"event":"other","protocol":1,"angr":"","python":"","seconds":0}"#)
                .is_err()
        );
        assert!(super::ready(b"Traceback (most recent call last):").is_err());
    }

    #[test]
    fn frames_are_lines_under_a_cap() {
        // A tiny buffer makes lines span several reads.
        let mut reader = BufReader::with_capacity(3, Cursor::new(b"abc\n\ndefgh\nxy".to_vec()));
        assert_eq!(read_frame(&mut reader, 5), Frame::Line(b"abc".to_vec()));
        assert_eq!(read_frame(&mut reader, 5), Frame::Line(Vec::new()));
        assert_eq!(read_frame(&mut reader, 5), Frame::Line(b"defgh".to_vec()));
        // A line cut by the end of the stream is not a reply.
        assert_eq!(read_frame(&mut reader, 5), Frame::End);
        assert_eq!(read_frame(&mut reader, 5), Frame::End);
        let mut long = BufReader::with_capacity(4, Cursor::new(b"0123456789\nok\n".to_vec()));
        assert_eq!(read_frame(&mut long, 6), Frame::TooLong);
    }
}
