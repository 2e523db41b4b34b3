//! The instruction-level diff of one matched pair (issue 28): both bodies aligned as a
//! longest common subsequence of their instructions, each instruction compared by what the
//! comparison compares — its bytes with address-dependent fields masked, the callee it reaches
//! read through the matching, the string it refers to — and a jump inside the procedure by
//! whether it lands on corresponding instructions, so a body that only moved shows no change,
//! and a new constant, callee or branch target shows as one.
//!
//! Lines are rendered from the listing `procedure_assembly` gives, with jumps inside the
//! procedure written as offsets from its start and calls as the callee's name, where it has one.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::providers::native::{Image, Instruction, ProviderError, hex_opt};

use super::ProcedureDiff;

/// Instructions of each side that are aligned; the rest of a longer body is not compared.
pub const MAX_DETAIL_INSTRUCTIONS: usize = 2_000;

/// Lines one diff lists; `lines_total` counts them all.
pub const MAX_DETAIL_LINES: usize = 200;

/// Unchanged instructions listed before and after each change.
const CONTEXT: usize = 3;

/// What became of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LineKind {
    /// On both sides.
    Kept,
    /// Only on the left.
    Removed,
    /// Only on the right.
    Added,
}

/// One line of an instruction-level diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffLine {
    /// Kept, removed or added.
    pub kind: LineKind,
    /// Address on the left (absent when added).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
    #[schemars(with = "String")]
    pub left: Option<u64>,
    /// Address on the right (absent when removed).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
    #[schemars(with = "String")]
    pub right: Option<u64>,
    /// The instruction (the left's when kept); jumps inside the procedure show their offset
    /// from its start (`+0x1a`), calls the callee's name.
    pub text: String,
    /// A kept line's right instruction, when its text differs (other addresses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right_text: Option<String>,
}

/// The instruction-level diff of a matched pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PairDetail {
    /// Instructions on both sides: equal once addresses are masked, with matched callees.
    pub kept: u64,
    /// Instructions only on the left.
    pub removed: u64,
    /// Instructions only on the right.
    pub added: u64,
    /// Removed and added instructions in order, with up to 3 kept ones around each run; the
    /// first 200.
    pub lines: Vec<DiffLine>,
    /// Exact number of such lines.
    pub lines_total: u64,
    /// Lines stop short of `lines_total`, or a side has over 2000 instructions (only those
    /// are compared).
    pub truncated: bool,
}

/// One instruction of a side: what it is compared by, and how it is shown.
struct Line {
    address: u64,
    key: Key,
    text: String,
    /// For a jump inside the procedure: the index of the instruction it lands on, or the
    /// offset it lands at when that starts no listed instruction.
    jump: Option<Jump>,
}

/// Where a jump inside the procedure lands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Jump {
    /// On the instruction of this index.
    To(usize),
    /// At this offset from the start, which begins no listed instruction.
    Offset(u64),
}

/// What an instruction is compared by. Two instructions are the same when their masked bytes
/// (with the string and import they refer to) are, and their callees are: the same key, or, as
/// the comparison has it, a left callee that is ambiguous and a right one among its
/// candidates.
#[derive(Clone)]
struct Key {
    /// Masked bytes, string and import.
    body: u32,
    /// The callee in the right's terms (0: none).
    callee: u32,
    /// Left: the candidates of an ambiguous callee.
    candidates: Option<Arc<[u64]>>,
    /// Right: an unmatched callee.
    unmatched: Option<u64>,
}

impl Key {
    fn same(&self, right: &Key) -> bool {
        self.body == right.body
            && (self.callee == right.callee
                || matches!((&self.candidates, right.unmatched),
                    (Some(c), Some(at)) if c.contains(&at)))
    }
}

/// Which side a body comes from: callees are keyed in the right's terms.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// The matching, by address: a left procedure's counterpart, the right procedures that are
/// one, and the candidates of each ambiguous left procedure.
#[derive(Default)]
struct Pairs {
    counterpart: HashMap<u64, u64>,
    matched: HashSet<u64>,
    ambiguous: HashMap<u64, Arc<[u64]>>,
}

/// Gives each distinct text a key of both sides is made of one number; the empty text is 0.
struct Keys(HashMap<String, u32>);

impl Default for Keys {
    fn default() -> Keys {
        Keys(HashMap::from([(String::new(), 0)]))
    }
}

impl Keys {
    fn id(&mut self, key: String) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(key).or_insert(next)
    }
}

/// The instruction-level diff of the pair whose left procedure starts at `left_at` and right at
/// `right_at`, the callees of both read through `diff`'s matching.
pub fn pair_detail(
    diff: &ProcedureDiff,
    left: &Image,
    right: &Image,
    left_at: u64,
    right_at: u64,
) -> Result<PairDetail, ProviderError> {
    let mut pairs = Pairs::default();
    for e in diff.entries() {
        match (&e.left, &e.right) {
            (Some(l), Some(r)) => {
                pairs.counterpart.insert(l.address, r.address);
                pairs.matched.insert(r.address);
            }
            (Some(l), None) if !e.candidates.is_empty() => {
                let candidates = e.candidates.iter().map(|c| c.address).collect();
                pairs.ambiguous.insert(l.address, candidates);
            }
            _ => {}
        }
    }
    let mut keys = Keys::default();
    let (a, a_capped) = lines(left, left_at, Side::Left, &pairs, &mut keys)?;
    let (b, b_capped) = lines(right, right_at, Side::Right, &pairs, &mut keys)?;
    let steps = retarget(
        align(a.len(), b.len(), |i, j| a[i].key.same(&b[j].key)),
        &a,
        &b,
    );
    let count = |k: LineKind| steps.iter().filter(|s| s.kind() == k).count() as u64;
    let (kept, removed, added) = (
        count(LineKind::Kept),
        count(LineKind::Removed),
        count(LineKind::Added),
    );
    // A kept instruction is listed when a change lies within CONTEXT steps of it.
    let changed: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].kind() != LineKind::Kept)
        .collect();
    let near = |i: usize| {
        let at = changed.partition_point(|&c| c < i.saturating_sub(CONTEXT));
        changed.get(at).is_some_and(|&c| c <= i + CONTEXT)
    };
    let shown: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].kind() != LineKind::Kept || near(i))
        .collect();
    let lines_total = shown.len() as u64;
    let lines = shown
        .into_iter()
        .take(MAX_DETAIL_LINES)
        .map(|i| match steps[i] {
            Step::Kept(x, y) => DiffLine {
                kind: LineKind::Kept,
                left: Some(a[x].address),
                right: Some(b[y].address),
                text: a[x].text.clone(),
                right_text: (a[x].text != b[y].text).then(|| b[y].text.clone()),
            },
            Step::Removed(x) => DiffLine {
                kind: LineKind::Removed,
                left: Some(a[x].address),
                right: None,
                text: a[x].text.clone(),
                right_text: None,
            },
            Step::Added(y) => DiffLine {
                kind: LineKind::Added,
                left: None,
                right: Some(b[y].address),
                text: b[y].text.clone(),
                right_text: None,
            },
        })
        .collect::<Vec<_>>();
    Ok(PairDetail {
        kept,
        removed,
        added,
        truncated: a_capped || b_capped || (lines.len() as u64) < lines_total,
        lines,
        lines_total,
    })
}

/// The first [`MAX_DETAIL_INSTRUCTIONS`] instructions of the body at `start`, keyed and
/// rendered, and whether the body has more.
fn lines(
    image: &Image,
    start: u64,
    side: Side,
    pairs: &Pairs,
    keys: &mut Keys,
) -> Result<(Vec<Line>, bool), ProviderError> {
    let mut masked = image.masked_instructions(start)?;
    let capped = masked.len() > MAX_DETAIL_INSTRUCTIONS;
    masked.truncate(MAX_DETAIL_INSTRUCTIONS);
    let listing = image.assembly(start, 0, MAX_DETAIL_INSTRUCTIONS)?;
    // The whole extent, not the listing's cap: a jump inside the procedure is never a callee.
    let end = image
        .procedure_index(start)
        .map_or(listing.end, |i| image.procedure_end(i, u64::MAX));
    let shown: HashMap<u64, &Instruction> = listing
        .instructions
        .iter()
        .map(|i| (i.address, i))
        .collect();
    let mut out: Vec<Line> = masked
        .into_iter()
        .map(|m| {
            let insn = shown.get(&m.address).copied();
            let mut body = ::hex::encode(&m.masked);
            let mut key = Key {
                body: 0,
                callee: 0,
                candidates: None,
                unmatched: None,
            };
            if let Some(insn) = insn {
                let callee = callee_key(image, insn, start..end, side, pairs);
                key.callee = keys.id(callee.key);
                key.candidates = callee.candidates;
                key.unmatched = callee.unmatched;
                body.push_str(&reference_key(insn));
            }
            key.body = keys.id(body);
            let text = match insn {
                Some(insn) => render(insn, start, end),
                // Bytes the listing shows as data.
                None => {
                    let raw = image.bytes_at(m.address, m.masked.len() as u64);
                    format!(".byte {}", ::hex::encode(raw.unwrap_or(&m.masked)))
                }
            };
            let jump = insn
                .and_then(|i| i.target)
                .filter(|t| (start..end).contains(t))
                .map(|t| Jump::Offset(t - start));
            Line {
                address: m.address,
                key,
                text,
                jump,
            }
        })
        .collect();
    let index: HashMap<u64, usize> = out
        .iter()
        .enumerate()
        .map(|(i, l)| (l.address, i))
        .collect();
    for line in &mut out {
        if let Some(Jump::Offset(off)) = line.jump
            && let Some(&i) = index.get(&(start + off))
        {
            line.jump = Some(Jump::To(i));
        }
    }
    Ok((out, capped))
}

/// A callee as a key: its text, and what else it may equal.
struct CalleeKey {
    key: String,
    candidates: Option<Arc<[u64]>>,
    unmatched: Option<u64>,
}

/// The procedure an instruction calls or jumps to outside its own, in the right's terms, so a
/// call to the matched counterpart is no change: the counterpart, else the callee's name, else
/// nothing the other side can equal (but for an ambiguous left callee and its candidates).
/// Jumps inside the procedure are left to the masked bytes, as the comparison leaves them.
fn callee_key(
    image: &Image,
    insn: &Instruction,
    inside: std::ops::Range<u64>,
    side: Side,
    pairs: &Pairs,
) -> CalleeKey {
    let mut out = CalleeKey {
        key: String::new(),
        candidates: None,
        unmatched: None,
    };
    let Some(t) = insn.target.filter(|t| !inside.contains(t)) else {
        return out;
    };
    let Some(p) = image.procedure_starting_at(t) else {
        // An import's stub or an address that starts no procedure: by what it is called.
        out.key = format!("i{}", insn.target_name.as_deref().unwrap_or(""));
        return out;
    };
    let matched = match side {
        Side::Left => pairs.counterpart.get(&t).copied(),
        Side::Right => pairs.matched.contains(&t).then_some(t),
    };
    out.key = match (matched, &p.name) {
        (Some(r), _) => format!("p{r:x}"),
        (None, Some(name)) => format!("n{name}"),
        (None, None) => format!("u{}{t:x}", side as u8),
    };
    if matched.is_none() {
        match side {
            Side::Left => out.candidates = pairs.ambiguous.get(&t).cloned(),
            Side::Right => out.unmatched = Some(t),
        }
    }
    out
}

/// What an instruction refers to that its masked bytes do not show: an import called through
/// its slot, or the string it refers to. Other data is left to the masked bytes, as the
/// comparison leaves it.
fn reference_key(insn: &Instruction) -> String {
    let mut key = String::new();
    if insn.target.is_none()
        && let Some(name) = &insn.target_name
    {
        key.push_str("|i");
        key.push_str(name);
    }
    if let Some(d) = &insn.data
        && d.name.starts_with('"')
    {
        key.push_str("|s");
        key.push_str(&d.name);
    }
    key
}

/// An instruction's text with a jump inside `[start, end)` shown as its offset, a call as the
/// callee's name, and the data it refers to by name.
fn render(insn: &Instruction, start: u64, end: u64) -> String {
    let mut text = insn.text.clone();
    if let Some(t) = insn.target {
        let shown = if (start..end).contains(&t) {
            Some(format!("+{:#x}", t - start))
        } else {
            insn.target_name.clone()
        };
        if let Some(shown) = shown {
            text = replace_number(&text, t, &shown).unwrap_or(text);
        }
    }
    if let Some(d) = &insn.data
        && d.name != format!("{:#x}", d.address)
    {
        text = match replace_number(&text, d.address, &d.name) {
            Some(replaced) => replaced,
            None => format!("{text} ; {}", d.name),
        };
    }
    text
}

/// `text` with its first `0x` number equal to `value` (with the `#` arm64 writes before an
/// immediate) replaced by `by`; `None` when there is none.
fn replace_number(text: &str, value: u64, by: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("0x").map(|i| i + from) {
        let digits = text[at + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        let after = at + 2 + digits;
        let word_before =
            at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if digits > 0
            && !word_before
            && u64::from_str_radix(&text[at + 2..after], 16).ok() == Some(value)
        {
            let begin = if at > 0 && bytes[at - 1] == b'#' {
                at - 1
            } else {
                at
            };
            return Some(format!("{}{by}{}", &text[..begin], &text[after..]));
        }
        from = after.max(at + 2);
    }
    None
}

/// One step of an alignment, by index into each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Kept(usize, usize),
    Removed(usize),
    Added(usize),
}

impl Step {
    fn kind(self) -> LineKind {
        match self {
            Step::Kept(..) => LineKind::Kept,
            Step::Removed(_) => LineKind::Removed,
            Step::Added(_) => LineKind::Added,
        }
    }
}

/// The alignment with each kept jump inside the procedure whose targets are not aligned with
/// each other (its masked bytes hide where it lands) made a removal and an addition: a jump
/// that now lands elsewhere is a change, one that lands on the same instruction, moved, is
/// not.
fn retarget(steps: Vec<Step>, a: &[Line], b: &[Line]) -> Vec<Step> {
    let mut counterpart = vec![None; a.len()];
    for s in &steps {
        if let Step::Kept(x, y) = *s {
            counterpart[x] = Some(y);
        }
    }
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        let Step::Kept(x, y) = s else {
            out.push(s);
            continue;
        };
        let same = match (a[x].jump, b[y].jump) {
            (Some(Jump::To(tx)), Some(Jump::To(ty))) => counterpart[tx] == Some(ty),
            (jx, jy) => jx == jy,
        };
        if same {
            out.push(s);
        } else {
            out.extend([Step::Removed(x), Step::Added(y)]);
        }
    }
    out
}

/// Aligns a left sequence of `n` instructions with a right one of `m` along a longest common
/// subsequence, `same(i, j)` saying whether left `i` and right `j` are the same; within a
/// change, removals come before additions. The common prefix and suffix are kept without a
/// table, so the table covers only the part that differs (at most
/// [`MAX_DETAIL_INSTRUCTIONS`] squared cells).
fn align(n: usize, m: usize, same: impl Fn(usize, usize) -> bool) -> Vec<Step> {
    let prefix = (0..n.min(m)).take_while(|&i| same(i, i)).count();
    let suffix = (0..(n - prefix).min(m - prefix))
        .take_while(|&k| same(n - 1 - k, m - 1 - k))
        .count();
    // The part between, `[prefix, n - suffix)` and `[prefix, m - suffix)`.
    let (rows, cols) = (n - suffix - prefix, m - suffix - prefix);
    let eq = |i: usize, j: usize| same(prefix + i, prefix + j);
    // lcs[i * (cols + 1) + j]: the longest common subsequence of the rows from i on and the
    // columns from j on.
    let width = cols + 1;
    let mut lcs = vec![0u16; (rows + 1) * width];
    for i in (0..rows).rev() {
        for j in (0..cols).rev() {
            lcs[i * width + j] = if eq(i, j) {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut steps: Vec<Step> = (0..prefix).map(|i| Step::Kept(i, i)).collect();
    let (mut i, mut j) = (0, 0);
    while i < rows || j < cols {
        if i < rows
            && j < cols
            && eq(i, j)
            && lcs[i * width + j] == lcs[(i + 1) * width + j + 1] + 1
        {
            steps.push(Step::Kept(prefix + i, prefix + j));
            i += 1;
            j += 1;
        } else if j == cols || (i < rows && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
            steps.push(Step::Removed(prefix + i));
            i += 1;
        } else {
            steps.push(Step::Added(prefix + j));
            j += 1;
        }
    }
    steps.extend((0..suffix).map(|k| Step::Kept(n - suffix + k, m - suffix + k)));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The alignment of two sequences of numbers, equal when equal.
    fn aligned(a: &[u32], b: &[u32]) -> Vec<Step> {
        align(a.len(), b.len(), |i, j| a[i] == b[j])
    }

    fn kinds(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|s| match s {
                Step::Kept(..) => '=',
                Step::Removed(_) => '-',
                Step::Added(_) => '+',
            })
            .collect()
    }

    #[test]
    fn alignment_keeps_the_longest_common_run_and_removes_before_adding() {
        assert_eq!(kinds(&aligned(&[1, 2, 3], &[1, 2, 3])), "===");
        assert_eq!(kinds(&aligned(&[1, 2, 3], &[1, 9, 2, 3])), "=+==");
        assert_eq!(kinds(&aligned(&[1, 2, 3], &[1, 9, 3])), "=-+=");
        assert_eq!(kinds(&aligned(&[], &[4, 5])), "++");
        assert_eq!(kinds(&aligned(&[4, 5], &[])), "--");
        assert_eq!(
            aligned(&[1, 2, 3, 4], &[2, 3, 7, 4]),
            [
                Step::Removed(0),
                Step::Kept(1, 0),
                Step::Kept(2, 1),
                Step::Added(2),
                Step::Kept(3, 3)
            ]
        );
    }

    #[test]
    fn an_ambiguous_callee_is_the_same_as_any_of_its_candidates() {
        let key = |callee, candidates: Option<&[u64]>, unmatched| Key {
            body: 1,
            callee,
            candidates: candidates.map(Arc::from),
            unmatched,
        };
        let left = key(2, Some(&[0x20, 0x30]), None);
        assert!(left.same(&key(2, None, None)));
        assert!(left.same(&key(3, None, Some(0x30))));
        assert!(!left.same(&key(3, None, Some(0x40))));
        assert!(!left.same(&Key {
            body: 4,
            ..key(2, None, None)
        }));
    }

    #[test]
    fn numbers_are_replaced_as_whole_tokens() {
        assert_eq!(
            replace_number("call 0x1130", 0x1130, "op_add").as_deref(),
            Some("call op_add")
        );
        assert_eq!(
            replace_number("b.ne #0x40", 0x40, "+0x8").as_deref(),
            Some("b.ne +0x8")
        );
        // 0x11300 is another number, and `r0x1130` no number at all.
        assert_eq!(replace_number("mov eax, 0x11300", 0x1130, "x"), None);
        assert_eq!(replace_number("jmp r0x1130", 0x1130, "x"), None);
        assert_eq!(
            replace_number("lea rdi, [0x2004]", 0x2004, "\"end\"").as_deref(),
            Some("lea rdi, [\"end\"]")
        );
    }
}
