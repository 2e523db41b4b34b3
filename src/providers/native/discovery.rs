//! Procedures found by following code: from every start the file gives (its tables, its entry,
//! the init/fini arrays and tags, TLS callbacks, code pointers in data), direct calls and tail
//! jumps are decoded and followed to new starts, iteratively, within a fixed work budget.
//!
//! Where a table lists functions the walk adds only starts that lie outside every listed
//! procedure's stated extent, so a file with symbols or unwind entries keeps the inventory its
//! tables give; where no table does, the walk is what finds the functions.

use std::collections::{BTreeMap, HashMap, HashSet};

mod hint;
mod pages;
mod quick;

use hint::{ACCESS, ADDRESS, CALL, COND_JUMP, JUMP, KIND, RETURN, STEP, WIDE};
use pages::BitPages;

use super::disasm::{self, Disassembler, Flow, MemoryUse};
use super::jumptable::{self, JumpTable, Path};
use super::types::{Isa, SectionInfo};
use crate::vocabulary::FoundBy;

/// Most instructions decoded by one walk, whatever the file's size: a walk costs at most this
/// much, and the same file always gives the same procedures (no clock decides).
const MAX_INSTRUCTIONS: usize = 64_000_000;

/// Furthest from its procedure's start an indirect jump is looked at as a switch: the jump
/// table's procedure is decoded from its start up to the jump.
const SCAN_SPAN: u64 = 1 << 20;

/// Most procedure starts one walk adds, against code decoded from data.
const MAX_NEW_STARTS: usize = 4_000_000;

/// Imports that never return: code after a call to one is not the caller's.
const NORETURN: &[&str] = &[
    "exit",
    "_exit",
    "_Exit",
    "abort",
    "__stack_chk_fail",
    "__assert_fail",
    "__assert_rtn",
    "__cxa_throw",
    "__cxa_rethrow",
    "_Unwind_Resume",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__cxa_throw_bad_array_new_length",
    "longjmp",
    "_longjmp",
    "siglongjmp",
    "__longjmp_chk",
    "pthread_exit",
    "err",
    "errx",
    "verr",
    "verrx",
    "__fortify_fail",
    "__chk_fail",
    "quick_exit",
    "ExitProcess",
    "ExitThread",
    "RaiseException",
    "_invalid_parameter_noinfo_noreturn",
    "__libc_start_main",
];

/// Whether a call to the import named `name` does not come back.
pub(crate) fn is_noreturn(name: &str) -> bool {
    let plain = name.split('@').next().unwrap_or(name);
    let plain = plain.strip_prefix("__imp_").unwrap_or(plain);
    NORETURN.contains(&plain) || NORETURN.contains(&plain.trim_start_matches('_'))
}

/// The `len` bytes the file holds at `address`, through the section table.
fn section_bytes<'a>(
    sections: &[SectionInfo],
    bytes: &'a [u8],
    address: u64,
    len: usize,
) -> Option<&'a [u8]> {
    let s = sections
        .iter()
        .find(|s| address >= s.address && address - s.address < s.file_size)?;
    let in_section = address - s.address;
    if (len as u64) > s.file_size - in_section {
        return None;
    }
    let at = usize::try_from(s.file_offset?.checked_add(in_section)?).ok()?;
    bytes.get(at..at.checked_add(len)?)
}

/// What the walk keeps of 64 bytes of a code range: three words of one bit per byte, [`SEEN`],
/// [`VISITING`] and [`STARTS`]. They sit side by side: the walk reads all three for every
/// instruction it reaches, and as three bitmaps of their own they were three cache lines. (An
/// array, not a struct, so that a vector of them is allocated zeroed, untouched.)
type Bits = [u64; 3];

/// Whether an instruction was decoded starting there.
const SEEN: usize = 0;
/// Whether the walk of the current procedure decoded an instruction there (its words are
/// listed in [`Walk::visited`], which clears them).
const VISITING: usize = 1;
/// Whether a procedure starts there (listed or found so far).
const STARTS: usize = 2;

/// One executable range with the bytes the file holds for it.
struct CodeRange<'a> {
    lo: u64,
    hi: u64,
    bytes: &'a [u8],
    /// Three bits per byte, kept together for each 64 bytes (see [`Bits`]).
    bits: BitPages,
    /// A disassembler over the whole range, moved to each run the walk decodes (`None` while a
    /// run uses it).
    decoder: Option<Box<Disassembler<'a>>>,
}

/// One executable range of a file's sections, with the bytes the file holds for it: its
/// address and bytes.
fn code_ranges<'a>(sections: &[SectionInfo], bytes: &'a [u8]) -> Vec<(u64, &'a [u8])> {
    sections
        .iter()
        .filter(|s| s.executable && s.file_size > 0)
        .filter_map(|s| {
            let at = usize::try_from(s.file_offset?).ok()?;
            let len = usize::try_from(s.file_size.min(s.size)).ok()?;
            Some((s.address, bytes.get(at..at.checked_add(len)?)?))
        })
        .collect()
}

/// Code of at least this many bytes is walked by two walkers ([`Walk::drain_beside`]).
const BESIDE_AT: usize = 512 * 1024;

/// ... and only where the tables list a start every this many bytes of code on average.
const LISTED_EVERY: usize = 4096;

/// The hint for `i`, decoded at offset `at` of `code` (its range's bytes), when the hint is all
/// the walk needs of it: an instruction it only steps over, or a return, or a direct branch
/// whose destination its last bytes give ([`branch_target`]) as the decoder did, or x86-64
/// code that otherwise steps on and whose last four bytes give the address it uses likewise.
/// Where [`quick::hint`] gives a hint, a test holds it to this one.
#[cfg(test)]
fn hint_of(isa: Isa, code: &[u8], at: usize, i: &disasm::Decoded) -> Option<u8> {
    let len = u8::try_from(i.len).ok().filter(|l| (1..=15).contains(l))?;
    let plain = !i.invalid && i.memory.is_none() && i.slot.is_none();
    let kind = if steps_over(isa, i) {
        STEP
    } else if let (Isa::X86_64, false, Flow::Next, None, Some((address, use_))) =
        (isa, i.invalid, i.flow, i.slot, i.memory)
    {
        let kind = match use_ {
            MemoryUse::Access => ACCESS | WIDE,
            MemoryUse::Address => ADDRESS | WIDE,
            MemoryUse::Immediate => return None,
        };
        (branch_target(isa, code, i.address, at, kind | len) == Some(address)).then_some(kind)?
    } else if !plain {
        return None;
    } else {
        match (i.flow, i.target) {
            (Flow::Return, None) => RETURN,
            (Flow::Call | Flow::Jump | Flow::CondJump, Some(target)) => {
                let kind = match i.flow {
                    Flow::Call => CALL,
                    Flow::Jump => JUMP,
                    _ => COND_JUMP,
                };
                [kind | WIDE, kind]
                    .into_iter()
                    .find(|&k| branch_target(isa, code, i.address, at, k | len) == Some(target))?
            }
            _ => return None,
        }
    };
    Some(kind | len)
}

/// The hint for the instruction at offset `at` of a range's `bytes`: with `quick` (x86-64
/// code), what [`quick::hint`] reads from the bytes; 0 when the walk decodes the instruction
/// itself.
fn hint_at(quick: bool, bytes: &[u8], at: usize) -> u8 {
    if quick {
        bytes.get(at..).and_then(quick::hint).unwrap_or(0)
    } else {
        0
    }
}

/// The length of the instruction `hint` describes when the walk only steps over it, else 0.
fn step_len(hint: u8) -> usize {
    if hint & KIND == STEP {
        usize::from(hint & 0xf)
    } else {
        0
    }
}

/// The destination of the direct branch at `address` (offset `at` of `code`) that `hint` (not
/// a step) describes, or the address its memory operand uses: its end plus the signed
/// displacement in its last byte, or with [`WIDE`] its last four.
fn branch_target(isa: Isa, code: &[u8], address: u64, at: usize, hint: u8) -> Option<u64> {
    let end = at + usize::from(hint & 0xf);
    let displacement = if hint & WIDE != 0 {
        i64::from(i32::from_le_bytes(
            code.get(end.checked_sub(4)?..end)?.try_into().ok()?,
        ))
    } else {
        i64::from(*code.get(end.checked_sub(1)?)? as i8)
    };
    let target = address
        .wrapping_add(u64::from(hint & 0xf))
        .wrapping_add_signed(displacement);
    Some(if isa == Isa::X86 {
        target & 0xffff_ffff
    } else {
        target
    })
}

/// The instruction at `address` (offset `at` of `code`) that `hint` describes, as far as the
/// walk and a switch's path use it: its length, how it passes control on, a branch's
/// destination and the address a memory operand uses (a step's immediate, which neither uses,
/// is left out); `None` for no hint.
fn hinted(isa: Isa, code: &[u8], address: u64, at: usize, hint: u8) -> Option<disasm::Decoded> {
    let (flow, use_) = match hint & KIND {
        STEP if step_len(hint) > 0 => (Flow::Next, None),
        ACCESS => (Flow::Next, Some(MemoryUse::Access)),
        ADDRESS => (Flow::Next, Some(MemoryUse::Address)),
        RETURN => (Flow::Return, None),
        CALL => (Flow::Call, None),
        JUMP => (Flow::Jump, None),
        COND_JUMP => (Flow::CondJump, None),
        _ => return None,
    };
    // Where a branch goes, or the address a memory operand uses.
    let displaced = || branch_target(isa, code, address, at, hint);
    let target = match flow {
        Flow::Call | Flow::Jump | Flow::CondJump => Some(displaced()?),
        _ => None,
    };
    let memory = match use_ {
        Some(use_) => Some((displaced()?, use_)),
        None => None,
    };
    Some(disasm::Decoded {
        address,
        len: usize::from(hint & 0xf),
        flow,
        target,
        memory,
        slot: None,
        invalid: false,
    })
}

/// Whether the walk does nothing with `i` but step over it: valid, not a transfer of control,
/// and with no address it keeps (32-bit code's immediates may be addresses; 64-bit code's are
/// not taken as any).
#[cfg(test)]
fn steps_over(isa: Isa, i: &disasm::Decoded) -> bool {
    !i.invalid
        && i.flow == Flow::Next
        && match i.memory {
            None => true,
            Some((_, MemoryUse::Immediate)) => isa == Isa::X86_64,
            Some(_) => false,
        }
}

impl CodeRange<'_> {
    /// Whether an instruction was decoded starting at offset `at`.
    fn seen_at(&self, at: usize) -> bool {
        self.bits[at / 64][SEEN] & (1 << (at % 64)) != 0
    }

    /// Whether a procedure starts at offset `at`.
    fn starts_at(&self, at: usize) -> bool {
        self.bits[at / 64][STARTS] & (1 << (at % 64)) != 0
    }

    /// Whether the walk of the current procedure decoded an instruction at offset `at`.
    fn visiting_at(&self, at: usize) -> bool {
        self.bits[at / 64][VISITING] & (1 << (at % 64)) != 0
    }

    /// Notes that a procedure starts at offset `at`.
    fn set_start(&mut self, at: usize) {
        self.bits[at / 64][STARTS] |= 1 << (at % 64);
    }

    /// Forgets that a procedure starts at offset `at`.
    fn clear_start(&mut self, at: usize) {
        self.bits[at / 64][STARTS] &= !(1 << (at % 64));
    }
}

/// Marks the instruction at offset `at` of code range `range` (number `r`) as decoded, and as
/// decoded by the walk of the procedure at `start` (listing the bitmap word in `visited` when
/// its first bit is set: clearing the listed words clears them all). False, where the run ends
/// there: this walk decoded it already, or it starts another procedure (a procedure's code does
/// not run on into another start: it called something that does not return, or ends where the
/// next begins). A bit per byte, not a hash set: this runs for every instruction the walk
/// reaches.
#[inline(always)]
fn mark(
    range: &mut CodeRange<'_>,
    visited: &mut Vec<(usize, usize)>,
    r: usize,
    at: usize,
    start: u64,
) -> bool {
    let (word, bit) = (at / 64, 1u64 << (at % 64));
    let lo = range.lo;
    let bits = &mut range.bits[word];
    if bits[VISITING] & bit != 0 {
        return false;
    }
    if bits[VISITING] == 0 {
        visited.push((r, word));
    }
    bits[VISITING] |= bit;
    if bits[STARTS] & bit != 0 && lo + at as u64 != start {
        return false;
    }
    bits[SEEN] |= bit;
    true
}

/// What the walk is given.
pub(crate) struct Inputs<'a> {
    pub(crate) isa: Isa,
    pub(crate) bytes: &'a [u8],
    pub(crate) sections: &'a [SectionInfo],
    /// Starts the tables list, sorted, with the extent each states (`None` when unstated).
    pub(crate) known: Vec<(u64, Option<u64>)>,
    /// Starts the file points at without listing them as functions, with how.
    pub(crate) roots: Vec<(u64, FoundBy)>,
    /// Code pointers held in data: `(value, place)`.
    pub(crate) pointers: Vec<(u64, u64)>,
    /// Stubs and thunks of imports that never return, and the pointer slots (IAT, GOT) an
    /// indirect call to one reads, sorted.
    pub(crate) noreturn: Vec<u64>,
    /// Whether to decode at all (a file whose tables list every function needs no walk).
    pub(crate) follow: bool,
}

/// A start the walk found: its address, how, and the extent its walk decoded (from the start
/// to the end of the furthest instruction reached) when the walk ran.
pub(crate) type Found = (u64, FoundBy, Option<u64>);

/// What the walk found.
pub(crate) struct Discovered {
    /// The new starts (not among `known`), sorted by address.
    pub(crate) found: Vec<Found>,
    /// For listed starts whose extent no table states, the extent their walk decoded:
    /// `(start, size)`, sorted.
    pub(crate) sizes: Vec<(u64, u64)>,
}

/// The new starts (not among `known`), and the extents of listed starts no table sizes.
pub(crate) fn discover(inputs: Inputs<'_>) -> Discovered {
    let ranges = code_ranges(inputs.sections, inputs.bytes);
    let code: usize = ranges.iter().map(|(_, b)| b.len()).sum();
    // Two walkers pay where starts are listed all through the code (unwind entries): each
    // takes its own end of them, and little of what they find changes what the other did.
    // Where few are listed, the walk goes from call to call and finds most starts itself.
    // Each run is decoded from its first instruction on (the AArch64 decoder forgets what
    // registers held when it is moved there), so a run reads the same in either walker.
    let beside = inputs.follow
        && code >= BESIDE_AT
        && inputs.known.len() >= code / LISTED_EVERY
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let beside = if beside { Beside::Thread } else { Beside::None };
    walk(&inputs, &ranges, true, beside).0
}

/// How the walk of the starts given is shared with a second walker ([`Walk::drain_beside`]).
#[derive(Clone, Copy)]
enum Beside {
    /// Not shared.
    None,
    /// A thread walks the highest starts while this one walks the lowest, until they meet.
    Thread,
    /// (Tests) the starts from this one on (in address order) are walked aside first, then the
    /// rest here.
    #[cfg(test)]
    From(usize),
}

/// [`discover`] over the code `ranges` of `inputs`, with `quick` what [`quick::hint`] reads,
/// shared with a second walker as `beside` says; with the number of starts whose walk by the
/// other walker was taken as it was.
fn walk(
    inputs: &Inputs<'_>,
    ranges: &[(u64, &[u8])],
    quick: bool,
    beside: Beside,
) -> (Discovered, usize) {
    let mut walk = Walk::new(inputs, ranges, quick);
    for &(address, how) in &inputs.roots {
        walk.add(address, how);
    }
    if !inputs.follow || !disasm::supported(inputs.isa) {
        return (walk.finish(), 0);
    }
    // Listed starts first, then the roots, then what their calls reach.
    let mut queue: Vec<u64> = inputs.known.iter().map(|&(a, _)| a).collect();
    queue.extend(walk.found.keys().copied());
    queue.sort_unstable();
    queue.dedup();
    queue.reverse();
    let taken = match beside {
        Beside::None => {
            walk.drain(&mut queue);
            0
        }
        Beside::Thread => walk.drain_beside(inputs, ranges, &mut queue, None),
        #[cfg(test)]
        Beside::From(k) => walk.drain_beside(inputs, ranges, &mut queue, Some(k)),
    };
    // The jump tables of the procedure walked last are decoded again when asked for later,
    // whichever walker decoded it: what is counted against the budget then does not depend
    // on where the two walkers met.
    walk.tables = None;
    // Code pointers (in data, and computed by code: `lea rsi, [rip+f_parser]`), once every
    // start direct flow reaches is known, lowest first so that a procedure is walked before
    // the pointers into it are judged: a pointer into a procedure's extent, or into its own
    // table of labels (a computed `goto`), is not a start; the labels are walked as its code.
    let mut judged = Places::default();
    loop {
        let mut progress = false;
        for (value, owner) in walk.label_tables(&inputs.pointers, &mut judged) {
            progress |= walk.walk_blocks(owner, value, &mut queue);
        }
        let mut candidates: Vec<u64> = std::mem::take(&mut walk.code_refs);
        let after_traps = std::mem::take(&mut walk.after_traps);
        let from_data: Vec<u64> = inputs
            .pointers
            .iter()
            .filter(|&&(_, place)| judged.insert(place))
            .map(|&(value, _)| value)
            .collect();
        // 32-bit MSVC code's catch blocks are reached only through its exception tables,
        // whose pointers lead into the procedure they belong to: they are walked as its code.
        if inputs.isa == Isa::X86 {
            for &value in &from_data {
                if walk.interior(value)
                    && !walk.seen(value)
                    && let Some(owner) = walk.owner(value)
                {
                    progress |= walk.walk_blocks(owner, value, &mut queue);
                }
            }
        }
        candidates.extend(from_data);
        progress |= walk.judge(candidates, FoundBy::Pointer, &mut queue);
        // What follows a call that does not return and its padding, once no pointer and no
        // walk claims it.
        progress |= walk.judge(after_traps, FoundBy::AfterTrap, &mut queue);
        if !progress || walk.decoded >= MAX_INSTRUCTIONS {
            break;
        }
    }
    (walk.finish(), taken)
}

/// A table's distinct destinations, sorted, when every one lies in its procedure's section after
/// the procedure's start (`hi` is the section's end); none otherwise.
fn inside(table: Option<JumpTable>, start: u64, hi: u64) -> Vec<u64> {
    let Some(table) = table else {
        return Vec::new();
    };
    if table.targets.iter().any(|&t| t < start || t >= hi) {
        return Vec::new();
    }
    let mut targets = table.targets;
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// What the walk of one start did, as a second walker saw it: it walked the start alone, with
/// the starts the file gives and none found by the walk ([`Walk::speculate`]). The walk
/// takes it as its own when no start found since lies where it decides what that walk does
/// ([`Walk::replay`]).
struct Trace {
    start: u64,
    /// Whether the walk stayed within the budget.
    within: bool,
    decoded: usize,
    /// The end of the furthest instruction decoded.
    reach: Option<u64>,
    /// The words of [`SEEN`] bits it set, in [`Traces::seen`].
    seen: std::ops::Range<usize>,
    /// Where its lists begin and end in [`Traces::values`]: the starts its calls added, the
    /// jumps that left it, the addresses of code and the `int3` padding ends it kept, and the
    /// addresses of data its code used.
    lists: [usize; 6],
}

/// The [`Trace`]s of a second walker, highest start first, with what they list.
#[derive(Default)]
struct Traces {
    traces: Vec<Trace>,
    /// `(range, word, bits)`.
    seen: Vec<(usize, usize, u64)>,
    values: Vec<u64>,
}

impl Traces {
    /// The lists of `trace` ([`Trace::lists`]), in that order.
    fn lists(&self, trace: &Trace) -> [&[u64]; 5] {
        let l = &trace.lists;
        std::array::from_fn(|n| &self.values[l[n]..l[n + 1]])
    }
}

/// Which walker walks which of the starts given: this one takes them lowest first up to
/// `.0`, the other highest first down to `.1`.
type Claims = std::sync::Mutex<(usize, usize)>;

/// Places of pointers in data (those judged, those holding one).
type Places = HashSet<u64, foldhash::fast::RandomState>;

/// The second walker: walks the starts of `order` highest first ([`Walk::speculate`]) while
/// `claims` leaves any to it.
fn walk_aside(
    inputs: &Inputs<'_>,
    ranges: &[(u64, &[u8])],
    order: &[u64],
    claims: &Claims,
) -> Traces {
    let mut walk = Walk::new(inputs, ranges, true);
    for &(address, how) in &inputs.roots {
        walk.add(address, how);
    }
    let mut traces = Traces::default();
    let mut blocks = Vec::new();
    loop {
        let next = {
            let mut c = claims.lock().unwrap_or_else(|e| e.into_inner());
            if c.1 <= c.0 {
                break;
            }
            c.1 -= 1;
            c.1
        };
        walk.speculate(order[next], &mut blocks, &mut traces);
    }
    traces
}

struct Walk<'a> {
    isa: Isa,
    /// Whether [`quick::hint`] reads the instructions it can.
    quick: bool,
    code: Vec<CodeRange<'a>>,
    known: &'a [(u64, Option<u64>)],
    noreturn: NoReturn<'a>,
    found: BTreeMap<u64, FoundBy>,
    /// Data addresses code refers to, with the start of the procedure whose walk saw it.
    data_refs: HashMap<u64, u64, foldhash::fast::RandomState>,
    /// For each start walked, the end of the furthest instruction its walk decoded.
    extent: HashMap<u64, u64, foldhash::fast::RandomState>,
    /// Instructions decoded by the current procedure's walk: each walk decodes its own code
    /// whole, even where another walk ran into it first.
    visited: Vec<(usize, usize)>,
    /// Addresses of code that code computes, judged as pointers once the queue is empty.
    code_refs: Vec<u64>,
    /// x86: the first byte after the `int3` padding that ends a call the compiler marked as
    /// not returning, judged like the pointers.
    after_traps: Vec<u64>,
    /// Targets of jumps that leave their procedure, judged when the queue is empty.
    pending: Vec<u64>,
    sections: &'a [SectionInfo],
    bytes: &'a [u8],
    decoded: usize,
    /// The jump tables of the procedure walked last, found by decoding it straight on.
    tables: Option<Tables<'a>>,
    /// The procedure walked last and the first start after it (see [`Walk::next_start`]).
    next_after: Option<(u64, Option<u64>)>,
}

/// The stubs and slots of imports that never return ([`Inputs::noreturn`]), asked about at
/// every direct branch and call the walk decodes: a bit for each 16-byte line, folded into 4096
/// bits, answers most of them before the sorted list does.
struct NoReturn<'a> {
    sorted: &'a [u64],
    lines: Box<[u64; 64]>,
}

impl<'a> NoReturn<'a> {
    fn new(sorted: &'a [u64]) -> NoReturn<'a> {
        let mut lines = Box::new([0u64; 64]);
        for &a in sorted {
            let line = NoReturn::line(a);
            lines[line / 64] |= 1 << (line % 64);
        }
        NoReturn { sorted, lines }
    }

    fn line(address: u64) -> usize {
        (address >> 4) as usize % 4096
    }

    fn contains(&self, address: u64) -> bool {
        let line = NoReturn::line(address);
        self.lines[line / 64] & (1 << (line % 64)) != 0
            && self.sorted.binary_search(&address).is_ok()
    }
}

/// The procedure at `start` decoded in address order up to `pos`, with the table of each
/// indirect jump passed: a table's guard may lie on a path another run of the walk decoded
/// (`cmp w2, #17; b.ls table; b default`), so the runs alone do not show it.
struct Tables<'a> {
    start: u64,
    decoder: Disassembler<'a>,
    /// Whether `decoder` stands at `pos` (not when the last instruction was read from a hint).
    decoder_at_pos: bool,
    path: Path,
    /// The end of the last instruction decoded.
    pos: u64,
    found: HashMap<u64, Option<JumpTable>>,
    /// Registers the procedure set to addresses before each jump, read once.
    hoisted: jumptable::HoistedBases,
}

impl<'a> Walk<'a> {
    fn new(inputs: &'a Inputs<'a>, ranges: &[(u64, &'a [u8])], quick: bool) -> Walk<'a> {
        let mut code: Vec<CodeRange<'a>> = ranges
            .iter()
            .map(|&(lo, bytes)| CodeRange {
                lo,
                hi: lo.saturating_add(bytes.len() as u64),
                bytes,
                bits: BitPages::new(bytes.len().div_ceil(64)),
                decoder: Some(Box::new(Disassembler::new(inputs.isa, bytes, lo, false))),
            })
            .collect();
        for range in &mut code {
            let from = inputs.known.partition_point(|k| k.0 < range.lo);
            let (lo, hi) = (range.lo, range.hi);
            for &(start, _) in inputs.known[from..].iter().take_while(|k| k.0 < hi) {
                range.set_start((start - lo) as usize);
            }
        }
        Walk {
            isa: inputs.isa,
            quick: quick && inputs.isa == Isa::X86_64,
            code,
            known: &inputs.known,
            noreturn: NoReturn::new(&inputs.noreturn),
            found: BTreeMap::new(),
            data_refs: HashMap::default(),
            // An extent for each listed start the walk reaches, which is most of them.
            extent: HashMap::with_capacity_and_hasher(inputs.known.len(), Default::default()),
            pending: Vec::new(),
            code_refs: Vec::new(),
            after_traps: Vec::new(),
            visited: Vec::new(),
            sections: inputs.sections,
            bytes: inputs.bytes,
            decoded: 0,
            tables: None,
            next_after: None,
        }
    }

    /// The size of a code pointer in data: 4 bytes for 32-bit x86, else 8.
    fn pointer_width(&self) -> u64 {
        if self.isa == Isa::X86 { 4 } else { 8 }
    }

    fn range(&self, address: u64) -> Option<usize> {
        self.code
            .iter()
            .position(|r| address >= r.lo && address < r.hi)
    }

    fn is_known_start(&self, address: u64) -> bool {
        match self.range(address) {
            Some(r) => self.code[r].starts_at((address - self.code[r].lo) as usize),
            None => {
                self.known.binary_search_by_key(&address, |k| k.0).is_ok()
                    || self.found.contains_key(&address)
            }
        }
    }

    /// Whether `address` lies inside a listed procedure's stated extent (not at its start).
    fn inside_listed(&self, address: u64) -> bool {
        let i = self.known.partition_point(|k| k.0 <= address);
        i > 0 && {
            let (start, size) = self.known[i - 1];
            start < address && size.is_some_and(|s| address - start < s)
        }
    }

    /// Steps over the instructions whose hints say so ([`hint_at`]) from offset `at` of code
    /// range `r` on (`hint` is the hint there), as [`Walk::block`] would one at a time for the
    /// procedure at `start`, up to the first that is not one. Returns the offset after the last
    /// one stepped over with the hint there, and whether the run ends there (see [`mark`]).
    fn step_over(
        &mut self,
        r: usize,
        start: u64,
        mut at: usize,
        mut hint: u8,
    ) -> (usize, u8, bool) {
        let Walk {
            code,
            visited,
            quick,
            ..
        } = self;
        let range = &mut code[r];
        let bytes = range.bytes;
        let mut stepped = 0;
        let ends = loop {
            let len = step_len(hint);
            if len == 0 {
                break false;
            }
            if !mark(range, visited, r, at, start) {
                break true;
            }
            stepped += 1;
            at += len;
            hint = hint_at(*quick, bytes, at);
        };
        self.decoded += stepped;
        (at, hint, ends)
    }

    /// Forgets what the walk of the last procedure decoded.
    fn clear_visited(&mut self) {
        for (r, word) in self.visited.drain(..) {
            self.code[r].bits[word][VISITING] = 0;
        }
    }

    /// Whether the walk of the current procedure decoded an instruction at `address`.
    fn visiting(&self, address: u64) -> bool {
        self.range(address)
            .is_some_and(|r| self.code[r].visiting_at((address - self.code[r].lo) as usize))
    }

    /// Whether an instruction was decoded at `address` already.
    fn seen(&self, address: u64) -> bool {
        self.range(address).is_some_and(|r| {
            let at = (address - self.code[r].lo) as usize;
            self.code[r].seen_at(at)
        })
    }

    /// Records a new start; whether it was new.
    fn add(&mut self, address: u64, how: FoundBy) -> bool {
        if self.found.len() >= MAX_NEW_STARTS
            || self.range(address).is_none()
            || (self.isa == Isa::Arm64 && !address.is_multiple_of(4))
            || self.is_known_start(address)
            || self.inside_listed(address)
        {
            return false;
        }
        self.found.insert(address, how);
        if let Some((of, next)) = &mut self.next_after
            && address > *of
            && next.is_none_or(|n| address < n)
        {
            *next = Some(address);
        }
        if let Some(r) = self.range(address) {
            let lo = self.code[r].lo;
            self.code[r].set_start((address - lo) as usize);
        }
        true
    }

    /// Pointers that belong to a table of labels, as `(value, owner)`: a run of pointers that
    /// code of one procedure refers to, whose values point back into that same procedure.
    /// Each place is judged once (`judged`).
    fn label_tables(&self, pointers: &[(u64, u64)], judged: &mut Places) -> Vec<(u64, u64)> {
        let mut by_place: Vec<(u64, u64)> = pointers.iter().map(|&(v, p)| (p, v)).collect();
        by_place.sort_unstable();
        // Only an address code refers to that holds a pointer may start a table: the few
        // such among the many addresses of data code refers to are picked out before sorting.
        let places: Places = by_place.iter().map(|&(p, _)| p).collect();
        let mut tables: Vec<(u64, u64)> = self
            .data_refs
            .iter()
            .filter(|(t, _)| places.contains(*t))
            .map(|(&t, &o)| (t, o))
            .collect();
        tables.sort_unstable();
        let mut labels = Vec::new();
        // The tables ascend, so each one's first place lies at or after the one before's.
        let mut first = 0;
        for (table, owner) in tables {
            first += by_place[first..].partition_point(|&(p, _)| p < table);
            let mut expect = table;
            // A run of consecutive words from the referenced address on.
            for &(place, value) in &by_place[first..] {
                if place != expect {
                    break;
                }
                if value != owner && self.owner(value) == Some(owner) && judged.insert(place) {
                    labels.push((value, owner));
                }
                expect = place + self.pointer_width();
            }
        }
        labels
    }

    /// Walks code at `block` as part of the procedure at `start`; whether anything new was
    /// decoded.
    fn walk_blocks(&mut self, start: u64, block: u64, queue: &mut Vec<u64>) -> bool {
        if self.seen(block) || self.range(block).is_none() {
            return false;
        }
        self.clear_visited();
        if self.walk_procedure(start, block, &mut Vec::new(), queue) {
            self.drain(queue);
        }
        true
    }

    /// Walks the run at `block`, and those it reaches, as code of the procedure at `start`
    /// (`blocks` holds the runs to walk), then records how far they reached; false when the
    /// budget ran out first.
    fn walk_procedure(
        &mut self,
        start: u64,
        block: u64,
        blocks: &mut Vec<u64>,
        queue: &mut Vec<u64>,
    ) -> bool {
        blocks.clear();
        blocks.push(block);
        let mut reach: Option<u64> = None;
        let mut within = true;
        while let Some(block) = blocks.pop() {
            if self.decoded >= MAX_INSTRUCTIONS {
                within = false;
                break;
            }
            // A run from an instruction this walk decoded already ends there, adding nothing
            // (and its end lies below the reach): half the runs on a branch's far side.
            if self.visiting(block) {
                continue;
            }
            if let Some(end) = self.block(start, block, blocks, queue) {
                reach = Some(reach.map_or(end, |r| r.max(end)));
            }
        }
        if let Some(end) = reach {
            let e = self.extent.entry(start).or_insert(end);
            *e = (*e).max(end);
        }
        within
    }

    /// Whether code may start at `address`: inside code, not decoded already as part of
    /// another procedure, and decoding to a control transfer without an invalid instruction.
    fn plausible_start(&self, address: u64) -> bool {
        let Some(r) = self.range(address) else {
            return false;
        };
        let range = &self.code[r];
        let offset = (address - range.lo) as usize;
        if range.seen_at(offset) {
            return false;
        }
        let mut d = Disassembler::new(self.isa, &range.bytes[offset..], address, false);
        for _ in 0..64 {
            let Some(i) = d.next(None) else { return false };
            if i.invalid {
                return false;
            }
            if i.flow != Flow::Next {
                return true;
            }
        }
        true
    }

    /// Keeps the first byte after the `int3` padding at offset `at` of code range `r`, on x86,
    /// as a start to judge: the code after a call that does not return.
    fn after_trap(&mut self, r: usize, at: usize) {
        let range = &self.code[r];
        if self.isa == Isa::Arm64 || range.bytes.get(at) != Some(&0xcc) {
            return;
        }
        let padding = range.bytes[at..].iter().take_while(|&&b| b == 0xcc).count();
        if at + padding < range.bytes.len() {
            self.after_traps.push(range.lo + (at + padding) as u64);
        }
    }

    /// Adds each of `values` that may start code outside every extent known, found `how`, and
    /// walks it; whether any was added.
    fn judge(&mut self, mut values: Vec<u64>, how: FoundBy, queue: &mut Vec<u64>) -> bool {
        values.sort_unstable();
        values.dedup();
        let mut added = false;
        for value in values {
            if self.interior(value) || !self.plausible_start(value) {
                continue;
            }
            if self.add(value, how) {
                queue.push(value);
                self.drain(queue);
                added = true;
            }
        }
        added
    }

    /// Walks the start at `start` as [`Walk::drain`] would with no start found yet, keeps what
    /// that walk did in `out`, and forgets it.
    fn speculate(&mut self, start: u64, blocks: &mut Vec<u64>, out: &mut Traces) {
        self.decoded = 0;
        self.tables = None;
        let mut added = Vec::new();
        let within = self.walk_procedure(start, start, blocks, &mut added);
        let seen = out.seen.len();
        for &(r, word) in &self.visited {
            let bits = &mut self.code[r].bits[word];
            out.seen.push((r, word, bits[SEEN]));
            bits[SEEN] = 0;
        }
        self.clear_visited();
        for &address in &added {
            self.found.remove(&address);
            if let Some(r) = self.range(address) {
                let lo = self.code[r].lo;
                self.code[r].clear_start((address - lo) as usize);
            }
        }
        self.next_after = None;
        let mut lists = [out.values.len(); 6];
        out.values.append(&mut added);
        lists[1] = out.values.len();
        out.values.append(&mut self.pending);
        lists[2] = out.values.len();
        out.values.append(&mut self.code_refs);
        lists[3] = out.values.len();
        out.values.append(&mut self.after_traps);
        lists[4] = out.values.len();
        out.values
            .extend(self.data_refs.drain().map(|(address, _)| address));
        lists[5] = out.values.len();
        out.traces.push(Trace {
            start,
            within,
            decoded: self.decoded,
            reach: self.extent.remove(&start),
            seen: seen..out.seen.len(),
            lists,
        });
    }

    /// Takes `trace` as this walk's own walk of its start, when that walk would have done the
    /// same here: no start found since the file's (`rooted` are the roots) lies between the
    /// start and the end of what it decoded or the next listed start, where a start ends a
    /// run or makes a jump leave; and the budgets hold. Its calls' new starts go on `queue` as
    /// that walk would have put them. False (nothing done) otherwise.
    fn replay(
        &mut self,
        trace: &Trace,
        traces: &Traces,
        rooted: &[u64],
        queue: &mut Vec<u64>,
    ) -> bool {
        let [added, pending, code_refs, after_traps, data_refs] = traces.lists(trace);
        if !trace.within
            || self.decoded + trace.decoded >= MAX_INSTRUCTIONS
            || self.found.len() + added.len() >= MAX_NEW_STARTS
        {
            return false;
        }
        let start = trace.start;
        if let Some(r) = self.range(start) {
            let next = self.known.partition_point(|k| k.0 <= start);
            let bound = self
                .known
                .get(next)
                .map_or(u64::MAX, |k| k.0)
                .min(self.code[r].hi)
                .max(trace.reach.unwrap_or(0));
            if bound > start + 1
                && self
                    .found
                    .range(start + 1..bound)
                    .any(|(a, _)| rooted.binary_search(a).is_err())
            {
                return false;
            }
        }
        for &(r, word, bits) in &traces.seen[trace.seen.clone()] {
            self.code[r].bits[word][SEEN] |= bits;
        }
        self.decoded += trace.decoded;
        if let Some(end) = trace.reach {
            let e = self.extent.entry(start).or_insert(end);
            *e = (*e).max(end);
        }
        for &address in data_refs {
            self.data_refs.entry(address).or_insert(start);
        }
        self.pending.extend_from_slice(pending);
        self.code_refs.extend_from_slice(code_refs);
        self.after_traps.extend_from_slice(after_traps);
        for &address in added {
            if self.add(address, FoundBy::Call) {
                queue.push(address);
            }
        }
        self.tables = None;
        true
    }

    /// [`Walk::drain`], with a second walker taking the starts on `queue` highest first
    /// ([`walk_aside`]) while this one takes them lowest first; past where they met, this one
    /// takes the other's walks as its own where they hold ([`Walk::replay`]), else walks
    /// them again, so what is found does not depend on where they met. With `first` (tests),
    /// the other walker walks the starts from that one on (in address order) before this one
    /// begins. Returns how many walks were taken from the other walker.
    fn drain_beside(
        &mut self,
        inputs: &Inputs<'_>,
        ranges: &[(u64, &[u8])],
        queue: &mut Vec<u64>,
        first: Option<usize>,
    ) -> usize {
        let order: Vec<u64> = queue.iter().rev().copied().collect();
        let rooted: Vec<u64> = self.found.keys().copied().collect();
        let claims: Claims = std::sync::Mutex::new((0, order.len()));
        let claims_now = || claims.lock().unwrap_or_else(|e| e.into_inner());
        let (taken, within) = std::thread::scope(|threads| {
            // The other walker's walks: its thread until they are needed.
            let mut aside = match first {
                Some(k) => {
                    *claims_now() = (k, order.len());
                    let traces = walk_aside(inputs, ranges, &order, &claims);
                    *claims_now() = (0, k);
                    Err(traces)
                }
                // Without that thread (the process is at its limit), this walker takes all.
                None => Ok(std::thread::Builder::new()
                    .name("rea-walk-aside".into())
                    .spawn_scoped(threads, || walk_aside(inputs, ranges, &order, &claims))
                    .ok()),
            };
            let (mut next, mut taken) = (0, 0);
            let mut blocks: Vec<u64> = Vec::new();
            while let Some(start) = queue.pop() {
                self.clear_visited();
                // The starts given come off the queue in address order, between the starts
                // their walks add.
                if order.get(next) == Some(&start) {
                    next += 1;
                    let mine = {
                        let mut c = claims_now();
                        let mine = next - 1 < c.1;
                        if mine {
                            c.0 = next;
                        }
                        mine
                    };
                    if !mine {
                        if let Ok(thread) = &mut aside {
                            let traces = thread.take().and_then(|t| t.join().ok());
                            aside = Err(traces.unwrap_or_default());
                        }
                        if let Err(traces) = &aside
                            && let Some(trace) = traces.traces.get(order.len() - next)
                            && trace.start == start
                            && self.replay(trace, traces, &rooted, queue)
                        {
                            taken += 1;
                            continue;
                        }
                    }
                }
                if !self.walk_procedure(start, start, &mut blocks, queue) {
                    claims_now().1 = 0;
                    return (taken, false);
                }
            }
            (taken, true)
        });
        // Every start given is walked: what their jumps out reach is walked as usual.
        if within {
            self.drain(queue);
        }
        taken
    }

    /// Walks every start on `queue` (and what they reach) until none is left or the budget
    /// is spent.
    fn drain(&mut self, queue: &mut Vec<u64>) {
        let mut blocks: Vec<u64> = Vec::new();
        loop {
            while let Some(start) = queue.pop() {
                self.clear_visited();
                if !self.walk_procedure(start, start, &mut blocks, queue) {
                    return;
                }
            }
            self.judge_pending(queue);
            if queue.is_empty() {
                return;
            }
        }
    }

    /// Judges the jumps out of their procedure once every walk so far is done, when the
    /// extents they may land in are known; new starts go on `queue`.
    fn judge_pending(&mut self, queue: &mut Vec<u64>) {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        pending.dedup();
        for t in pending {
            if !self.seen(t) && !self.interior(t) && self.add(t, FoundBy::TailJump) {
                queue.push(t);
            }
        }
    }

    /// The start nearest below `address`, listed or found.
    fn owner(&self, address: u64) -> Option<u64> {
        let i = self.known.partition_point(|k| k.0 <= address);
        let listed = i.checked_sub(1).map(|i| self.known[i].0);
        let found = self.found.range(..=address).next_back().map(|(&a, _)| a);
        listed.max(found)
    }

    /// Whether `address` lies inside the extent of the start nearest below it: the extent a
    /// table states, else the end of the code its walk decoded.
    fn interior(&self, address: u64) -> bool {
        let i = self.known.partition_point(|k| k.0 <= address);
        let listed = i.checked_sub(1).map(|i| self.known[i]);
        let found = self.found.range(..=address).next_back().map(|(&a, _)| a);
        let end = match (listed, found) {
            (Some((l, size)), f) if f.is_none_or(|f| f < l) => size
                .map(|s| l.saturating_add(s))
                .or(self.extent.get(&l).copied()),
            (_, Some(f)) => self.extent.get(&f).copied(),
            _ => None,
        };
        end.is_some_and(|end| address < end)
    }

    /// [`Walk::next_start`], kept for the procedure whose runs are being decoded: a walk
    /// decodes many runs of one procedure, and the search misses the cache in a large file.
    fn next_start_of_walk(&mut self, start: u64) -> Option<u64> {
        match self.next_after {
            Some((of, next)) if of == start => next,
            _ => {
                let next = self.next_start(start);
                self.next_after = Some((start, next));
                next
            }
        }
    }

    /// The first start (listed or found) after `start`: a jump at or beyond it leaves the
    /// procedure at `start`.
    fn next_start(&self, start: u64) -> Option<u64> {
        let i = self.known.partition_point(|k| k.0 <= start);
        let listed = self.known.get(i).map(|k| k.0);
        let found = self
            .found
            .range(start.saturating_add(1)..)
            .next()
            .map(|(&a, _)| a);
        match (listed, found) {
            (Some(l), Some(f)) => Some(l.min(f)),
            (l, f) => l.or(f),
        }
    }

    /// Decodes one run of straight-line code of the procedure at `start` from `block`; the end
    /// of the last instruction it decoded (`block` when none), unless `block` is not code.
    fn block(
        &mut self,
        start: u64,
        block: u64,
        blocks: &mut Vec<u64>,
        queue: &mut Vec<u64>,
    ) -> Option<u64> {
        let r = self.range(block)?;
        let (lo, hi) = (self.code[r].lo, self.code[r].hi);
        let bytes = self.code[r].bytes;
        // The range's disassembler is moved to where it is first needed: most instructions
        // are hinted. Only it goes back (one started inside the range cannot seek to its
        // start).
        let (mut d, whole) = match self.code[r].decoder.take() {
            Some(d) => (d, true),
            None => (
                Box::new(Disassembler::new(
                    self.isa,
                    &bytes[(block - lo) as usize..],
                    block,
                    false,
                )),
                false,
            ),
        };
        let mut end = block;
        // Addresses of code this run computes; kept as pointers unless the run ends in an
        // indirect jump, whose base they are (AArch64's `adr x1, base; add x0, x1, w0, sxtb
        // #2; br x0`).
        let mut run_code_refs: Vec<u64> = Vec::new();
        let mut indirect = false;
        let mut after_call = false;
        // The last address of data this run computed (`lea rdx, [rip+table]`), for a switch
        // the recogniser cannot prove (see `loose_switch_targets`).
        let mut table: Option<u64> = None;
        // Read once a run rather than at every jump; a call found in the run may lower it.
        let mut next_start = self.next_start_of_walk(start);
        // Where the next instruction starts, and whether `d` stands there.
        let (mut pc, mut in_step) = (block, !whole);
        // The hint where a run of steps stopped, read there already.
        let mut read: Option<u8> = None;
        loop {
            let at = (pc - lo) as usize;
            // Instructions hinted as steps are stepped over as a run; a return or direct branch
            // hinted is rebuilt from its bytes; any other instruction is decoded here.
            let hint = read
                .take()
                .unwrap_or_else(|| hint_at(self.quick, bytes, at));
            if step_len(hint) > 0 {
                let (next, next_hint, ends) = self.step_over(r, start, at, hint);
                if next > at {
                    pc = lo + next as u64;
                    end = pc;
                    after_call = false;
                    in_step = false;
                }
                if ends {
                    break;
                }
                read = Some(next_hint);
                continue;
            }
            let i = if let Some(i) = hinted(self.isa, bytes, pc, at, hint) {
                in_step = false;
                i
            } else {
                if !in_step {
                    in_step = d.seek(pc);
                }
                let Some(i) = d.next(None).filter(|_| in_step) else {
                    break;
                };
                i
            };
            if !mark(&mut self.code[r], &mut self.visited, r, at, start) {
                break;
            }
            self.decoded += 1;
            if i.invalid {
                break;
            }
            pc = i.address + i.len as u64;
            end = pc;
            if let Some((address, use_)) = i.memory
                && matches!(use_, MemoryUse::Address | MemoryUse::Access)
                && self.range(address).is_none()
            {
                self.data_refs.entry(address).or_insert(start);
                if use_ == MemoryUse::Address {
                    table = Some(address);
                }
            } else if let Some((address, use_)) = i.memory
                && (use_ == MemoryUse::Address
                    || (use_ == MemoryUse::Immediate && self.isa == Isa::X86))
                && !self.is_known_start(address)
            {
                // Code computing the address of code: a function pointer, or a label (32-bit
                // x86 puts it in an immediate: `push offset handler`, `mov [esi], offset f`).
                run_code_refs.push(address);
            }
            let in_code = |t: u64| t >= lo && t < hi;
            // Where a jump to `t` goes: on in this procedure, or out of it (judged later).
            let leaves = |t: u64| t < start || !in_code(t) || next_start.is_some_and(|n| n <= t);
            let mut jump = |walk: &mut Walk<'_>, t: u64| {
                if walk.is_known_start(t) || walk.noreturn.contains(t) {
                    return;
                }
                if leaves(t) {
                    walk.pending.push(t);
                } else {
                    blocks.push(t);
                }
            };
            match i.flow {
                Flow::Next => {}
                Flow::IndirectCall => {
                    // `call [__imp_exit]`: the call through an import's slot does not return.
                    if i.slot.is_some_and(|slot| self.noreturn.contains(slot)) {
                        self.after_trap(r, at + i.len);
                        break;
                    }
                }
                Flow::Call => {
                    if let Some(t) = i.target {
                        if self.noreturn.contains(t) {
                            self.after_trap(r, at + i.len);
                            break;
                        }
                        if t != end && self.add(t, FoundBy::Call) {
                            queue.push(t);
                            if t > start {
                                next_start = Some(next_start.map_or(t, |n| n.min(t)));
                            }
                        }
                    }
                }
                Flow::CondJump => {
                    if let Some(t) = i.target {
                        jump(self, t);
                    }
                }
                Flow::Jump => {
                    if let Some(t) = i.target {
                        jump(self, t);
                    }
                    break;
                }
                Flow::IndirectJump => {
                    indirect = true;
                    let mut targets = self.switch_targets(start, i.address, hi);
                    if targets.is_empty()
                        && let Some(table) = table
                    {
                        targets = self.loose_switch_targets(block, i.address, table, start, hi);
                    }
                    if targets.is_empty() && self.isa == Isa::Arm64 {
                        targets = self.loose_arm64_targets(start, block, i.address, hi);
                    }
                    for t in targets {
                        jump(self, t);
                    }
                    break;
                }
                Flow::Return => {
                    // `call f; int3 …`: f does not return, and what follows the padding is
                    // not this run's code.
                    if after_call {
                        self.after_trap(r, at);
                    }
                    break;
                }
            }
            after_call = matches!(i.flow, Flow::Call | Flow::IndirectCall);
        }
        if !indirect {
            self.code_refs.append(&mut run_code_refs);
        }
        if whole {
            self.code[r].decoder = Some(d);
        }
        Some(end)
    }

    /// The destinations of the switch whose indirect jump at `jump` ends a run of the
    /// procedure at `start`, kept only while every one lies in that procedure's section after
    /// its start (`hi` is the section's end).
    fn switch_targets(&mut self, start: u64, jump: u64, hi: u64) -> Vec<u64> {
        inside(self.table_at(start, jump), start, hi)
    }

    /// For discovery only, an x86-64 table of 32-bit offsets from its own start (`lea rdx,
    /// [rip+table]; movsxd rax, [rdx+rax*4]; add rax, rdx; jmp rax`) that the run from `block`
    /// to the jump at `jump` computed, with as many entries as the last constant that run
    /// compared with allows. The recogniser proves fewer switches (a guard it cannot tie to the
    /// index, code between them), and the functions only a switch's cases call are found
    /// through these. Kept only while every entry lands in the procedure's section after its
    /// start, as a switch's cases do; `callees` and call paths never use it.
    fn loose_switch_targets(
        &self,
        block: u64,
        jump: u64,
        table: u64,
        start: u64,
        hi: u64,
    ) -> Vec<u64> {
        let Some(r) = self.range(block).filter(|_| self.isa == Isa::X86_64) else {
            return Vec::new();
        };
        let range = &self.code[r];
        let (from, to) = ((block - range.lo) as usize, (jump - range.lo) as usize);
        let mut decoder = iced_x86::Decoder::with_ip(
            64,
            &range.bytes[from..to],
            block,
            iced_x86::DecoderOptions::NONE,
        );
        let mut bound: Option<u64> = None;
        for instruction in &mut decoder {
            if instruction.mnemonic() == iced_x86::Mnemonic::Cmp
                && instruction.op_count() == 2
                && matches!(
                    instruction.op1_kind(),
                    iced_x86::OpKind::Immediate8
                        | iced_x86::OpKind::Immediate8to32
                        | iced_x86::OpKind::Immediate8to64
                        | iced_x86::OpKind::Immediate32
                        | iced_x86::OpKind::Immediate32to64
                )
            {
                bound = Some(instruction.immediate(1));
            }
        }
        let Some(bound) = bound.filter(|&b| b < 4096) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for k in 0..=bound {
            let Some(entry) = section_bytes(self.sections, self.bytes, table + 4 * k, 4)
                .and_then(|b| b.try_into().ok())
                .map(i32::from_le_bytes)
            else {
                return Vec::new();
            };
            let t = table.wrapping_add_signed(i64::from(entry));
            if t < start || t >= hi {
                return Vec::new();
            }
            out.push(t);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The destinations of an AArch64 switch whose base and guard lie far from its jump
    /// ([`jumptable::loose_arm64`]), kept only while every one lies in the procedure's section
    /// after its start (`hi` is the section's end).
    fn loose_arm64_targets(&self, start: u64, block: u64, jump: u64, hi: u64) -> Vec<u64> {
        let (sections, bytes) = (self.sections, self.bytes);
        let read = move |address: u64, len: usize| section_bytes(sections, bytes, address, len);
        inside(jumptable::loose_arm64(start, block, jump, &read), start, hi)
    }

    /// The jump table of the indirect jump at `jump` in the procedure at `start`, decoding
    /// the procedure from its start (or from where the last look stopped) up to it.
    fn table_at(&mut self, start: u64, jump: u64) -> Option<JumpTable> {
        let r = self.range(start)?;
        if jump < start || jump - start > SCAN_SPAN || self.range(jump) != Some(r) {
            return None;
        }
        let (sections, bytes, isa) = (self.sections, self.bytes, self.isa);
        let read = move |address: u64, len: usize| section_bytes(sections, bytes, address, len);
        let (code, lo): (&'a [u8], u64) = (self.code[r].bytes, self.code[r].lo);
        let offset = (start - lo) as usize;
        let tables = match &mut self.tables {
            Some(t) if t.start == start => t,
            slot => slot.insert(Tables {
                start,
                decoder: Disassembler::new(isa, &code[offset..], start, false),
                decoder_at_pos: true,
                path: Path::default(),
                pos: start,
                found: HashMap::new(),
                hoisted: jumptable::HoistedBases::new(start),
            }),
        };
        while tables.pos <= jump {
            // A path keeps where each instruction is and how it passes control on, which a
            // hint gives ([`hint_at`]); the decoder reads the rest.
            let at = (tables.pos - lo) as usize;
            let hint = hint_at(self.quick, code, at);
            let i = match hinted(isa, code, tables.pos, at, hint) {
                Some(i) => {
                    tables.decoder_at_pos = false;
                    i
                }
                None => {
                    if !tables.decoder_at_pos && !tables.decoder.seek(tables.pos) {
                        break;
                    }
                    tables.decoder_at_pos = true;
                    let Some(i) = tables.decoder.next(None) else {
                        break;
                    };
                    i
                }
            };
            self.decoded += 1;
            tables.pos = i.address + i.len as u64;
            if i.invalid {
                tables.path.clear();
                continue;
            }
            tables.path.push(&i);
            if i.flow == Flow::IndirectJump {
                let table = jumptable::recognise(isa, &tables.path, &read).or_else(|| {
                    (isa == Isa::X86_64)
                        .then(|| jumptable::hoisted_x86(&mut tables.hoisted, &tables.path, &read))
                        .flatten()
                });
                tables.found.insert(i.address, table);
            }
        }
        tables.found.get(&jump).cloned().flatten()
    }

    fn finish(self) -> Discovered {
        let size = |a: u64| self.extent.get(&a).map(|&end| end - a).filter(|&s| s > 0);
        Discovered {
            found: self
                .found
                .iter()
                .map(|(&a, &how)| (a, how, size(a)))
                .collect(),
            sizes: self
                .known
                .iter()
                .filter(|k| k.1.is_none())
                .filter_map(|k| Some((k.0, size(k.0)?)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(bytes: &[u8]) -> SectionInfo {
        SectionInfo {
            name: ".text".into(),
            address: 0x1000,
            size: bytes.len() as u64,
            executable: true,
            file_offset: Some(0),
            file_size: bytes.len() as u64,
        }
    }

    /// What following x86-64 code from 0x1000 (of the `size` a table states) finds in `code`,
    /// where the calls to `noreturn` do not return.
    fn walk_from(code: &[u8], size: Option<u64>, noreturn: &[u64]) -> Discovered {
        let sections = [section(code)];
        discover(Inputs {
            isa: Isa::X86_64,
            bytes: code,
            sections: &sections,
            known: vec![(0x1000, size)],
            roots: Vec::new(),
            pointers: Vec::new(),
            noreturn: noreturn.to_vec(),
            follow: true,
        })
    }

    /// What the walk finds in the first megabyte of the code section `section` of the file
    /// `bytes` of instruction set `isa`, with the functions its symbol tables list there as
    /// the listed starts, none sized: the same decoding every instruction with iced, reading
    /// what the quick decoder reads first, and with a second walker taking none, a third, half
    /// or all of the starts first, or racing the walk; most of its walks are taken as they
    /// were.
    fn assert_walks_agree(bytes: &[u8], section: &str, isa: Isa) {
        use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
        let file = object::File::parse(bytes).unwrap();
        let text = file.section_by_name(section).unwrap();
        let (offset, _) = text.file_range().unwrap();
        let window = text.size().min(1 << 20);
        let lo = text.address();
        let sections = [SectionInfo {
            name: section.into(),
            address: lo,
            size: window,
            executable: true,
            file_offset: Some(offset),
            file_size: window,
        }];
        let mut known: Vec<(u64, Option<u64>)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text)
            .map(|s| (s.address(), None))
            .filter(|&(a, _)| a >= lo && a < lo + window)
            .collect();
        known.sort_unstable();
        known.dedup();
        assert!(
            known.len() * LISTED_EVERY >= window as usize,
            "{}",
            known.len()
        );
        let n = known.len();
        let inputs = Inputs {
            isa,
            bytes,
            sections: &sections,
            known,
            roots: Vec::new(),
            pointers: Vec::new(),
            noreturn: Vec::new(),
            follow: true,
        };
        let ranges = code_ranges(&sections, bytes);
        let (alone, _) = walk(&inputs, &ranges, false, Beside::None);
        assert!(alone.sizes.len() > 1000, "{}", alone.sizes.len());
        let (quick, _) = walk(&inputs, &ranges, true, Beside::None);
        assert_eq!(quick.found, alone.found);
        assert_eq!(quick.sizes, alone.sizes);
        for k in [n, 2 * n / 3, n / 2, 0] {
            let (beside, taken) = walk(&inputs, &ranges, true, Beside::From(k));
            assert_eq!(beside.found, alone.found, "from {k}");
            assert_eq!(beside.sizes, alone.sizes, "from {k}");
            // Where the walk found a start inside the procedure the other walker walked (a
            // call into code no symbol names), that walk is walked again.
            assert!(taken <= n - k, "{taken} from {k}");
            assert!(taken * 10 >= (n - k) * 9, "{taken} of {}", n - k);
        }
        let (raced, _) = walk(&inputs, &ranges, true, Beside::Thread);
        assert_eq!(raced.found, alone.found);
        assert_eq!(raced.sizes, alone.sizes);
        let discovered = discover(inputs);
        assert_eq!(discovered.found, alone.found);
        assert_eq!(discovered.sizes, alone.sizes);
    }

    /// Neither the quick decoder nor a second walker changes what the walk finds (issue 30),
    /// on a megabyte of real compiler output: this test program's own code.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn walking_beside_finds_what_the_walk_alone_finds_regression_30() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_walks_agree(&exe, ".text", Isa::X86_64);
    }

    /// The same on AArch64 code: the C library the cross compiler links against.
    #[test]
    fn walking_beside_finds_what_the_walk_alone_finds_on_arm64_regression_30() {
        let out = std::process::Command::new("aarch64-linux-gnu-gcc")
            .arg("-print-file-name=libc.so.6")
            .output()
            .expect("aarch64-linux-gnu-gcc is required (.ci/run installs it)");
        let path = String::from_utf8(out.stdout).unwrap();
        let libc = std::fs::read(path.trim()).unwrap();
        assert_walks_agree(&libc, ".text", Isa::Arm64);
    }

    /// The other walker walks each start as if the walk had found no start yet; where the walk
    /// has found one inside that start's code since, its walk is not taken but walked again.
    /// 0x1000 calls 0x1030, found there; the code listed at 0x1020 runs on into 0x1030, and
    /// ends there, where the walk alone stops it.
    #[test]
    fn a_walk_aside_that_a_found_start_would_cut_is_walked_again_regression_30() {
        let mut code = vec![0xcc; 0x40];
        // 0x1000: call 0x1030; ret
        code[0..5].copy_from_slice(&[0xe8, 0x2b, 0, 0, 0]);
        code[5] = 0xc3;
        // 0x1020: 16 × nop, then 0x1030: ret
        code[0x20..0x30].fill(0x90);
        code[0x30] = 0xc3;
        let sections = [section(&code)];
        let inputs = Inputs {
            isa: Isa::X86_64,
            bytes: &code,
            sections: &sections,
            known: vec![(0x1000, None), (0x1020, None)],
            roots: Vec::new(),
            pointers: Vec::new(),
            noreturn: Vec::new(),
            follow: true,
        };
        let ranges = code_ranges(&sections, &code);
        let (alone, _) = walk(&inputs, &ranges, true, Beside::None);
        assert_eq!(alone.found, vec![(0x1030, FoundBy::Call, Some(1))]);
        assert_eq!(alone.sizes, vec![(0x1000, 6), (0x1020, 0x10)]);
        // Taken: 0x1000's walk (none found yet when it is replayed); refused: 0x1020's.
        for (k, expect) in [(0, 1), (1, 0), (2, 0)] {
            let (beside, taken) = walk(&inputs, &ranges, true, Beside::From(k));
            assert_eq!(beside.found, alone.found, "from {k}");
            assert_eq!(beside.sizes, alone.sizes, "from {k}");
            assert_eq!(taken, expect, "from {k}");
        }
    }

    /// `main` at 0x1000 calls 0x1010, which tail-jumps back to 0x1008 below it; 0x1020 is
    /// never reached.
    #[test]
    fn calls_and_tail_jumps_are_followed_regression_27() {
        let mut code = vec![0xcc; 0x30];
        // 0x1000: call 0x1010; ret
        code[0..5].copy_from_slice(&[0xe8, 0x0b, 0, 0, 0]);
        code[5] = 0xc3;
        // 0x1008: ret
        code[8] = 0xc3;
        // 0x1010: jmp 0x1008
        code[0x10..0x12].copy_from_slice(&[0xeb, 0xf6]);
        // 0x1020: ret (unreached)
        code[0x20] = 0xc3;
        let found = walk_from(&code, None, &[]).found;
        assert_eq!(
            found,
            [
                (0x1008, FoundBy::TailJump, Some(1)),
                (0x1010, FoundBy::Call, Some(2))
            ]
        );
    }

    /// `main` at 0x1000 calls 0x1020, which does not return (`int3` padding follows the
    /// call): the code after the padding, 0x1010, starts a function of its own, found so;
    /// 0x1030, after a `ret` and padding, is not.
    #[test]
    fn code_after_a_call_that_does_not_return_starts_a_function_regression_27() {
        let mut code = vec![0xcc; 0x40];
        // 0x1000: call 0x1020; int3 …
        code[0..5].copy_from_slice(&[0xe8, 0x1b, 0, 0, 0]);
        // 0x1010: mov eax, 1; ret
        code[0x10..0x16].copy_from_slice(&[0xb8, 1, 0, 0, 0, 0xc3]);
        // 0x1020: ret; 0x1030: ret (unreached)
        code[0x20] = 0xc3;
        code[0x30] = 0xc3;
        let found = walk_from(&code, None, &[]);
        assert_eq!(
            found.found,
            [
                (0x1010, FoundBy::AfterTrap, Some(6)),
                (0x1020, FoundBy::Call, Some(1))
            ]
        );
        // `main` ends at its `int3`.
        assert_eq!(found.sizes, [(0x1000, 6)]);
        // A call the walk knows does not return (an import's stub) ends the run before the
        // `int3`; the code after the padding is found all the same.
        let known = walk_from(&code, None, &[0x1020]);
        assert_eq!(known.found, [(0x1010, FoundBy::AfterTrap, Some(6))]);
        assert_eq!(known.sizes, [(0x1000, 5)]);
    }

    /// A listed procedure's stated extent is its own: a call into it adds nothing.
    #[test]
    fn calls_inside_a_listed_extent_add_nothing_regression_27() {
        let mut code = vec![0xcc; 0x20];
        code[0..5].copy_from_slice(&[0xe8, 0x03, 0, 0, 0]); // call 0x1008
        code[5] = 0xc3;
        code[8] = 0xc3;
        let found = walk_from(&code, Some(0x10), &[]).found;
        assert_eq!(found, []);
    }

    /// The filter in front of the sorted list never turns away an address the list holds, and
    /// lets through few it does not.
    #[test]
    fn noreturn_answers_what_the_sorted_list_does_regression_30() {
        let sorted: Vec<u64> = (0..40u64).map(|k| 0x40_1000 + 16 * k * k).collect();
        let noreturn = NoReturn::new(&sorted);
        let mut passed = 0;
        for a in (0x40_0000..0x48_0000u64).step_by(4) {
            assert_eq!(
                noreturn.contains(a),
                sorted.binary_search(&a).is_ok(),
                "{a:#x}"
            );
            let line = NoReturn::line(a);
            passed += usize::from(noreturn.lines[line / 64] & (1 << (line % 64)) != 0);
        }
        assert!(passed < 0x8_0000 / 4 / 50, "{passed}");
    }

    #[test]
    fn noreturn_names_regression_27() {
        assert!(is_noreturn("exit"));
        assert!(is_noreturn("__stack_chk_fail@GLIBC_2.4"));
        assert!(is_noreturn("__imp_ExitProcess"));
        assert!(!is_noreturn("puts"));
    }
}
