//! The message bound applied to paged results: a page ends early, with `next_offset` on the
//! first item left out, once its items would take more JSON than the bound leaves them.

use serde::Serialize;

/// The share of the message bound a page's items may take: a result is sent twice (as text and
/// as structured content) beside its Evidence envelope, so a quarter keeps the whole under it.
pub(crate) fn items_budget(bound: u64) -> usize {
    usize::try_from(bound / 4).unwrap_or(usize::MAX)
}

/// Keeps the longest prefix of `items` whose JSON takes at most `max_bytes` (always the first
/// item, so paging moves on); returns how many were dropped from the end.
pub(crate) fn fit<T: Serialize>(items: &mut Vec<T>, max_bytes: usize) -> usize {
    let mut used = 0usize;
    let mut keep = items.len();
    for (index, item) in items.iter().enumerate() {
        // One comma between items; an item that cannot be measured counts as too large.
        used = used.saturating_add(serde_json::to_vec(item).map_or(usize::MAX, |v| v.len() + 1));
        if index > 0 && used > max_bytes {
            keep = index;
            break;
        }
    }
    let dropped = items.len() - keep;
    items.truncate(keep);
    dropped
}

/// Ends a listing page early (see [`fit`]) to fit `bound`; `next_offset` then resumes after
/// the last item kept, the page having started at `offset`.
pub(crate) fn fit_listing<T: Serialize>(
    items: &mut Vec<T>,
    next_offset: &mut Option<u64>,
    offset: u64,
    bound: u64,
) {
    if fit(items, items_budget(bound)) > 0 {
        *next_offset = Some(offset + items.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_end_at_the_budget_but_never_empty() {
        // "aaaa" is 6 bytes of JSON, 7 with its comma.
        let mut items = vec!["aaaa"; 10];
        assert_eq!(fit(&mut items, 21), 7);
        assert_eq!(items.len(), 3);
        let mut one = vec!["aaaa"; 2];
        assert_eq!(fit(&mut one, 1), 1);
        assert_eq!(one.len(), 1);
        let mut all = vec!["aaaa"; 2];
        assert_eq!(fit(&mut all, 1000), 0);
        assert_eq!(all.len(), 2);
    }
}
