//! The matching passes: same name; identical masked bytes; same control-flow shape with the same
//! callees and strings; then similarity with a score. Exact passes repeat while they find
//! anything, because every match turns the callees it touches from "some procedure" into a
//! known pair, which sharpens the keys of their callers.

use std::collections::BTreeMap;

use super::profile::{Callee, Profile};
use super::{Feature, MatchClass, MatchReason};

/// Similarity below this is not a match: the pair is reported as one removed, one added.
/// Pairs singled out by their position may score less (down to [`STRUCTURAL_THRESHOLD`]); they
/// are reported `uncertain`, never `changed`.
pub const SIMILARITY_THRESHOLD: f64 = 0.6;

/// A similarity candidate whose runner-up (another partner of either side) scores within this
/// much is not clearly the better one: the procedure is reported `ambiguous` with both.
pub const TIE_MARGIN: f64 = 0.005;

/// Gaps between matched neighbours holding at most this many unmatched procedures on each side
/// are paired in order as candidates.
const MAX_GAP: usize = 4;

/// A shape pair must score at least this (without position or context) to be taken.
const SHAPE_MIN_SCORE: f64 = 0.5;

/// Pairs singled out by their position (see `structural_candidates`) need only this score.
pub const STRUCTURAL_THRESHOLD: f64 = 0.4;

/// Most candidate pairs one similarity round scores; beyond it the round stops and says so,
/// which bounds the time on documents with tens of thousands of unmatched procedures.
const MAX_SCORED_PAIRS: u64 = 40_000_000;

/// How one left procedure was matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Pair {
    pub(super) right: u32,
    pub(super) reason: MatchReason,
    /// How sure the pass that made the pair is.
    pub(super) class: MatchClass,
    /// The features that agreed, as bits of [`Feature`].
    pub(super) agreed: u16,
    /// Similarity score, for pairs found by similarity.
    pub(super) score: Option<f64>,
}

/// The bit of one feature in [`Pair::agreed`].
pub(super) fn bit(f: Feature) -> u16 {
    1 << (f as u16)
}

/// The matching between two sides, both directions kept in step.
#[derive(Debug, Clone)]
pub(super) struct Matching {
    pub(super) left: Vec<Option<Pair>>,
    pub(super) right: Vec<Option<u32>>,
    /// Why a pass stopped short, when one did.
    pub(super) notes: Vec<String>,
    /// Left procedures with several candidates none of which is clearly better, each with the
    /// right candidates still unmatched (see [`Matching::ambiguities`]).
    ambiguous: Vec<(u32, Vec<u32>)>,
    /// Procedures held out of every later pass because their group of identical bodies could
    /// not be told apart.
    blocked_left: Vec<bool>,
    blocked_right: Vec<bool>,
    /// Left procedures whose ambiguity came from a group of identical bodies (reconsidered at
    /// the end of the matching).
    blocked_from_bytes: std::collections::BTreeSet<u32>,
    /// Per procedure: its masked bytes occur once on each side (see [`unique_bodies`]).
    unique_left: Vec<bool>,
    unique_right: Vec<bool>,
}

impl Matching {
    fn new(left: usize, right: usize) -> Matching {
        Matching {
            left: vec![None; left],
            right: vec![None; right],
            notes: Vec::new(),
            ambiguous: Vec::new(),
            blocked_left: vec![false; left],
            blocked_right: vec![false; right],
            blocked_from_bytes: std::collections::BTreeSet::new(),
            unique_left: vec![false; left],
            unique_right: vec![false; right],
        }
    }

    fn pair(
        &mut self,
        l: u32,
        r: u32,
        reason: MatchReason,
        class: MatchClass,
        agreed: u16,
        score: Option<f64>,
    ) -> bool {
        if self.left[l as usize].is_some()
            || self.right[r as usize].is_some()
            || self.blocked_left[l as usize]
            || self.blocked_right[r as usize]
        {
            return false;
        }
        self.left[l as usize] = Some(Pair {
            right: r,
            reason,
            class,
            agreed,
            score,
        });
        self.right[r as usize] = Some(l);
        true
    }

    /// The ambiguous left procedures that stayed unmatched, each with its unmatched right
    /// candidates, by left index; a right procedure listed here is no one's counterpart yet
    /// and is not reported as added.
    pub(super) fn ambiguities(&self) -> BTreeMap<u32, Vec<u32>> {
        let mut out: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (l, rs) in &self.ambiguous {
            if self.left[*l as usize].is_some() {
                continue;
            }
            let free = rs
                .iter()
                .copied()
                .filter(|&r| self.right[r as usize].is_none());
            out.entry(*l).or_default().extend(free);
        }
        out.retain(|_, rs| {
            rs.sort_unstable();
            rs.dedup();
            !rs.is_empty()
        });
        out
    }
}

/// Which side a profile belongs to, for naming its callees in side-independent terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Which {
    Left,
    Right,
}

/// A callee in terms both sides share.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum CalleeKey<'a> {
    /// An import, by name.
    Import(&'a str),
    /// A matched procedure, by its left index.
    Matched(u32),
    /// An unmatched procedure with a name.
    Named(&'a str),
    /// An unmatched procedure without a name: equal to nothing on the other side.
    Unmatched,
    /// A direct call to an address that starts no procedure.
    Address,
}

/// One callee of a `which`-side procedure in shared terms.
pub(super) fn callee_key<'a>(
    which: Which,
    profiles: &'a [Profile],
    callee: &'a Callee,
    m: &Matching,
) -> CalleeKey<'a> {
    match callee {
        Callee::Import(name) => CalleeKey::Import(name),
        Callee::Address(_) => CalleeKey::Address,
        Callee::Procedure(j) => {
            let matched = match which {
                Which::Left => m.left[*j as usize].map(|_| *j),
                Which::Right => m.right[*j as usize],
            };
            match (matched, &profiles[*j as usize].name) {
                (Some(l), _) => CalleeKey::Matched(l),
                (None, Some(name)) => CalleeKey::Named(name),
                (None, None) => CalleeKey::Unmatched,
            }
        }
    }
}

/// The callees of profile `i` of `which` side, in shared terms, sorted.
pub(super) fn callee_keys<'a>(
    which: Which,
    profiles: &'a [Profile],
    i: usize,
    m: &Matching,
) -> Vec<CalleeKey<'a>> {
    let mut keys: Vec<CalleeKey<'a>> = profiles[i]
        .callees
        .iter()
        .map(|callee| callee_key(which, profiles, callee, m))
        .collect();
    keys.sort();
    keys
}

/// Matches the procedures of two sides. Identical bodies that several procedures share (small
/// wrappers, thunks) are held back from the first similarity round: they are paired by their
/// callers and callees, which are best known once everything else has been matched.
pub(super) fn match_procedures(left: &[Profile], right: &[Profile]) -> Matching {
    let mut m = Matching::new(left.len(), right.len());
    let (unique_l, unique_r) = unique_bodies(left, right);
    m.unique_left = unique_l;
    m.unique_right = unique_r;
    by_name(left, right, &mut m);
    exact_rounds(left, right, &mut m);
    if similarity(left, right, &mut m, true) > 0 {
        exact_rounds(left, right, &mut m);
    }
    while ambiguous_bytes(left, right, &mut m) > 0 {
        exact_rounds(left, right, &mut m);
    }
    for _ in 0..2 {
        if similarity(left, right, &mut m, false) == 0 {
            break;
        }
        exact_rounds(left, right, &mut m);
    }
    // Groups of identical bodies held back earlier may be told apart by the callers and
    // callees matched since; what still cannot be is reported ambiguous.
    m.blocked_left.iter_mut().for_each(|b| *b = false);
    m.blocked_right.iter_mut().for_each(|b| *b = false);
    m.ambiguous
        .retain(|(l, _)| !m.blocked_from_bytes.contains(l));
    m.blocked_from_bytes.clear();
    while ambiguous_bytes(left, right, &mut m) > 0 {
        exact_rounds(left, right, &mut m);
    }
    m
}

/// Whether each procedure's masked bytes occur exactly once on its side and once on the other:
/// only such pairs are `exact`.
fn unique_bodies(left: &[Profile], right: &[Profile]) -> (Vec<bool>, Vec<bool>) {
    let mut count: BTreeMap<BytesKey, (u32, u32)> = BTreeMap::new();
    for p in left {
        if let Some(k) = bytes_key(p) {
            count.entry(k).or_default().0 += 1;
        }
    }
    for p in right {
        if let Some(k) = bytes_key(p) {
            count.entry(k).or_default().1 += 1;
        }
    }
    let unique = |p: &Profile| bytes_key(p).is_some_and(|k| count[&k] == (1, 1));
    (
        left.iter().map(unique).collect(),
        right.iter().map(unique).collect(),
    )
}

/// Repeats the unique exact passes until none finds anything.
fn exact_rounds(left: &[Profile], right: &[Profile], m: &mut Matching) {
    loop {
        let found = unique_bytes(left, right, m) + unique_shape(left, right, m);
        if found == 0 {
            break;
        }
    }
}

/// Pass 1: the same name on both sides. A name held by several procedures pairs them in
/// address order when both sides hold it equally often, and is left to later passes otherwise.
fn by_name(left: &[Profile], right: &[Profile], m: &mut Matching) {
    let group = |profiles: &[Profile]| {
        let mut by: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, p) in profiles.iter().enumerate() {
            if let Some(name) = &p.name {
                by.entry(name.clone()).or_default().push(i as u32);
            }
        }
        by
    };
    let (lg, rg) = (group(left), group(right));
    for (name, ls) in &lg {
        if let Some(rs) = rg.get(name)
            && ls.len() == rs.len()
        {
            for (&l, &r) in ls.iter().zip(rs) {
                let same = bytes_key(&left[l as usize]).is_some()
                    && bytes_key(&left[l as usize]) == bytes_key(&right[r as usize]);
                let agreed = bit(Feature::Name) | if same { bit(Feature::Bytes) } else { 0 };
                m.pair(l, r, MatchReason::Name, MatchClass::Strong, agreed, None);
            }
        }
    }
}

/// Pairs the keys that occur exactly once among the unmatched procedures of each side.
fn unique_pairs<K: Ord>(
    lkeys: impl Iterator<Item = (K, u32)>,
    rkeys: impl Iterator<Item = (K, u32)>,
) -> Vec<(u32, u32)> {
    let mut table: BTreeMap<K, (u32, u32, u32, u32)> = BTreeMap::new();
    for (k, i) in lkeys {
        let e = table.entry(k).or_insert((0, 0, 0, 0));
        e.0 += 1;
        e.2 = i;
    }
    for (k, i) in rkeys {
        let e = table.entry(k).or_insert((0, 0, 0, 0));
        e.1 += 1;
        e.3 = i;
    }
    table
        .into_values()
        .filter(|&(nl, nr, _, _)| nl == 1 && nr == 1)
        .map(|(_, _, l, r)| (l, r))
        .collect()
}

type BytesKey = (u64, u32, u64);

fn bytes_key(p: &Profile) -> Option<BytesKey> {
    (p.facts.instructions > 0).then_some((
        p.facts.masked_digest,
        p.facts.instructions,
        p.facts.code_bytes,
    ))
}

fn unmatched_left(m: &Matching) -> impl Iterator<Item = u32> + '_ {
    (0..m.left.len() as u32).filter(|&i| m.left[i as usize].is_none())
}

fn unmatched_right(m: &Matching) -> impl Iterator<Item = u32> + '_ {
    (0..m.right.len() as u32).filter(|&i| m.right[i as usize].is_none())
}

/// Pass 2: identical masked bytes, unique on both sides; first with the callees as part of
/// the key (so a body shared by several wrappers still pairs the wrapper of the same callee),
/// then on the bytes alone.
fn unique_bytes(left: &[Profile], right: &[Profile], m: &mut Matching) -> usize {
    let with_callees = |which: Which, profiles: &'_ [Profile], i: u32, m: &Matching| {
        let p = &profiles[i as usize];
        bytes_key(p).map(|k| {
            (
                (
                    k,
                    format!("{:?}", callee_keys(which, profiles, i as usize, m)),
                ),
                i,
            )
        })
    };
    let pairs = unique_pairs(
        unmatched_left(m).filter_map(|i| with_callees(Which::Left, left, i, m)),
        unmatched_right(m).filter_map(|i| with_callees(Which::Right, right, i, m)),
    );
    // A body that occurs once on each side is `exact`; one that several procedures share,
    // told apart by its callees (or left alone once the others were matched), is `strong`.
    let take = |m: &mut Matching, l: u32, r: u32, extra: u16| {
        let (class, agreed) = if m.unique_left[l as usize] && m.unique_right[r as usize] {
            (MatchClass::Exact, bit(Feature::Bytes))
        } else {
            (MatchClass::Strong, bit(Feature::Bytes) | extra)
        };
        m.pair(l, r, MatchReason::Bytes, class, agreed, None)
    };
    let mut found = pairs
        .into_iter()
        .filter(|&(l, r)| take(m, l, r, bit(Feature::Callees)))
        .count();
    let pairs = unique_pairs(
        unmatched_left(m).filter_map(|i| bytes_key(&left[i as usize]).map(|k| (k, i))),
        unmatched_right(m).filter_map(|i| bytes_key(&right[i as usize]).map(|k| (k, i))),
    );
    found += pairs.into_iter().filter(|&(l, r)| take(m, l, r, 0)).count();
    found
}

/// Unmatched procedures whose masked bytes some other unmatched procedure of either side
/// shares, while the other side holds the same bytes too: left for [`ambiguous_bytes`].
fn shared_bodies(left: &[Profile], right: &[Profile], m: &Matching) -> (Vec<bool>, Vec<bool>) {
    let mut groups: BTreeMap<BytesKey, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    for i in unmatched_left(m) {
        if let Some(k) = bytes_key(&left[i as usize]) {
            groups.entry(k).or_default().0.push(i);
        }
    }
    for i in unmatched_right(m) {
        if let Some(k) = bytes_key(&right[i as usize]) {
            groups.entry(k).or_default().1.push(i);
        }
    }
    let (mut l, mut r) = (vec![false; left.len()], vec![false; right.len()]);
    for (ls, rs) in groups.values() {
        if !ls.is_empty() && !rs.is_empty() && ls.len() + rs.len() > 2 {
            ls.iter().for_each(|&i| l[i as usize] = true);
            rs.iter().for_each(|&i| r[i as usize] = true);
        }
    }
    (l, r)
}

/// Whether two procedures carry different names: then only identical bytes may pair them
/// (a rename); shape and similarity may not.
fn named_apart(l: &Profile, r: &Profile) -> bool {
    matches!((&l.name, &r.name), (Some(a), Some(b)) if a != b)
}

type ShapeKey<'a> = (u64, u32, u32, Vec<CalleeKey<'a>>, &'a [String]);

/// The shape key of profile `i`, when its shape says enough to tell procedures apart.
fn shape_key<'a>(
    which: Which,
    profiles: &'a [Profile],
    i: u32,
    m: &Matching,
) -> Option<(ShapeKey<'a>, u32)> {
    let p = &profiles[i as usize];
    let callees = callee_keys(which, profiles, i as usize, m);
    let distinct_callees = callees.windows(2).filter(|w| w[0] != w[1]).count() + 1;
    let informative = p.facts.blocks >= 3
        || !p.strings.is_empty()
        || (!callees.is_empty() && distinct_callees >= 2);
    (informative && p.facts.instructions > 0).then(|| {
        let key = (
            p.facts.shape_digest,
            p.facts.blocks,
            p.facts.edges,
            callees,
            p.strings.as_slice(),
        );
        (key, i)
    })
}

/// Pass 3: the same control-flow shape with the same callees and strings, unique on both sides.
/// Shapes too plain to tell procedures apart (under three blocks, no string, fewer than two
/// distinct callees) are left to similarity, and a pair must also score [`SHAPE_MIN_SCORE`].
fn unique_shape<'a>(left: &'a [Profile], right: &'a [Profile], m: &mut Matching) -> usize {
    let lkeys: Vec<_> = unmatched_left(m)
        .filter_map(|i| shape_key(Which::Left, left, i, m))
        .collect();
    let rkeys: Vec<_> = unmatched_right(m)
        .filter_map(|i| shape_key(Which::Right, right, i, m))
        .collect();
    let pairs = unique_pairs(lkeys.into_iter(), rkeys.into_iter());
    // Generated and templated code repeats shapes; a shape that is unique only by coincidence
    // pairs bodies that share nothing else, so the pair must also look alike.
    let alike = |l: u32, r: u32| {
        let (lp, rp) = (&left[l as usize], &right[r as usize]);
        let keys_l = callee_keys(Which::Left, left, l as usize, m);
        let keys_r = callee_keys(Which::Right, right, r as usize, m);
        score(lp, rp, &keys_l, &keys_r, None, false) >= SHAPE_MIN_SCORE
    };
    let pairs: Vec<(u32, u32)> = pairs
        .into_iter()
        .filter(|&(l, r)| !named_apart(&left[l as usize], &right[r as usize]) && alike(l, r))
        .collect();
    pairs
        .into_iter()
        .filter(|&(l, r)| {
            let (lp, rp) = (&left[l as usize], &right[r as usize]);
            let mut agreed = bit(Feature::Shape);
            if !(lp.callees.is_empty() && rp.callees.is_empty()) {
                agreed |= bit(Feature::Callees);
            }
            if !lp.strings.is_empty() {
                agreed |= bit(Feature::Strings);
            }
            m.pair(l, r, MatchReason::Shape, MatchClass::Strong, agreed, None)
        })
        .count()
}

/// For each left index, where its counterpart is expected on the right: between the
/// counterparts of its nearest matched neighbours in address order (exclusive bounds), and at
/// the same distance from the previous one.
struct Brackets {
    below: Vec<Option<u32>>,
    above: Vec<Option<u32>>,
    predicted: Vec<Option<i64>>,
}

impl Brackets {
    fn new(m: &Matching) -> Brackets {
        let n = m.left.len();
        let mut below = vec![None; n];
        let mut above = vec![None; n];
        let mut predicted = vec![None; n];
        let mut last: Option<(usize, u32)> = None;
        for i in 0..n {
            if let Some((li, r)) = last {
                below[i] = Some(r);
                predicted[i] = Some(i64::from(r) + (i - li) as i64);
            }
            if let Some(p) = m.left[i] {
                last = Some((i, p.right));
            }
        }
        let mut next: Option<u32> = None;
        for i in (0..n).rev() {
            above[i] = next;
            if let Some(p) = m.left[i] {
                next = Some(p.right);
            }
        }
        Brackets {
            below,
            above,
            predicted,
        }
    }

    fn contains(&self, l: u32, r: u32) -> bool {
        let l = l as usize;
        let low = self.below[l].is_none_or(|b| r > b);
        let high = self.above[l].is_none_or(|a| r < a);
        low && high && (self.below[l].is_some() || self.above[l].is_some())
    }

    fn distance(&self, l: u32, r: u32) -> i64 {
        self.predicted[l as usize].map_or(i64::MAX, |p| (p - i64::from(r)).abs())
    }
}

/// How many callers and callees of `l` and `r` correspond under the current matching.
fn context(left: &[Profile], right: &[Profile], l: u32, r: u32, m: &Matching) -> u32 {
    let (lp, rp) = (&left[l as usize], &right[r as usize]);
    let callers = lp
        .callers
        .iter()
        .filter_map(|&c| m.left[c as usize])
        .filter(|p| rp.callers.binary_search(&p.right).is_ok())
        .count();
    let callees = lp
        .callees
        .iter()
        .filter_map(|c| match c {
            Callee::Procedure(j) => m.left[*j as usize],
            _ => None,
        })
        .filter(|p| {
            rp.callees
                .binary_search(&Callee::Procedure(p.right))
                .is_ok()
        })
        .count();
    (callers + callees) as u32
}

/// The share of the call-graph neighbours of `l` and `r` (callers and procedure callees) that
/// correspond under the current matching, as a Dice coefficient; `None` when neither has any.
fn context_share(left: &[Profile], right: &[Profile], l: u32, r: u32, m: &Matching) -> Option<f64> {
    let neighbours = |p: &Profile| {
        p.callers.len()
            + p.callees
                .iter()
                .filter(|c| matches!(c, Callee::Procedure(_)))
                .count()
    };
    let n = neighbours(&left[l as usize]) + neighbours(&right[r as usize]);
    (n > 0).then(|| 2.0 * f64::from(context(left, right, l, r, m)) / n as f64)
}

/// Identical masked bytes held by several procedures (small thunks, duplicated helpers): a
/// pair of a group is taken only when it is clearly the best of both its members, first by
/// context (more matched callers and callees that correspond than any other candidate of
/// either), then by position (the only candidate of either between their matched neighbours).
/// The members left are held out of later passes and reported `ambiguous` with their
/// candidates, rather than paired in address order.
fn ambiguous_bytes(left: &[Profile], right: &[Profile], m: &mut Matching) -> usize {
    let mut groups: BTreeMap<BytesKey, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    for i in unmatched_left(m).filter(|&i| !m.blocked_left[i as usize]) {
        if let Some(k) = bytes_key(&left[i as usize]) {
            groups.entry(k).or_default().0.push(i);
        }
    }
    for i in unmatched_right(m).filter(|&i| !m.blocked_right[i as usize]) {
        if let Some(k) = bytes_key(&right[i as usize]) {
            groups.entry(k).or_default().1.push(i);
        }
    }
    let brackets = Brackets::new(m);
    let mut found = 0;
    for (ls, rs) in groups.into_values() {
        if ls.is_empty() || rs.is_empty() {
            continue;
        }
        let contexts: Vec<Vec<u32>> = ls
            .iter()
            .map(|&l| rs.iter().map(|&r| context(left, right, l, r, m)).collect())
            .collect();
        // Order alone is no evidence (two copies, one removed, look the same either way): only
        // a sole candidate between the matched neighbours counts.
        let inside: Vec<Vec<u32>> = ls
            .iter()
            .map(|&l| {
                rs.iter()
                    .map(|&r| u32::from(brackets.contains(l, r)))
                    .collect()
            })
            .collect();
        let mut taken_l = vec![false; ls.len()];
        let mut taken_r = vec![false; rs.len()];
        // A value of (i, j) that is the only best of row i and of column j among the free.
        let clear = |value: &dyn Fn(usize, usize) -> u32,
                     taken_l: &[bool],
                     taken_r: &[bool],
                     i: usize,
                     j: usize| {
            let v = value(i, j);
            v > 0
                && (0..rs.len()).all(|k| k == j || taken_r[k] || value(i, k) < v)
                && (0..ls.len()).all(|k| k == i || taken_l[k] || value(k, j) < v)
        };
        let by_context = |i: usize, j: usize| contexts[i][j];
        let by_position = |i: usize, j: usize| inside[i][j];
        for (value, feature) in [
            (
                &by_context as &dyn Fn(usize, usize) -> u32,
                Feature::Context,
            ),
            (&by_position, Feature::Position),
        ] {
            loop {
                let mut progress = false;
                for i in 0..ls.len() {
                    for j in 0..rs.len() {
                        if taken_l[i] || taken_r[j] || !clear(value, &taken_l, &taken_r, i, j) {
                            continue;
                        }
                        let agreed = bit(Feature::Bytes) | bit(feature);
                        if m.pair(
                            ls[i],
                            rs[j],
                            MatchReason::Bytes,
                            MatchClass::Strong,
                            agreed,
                            None,
                        ) {
                            taken_l[i] = true;
                            taken_r[j] = true;
                            found += 1;
                            progress = true;
                        }
                    }
                }
                if !progress {
                    break;
                }
            }
        }
        let free_r: Vec<u32> = (0..rs.len())
            .filter(|&j| !taken_r[j])
            .map(|j| rs[j])
            .collect();
        if free_r.is_empty() {
            continue;
        }
        for i in (0..ls.len()).filter(|&i| !taken_l[i]) {
            m.blocked_left[ls[i] as usize] = true;
            m.blocked_from_bytes.insert(ls[i]);
            m.ambiguous.push((ls[i], free_r.clone()));
        }
        if ls.iter().enumerate().any(|(i, _)| !taken_l[i]) {
            free_r
                .iter()
                .for_each(|&r| m.blocked_right[r as usize] = true);
        }
    }
    found
}

/// Weighted Jaccard similarity of two sorted `(id, count)` histograms.
fn histogram_similarity(a: &[(u32, u32)], b: &[(u32, u32)]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let (mut min, mut max) = (0u64, 0u64);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                min += u64::from(x.1.min(y.1));
                max += u64::from(x.1.max(y.1));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                max += u64::from(x.1);
                i += 1;
            }
            (Some(_), Some(y)) => {
                max += u64::from(y.1);
                j += 1;
            }
            (Some(x), None) => {
                max += u64::from(x.1);
                i += 1;
            }
            (None, Some(y)) => {
                max += u64::from(y.1);
                j += 1;
            }
            (None, None) => break,
        }
    }
    if max == 0 {
        1.0
    } else {
        min as f64 / max as f64
    }
}

/// Jaccard similarity of two sorted lists, where `equal_counts` says whether two equal
/// elements count as shared (unmatched callees never do).
fn jaccard<T: Ord>(a: &[T], b: &[T], shared: impl Fn(&T) -> bool) -> f64 {
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                both += usize::from(shared(&a[i]));
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    let union = a.len() + b.len() - both;
    if union == 0 {
        1.0
    } else {
        both as f64 / union as f64
    }
}

fn ratio(a: u32, b: u32) -> f64 {
    let (lo, hi) = (a.min(b), a.max(b));
    if hi == 0 {
        1.0
    } else {
        f64::from(lo) / f64::from(hi)
    }
}

/// The similarity of two procedures in `[0, 1]`: mnemonic histogram, size, blocks and edges,
/// callees, strings, constants and call-graph context (each of the last four only when either
/// side has some), and whether the right one sits where the matched neighbours of the left one
/// put it.
fn score(
    lp: &Profile,
    rp: &Profile,
    lkeys: &[CalleeKey<'_>],
    rkeys: &[CalleeKey<'_>],
    context: Option<f64>,
    in_bracket: bool,
) -> f64 {
    let (lf, rf) = (&lp.facts, &rp.facts);
    let mut total = 0.4 * histogram_similarity(&lf.mnemonics, &rf.mnemonics)
        + 0.15 * ratio(lf.instructions, rf.instructions)
        + 0.075 * ratio(lf.blocks, rf.blocks)
        + 0.075 * ratio(lf.edges, rf.edges);
    let mut weight = 0.7;
    if !(lkeys.is_empty() && rkeys.is_empty()) {
        total += 0.15 * jaccard(lkeys, rkeys, |k| *k != CalleeKey::Unmatched);
        weight += 0.15;
    }
    if !(lp.strings.is_empty() && rp.strings.is_empty()) {
        total += 0.15 * jaccard(&lp.strings, &rp.strings, |_| true);
        weight += 0.15;
    }
    if !(lf.constants.is_empty() && rf.constants.is_empty()) {
        let (mut lc, mut rc) = (lf.constants.clone(), rf.constants.clone());
        lc.dedup();
        rc.dedup();
        total += 0.05 * jaccard(&lc, &rc, |_| true);
        weight += 0.05;
    }
    if let Some(c) = context {
        total += 0.2 * c;
        weight += 0.2;
    }
    let base = total / weight;
    0.85 * base + if in_bracket { 0.15 } else { 0.0 }
}

/// Rounds a score to four decimals, so recorded results do not depend on float noise.
fn rounded(score: f64) -> f64 {
    (score * 10_000.0).round() / 10_000.0
}

/// Pairs whose position in the call graph or the address order singles them out: the only
/// unmatched callee (or caller) of both procedures of a matched pair, or the only unmatched
/// procedure on each side between two consecutive matched neighbours (or the same few, in order).
fn structural_candidates(left: &[Profile], right: &[Profile], m: &Matching) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let sole = |ids: &mut dyn Iterator<Item = u32>| {
        let first = ids.next()?;
        ids.next().is_none().then_some(first)
    };
    for (l, pair) in m.left.iter().enumerate() {
        let Some(pair) = pair else { continue };
        let (lp, rp) = (&left[l], &right[pair.right as usize]);
        let callee = |p: &Profile, unmatched: &dyn Fn(u32) -> bool| {
            sole(&mut p.callees.iter().filter_map(|c| match c {
                Callee::Procedure(j) if unmatched(*j) => Some(*j),
                _ => None,
            }))
        };
        let lfree = |j: u32| m.left[j as usize].is_none();
        let rfree = |j: u32| m.right[j as usize].is_none();
        if let (Some(a), Some(b)) = (callee(lp, &lfree), callee(rp, &rfree)) {
            out.push((a, b));
        }
        let a = sole(&mut lp.callers.iter().copied().filter(|&j| lfree(j)));
        let b = sole(&mut rp.callers.iter().copied().filter(|&j| rfree(j)));
        if let (Some(a), Some(b)) = (a, b) {
            out.push((a, b));
        }
    }
    // Gaps between consecutive matched left procedures whose counterparts keep their order.
    let mut free_before = vec![0u32; m.right.len() + 1];
    for (r, pair) in m.right.iter().enumerate() {
        free_before[r + 1] = free_before[r] + u32::from(pair.is_none());
    }
    let mut previous: Option<(usize, u32)> = None;
    for (l, pair) in m.left.iter().enumerate() {
        let Some(pair) = pair else { continue };
        if let Some((pl, pr)) = previous
            && pr < pair.right
            && l - pl > 1
        {
            // Every left procedure strictly between the neighbours is unmatched (they are
            // consecutive matches); pair them in order with the right's when both sides hold
            // the same small number.
            let (from, to) = (pr as usize + 1, pair.right as usize);
            let k = l - pl - 1;
            if k <= MAX_GAP && (free_before[to] - free_before[from]) as usize == k {
                let rs = (from..to).filter(|&r| m.right[r].is_none());
                for (a, r) in (pl + 1..l).zip(rs) {
                    out.push((a as u32, r as u32));
                }
            }
        }
        previous = Some((l, pair.right));
    }
    out.retain(|&(l, r)| {
        left[l as usize].facts.instructions > 0 && right[r as usize].facts.instructions > 0
    });
    out.sort_unstable();
    out.dedup();
    out
}

/// Pass 4: similarity. Every unmatched pair of comparable size (half to twice the
/// instructions) is scored, and pairs at or above [`SIMILARITY_THRESHOLD`] are candidates;
/// pairs singled out by [`structural_candidates`] are scored whatever their sizes and need
/// only [`STRUCTURAL_THRESHOLD`]. Candidates are taken best first. With `hold_shared`, bodies
/// that [`shared_bodies`] reserves are not considered. Returns how many pairs it made.
fn similarity(left: &[Profile], right: &[Profile], m: &mut Matching, hold_shared: bool) -> usize {
    let (held_l, held_r) = if hold_shared {
        shared_bodies(left, right, m)
    } else {
        (vec![false; left.len()], vec![false; right.len()])
    };
    let lu: Vec<u32> = unmatched_left(m)
        .filter(|&i| left[i as usize].facts.instructions > 0 && !held_l[i as usize])
        .collect();
    let mut ru: Vec<u32> = unmatched_right(m)
        .filter(|&i| right[i as usize].facts.instructions > 0 && !held_r[i as usize])
        .collect();
    if lu.is_empty() || ru.is_empty() {
        return 0;
    }
    ru.sort_by_key(|&i| (right[i as usize].facts.instructions, i));
    let mut rkeys: Vec<Option<Vec<CalleeKey<'_>>>> = vec![None; right.len()];
    for &r in &ru {
        rkeys[r as usize] = Some(callee_keys(Which::Right, right, r as usize, m));
    }
    let brackets = Brackets::new(m);
    let mut scored = 0u64;
    let mut cut = false;
    let mut candidates: Vec<(f64, u32, u32)> = Vec::new();
    let score_of = |l: u32, r: u32, lkeys: &[CalleeKey<'_>]| {
        let rk = rkeys[r as usize].as_deref().unwrap_or(&[]);
        let context = context_share(left, right, l, r, m);
        score(
            &left[l as usize],
            &right[r as usize],
            lkeys,
            rk,
            context,
            brackets.contains(l, r),
        )
    };
    'left: for &l in &lu {
        let lp = &left[l as usize];
        let n = lp.facts.instructions;
        let (lo, hi) = (n / 2, n.saturating_mul(2).saturating_add(2));
        let lkeys = callee_keys(Which::Left, left, l as usize, m);
        let from = ru.partition_point(|&i| right[i as usize].facts.instructions < lo);
        for &r in &ru[from..] {
            let rp = &right[r as usize];
            if rp.facts.instructions > hi {
                break;
            }
            if named_apart(lp, rp) {
                continue;
            }
            scored += 1;
            if scored > MAX_SCORED_PAIRS {
                cut = true;
                break 'left;
            }
            let s = score_of(l, r, &lkeys);
            if s >= SIMILARITY_THRESHOLD {
                candidates.push((rounded(s), l, r));
            }
        }
    }
    for (l, r) in structural_candidates(left, right, m) {
        if named_apart(&left[l as usize], &right[r as usize])
            || held_l[l as usize]
            || held_r[r as usize]
        {
            continue;
        }
        let lkeys = callee_keys(Which::Left, left, l as usize, m);
        let s = score_of(l, r, &lkeys);
        if (STRUCTURAL_THRESHOLD..SIMILARITY_THRESHOLD).contains(&s) {
            candidates.push((rounded(s), l, r));
        }
    }
    candidates.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| {
                brackets
                    .distance(a.1, a.2)
                    .cmp(&brackets.distance(b.1, b.2))
            })
            .then_with(|| (a.1, a.2).cmp(&(b.1, b.2)))
    });
    if cut {
        m.notes.push(format!(
            "similarity scored its limit of {MAX_SCORED_PAIRS} candidate pairs and stopped; \
             some procedures reported as added or removed may have a counterpart"
        ));
    }
    // A candidate is taken only when no other free partner of either side scores within
    // TIE_MARGIN of it; otherwise both stay unmatched and the left one is ambiguous.
    let mut by_l: BTreeMap<u32, Vec<(f64, u32)>> = BTreeMap::new();
    let mut by_r: BTreeMap<u32, Vec<(f64, u32)>> = BTreeMap::new();
    for &(s, l, r) in &candidates {
        by_l.entry(l).or_default().push((s, r));
        by_r.entry(r).or_default().push((s, l));
    }
    let mut found = 0;
    for (s, l, r) in candidates {
        if m.left[l as usize].is_some() || m.right[r as usize].is_some() {
            continue;
        }
        let close = |list: Option<&Vec<(f64, u32)>>, skip: u32, free: &dyn Fn(u32) -> bool| {
            list.into_iter()
                .flatten()
                .filter(|&&(t, o)| o != skip && free(o) && t >= s - TIE_MARGIN)
                .map(|&(_, o)| o)
                .collect::<Vec<u32>>()
        };
        let rivals_r = close(by_l.get(&l), r, &|o| m.right[o as usize].is_none());
        let rivals_l = close(by_r.get(&r), l, &|o| m.left[o as usize].is_none());
        if !rivals_r.is_empty() || !rivals_l.is_empty() {
            let mut rs = rivals_r;
            rs.push(r);
            m.ambiguous.push((l, rs));
            continue;
        }
        let lkeys = callee_keys(Which::Left, left, l as usize, m);
        let rk = rkeys[r as usize]
            .clone()
            .unwrap_or_else(|| callee_keys(Which::Right, right, r as usize, m));
        let agreed = agreement(
            &left[l as usize],
            &right[r as usize],
            &lkeys,
            &rk,
            context_share(left, right, l, r, m),
            brackets.contains(l, r),
        );
        if m.pair(
            l,
            r,
            MatchReason::Similarity,
            MatchClass::Weak,
            agreed,
            Some(s),
        ) {
            found += 1;
        }
    }
    found
}

/// The features of a similarity pair that agree: most of the mnemonics, size, blocks and
/// edges; at least half of the callees, strings and constants (when either side has some);
/// at least half of the call-graph neighbours; the position between matched neighbours.
fn agreement(
    lp: &Profile,
    rp: &Profile,
    lkeys: &[CalleeKey<'_>],
    rkeys: &[CalleeKey<'_>],
    context: Option<f64>,
    in_bracket: bool,
) -> u16 {
    let (lf, rf) = (&lp.facts, &rp.facts);
    let mut out = 0;
    let mut add = |yes: bool, f: Feature| {
        if yes {
            out |= bit(f);
        }
    };
    add(
        histogram_similarity(&lf.mnemonics, &rf.mnemonics) >= 0.8,
        Feature::Mnemonics,
    );
    add(
        ratio(lf.instructions, rf.instructions) >= 0.8,
        Feature::Size,
    );
    add(
        ratio(lf.blocks, rf.blocks) >= 0.8 && ratio(lf.edges, rf.edges) >= 0.8,
        Feature::Blocks,
    );
    add(
        !(lkeys.is_empty() && rkeys.is_empty())
            && jaccard(lkeys, rkeys, |k| *k != CalleeKey::Unmatched) >= 0.5,
        Feature::Callees,
    );
    add(
        !(lp.strings.is_empty() && rp.strings.is_empty())
            && jaccard(&lp.strings, &rp.strings, |_| true) >= 0.5,
        Feature::Strings,
    );
    let (mut lc, mut rc) = (lf.constants.clone(), rf.constants.clone());
    lc.dedup();
    rc.dedup();
    add(
        !(lc.is_empty() && rc.is_empty()) && jaccard(&lc, &rc, |_| true) >= 0.5,
        Feature::Constants,
    );
    add(context.is_some_and(|c| c >= 0.5), Feature::Context);
    add(in_bracket, Feature::Position);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_and_set_similarities() {
        assert_eq!(
            histogram_similarity(&[(1, 2), (3, 1)], &[(1, 2), (3, 1)]),
            1.0
        );
        assert_eq!(
            histogram_similarity(&[(1, 2)], &[(1, 1), (2, 1)]),
            1.0 / 3.0
        );
        assert_eq!(jaccard(&[1, 2, 3], &[2, 3, 4], |_| true), 0.5);
        let keys = [CalleeKey::Unmatched];
        assert_eq!(jaccard(&keys, &keys, |k| *k != CalleeKey::Unmatched), 0.0);
        assert_eq!(jaccard::<u8>(&[], &[], |_| true), 1.0);
    }
}
