//! Procedure addresses as completion values, read from `procedures` (schema version 12): the
//! text of an address is `0x` and its lowercase hex digits without leading zeros, so the
//! addresses whose text starts with a typed prefix are a few ranges of numbers, one for each
//! count of digits, each an index range of the table's primary key.

use rusqlite::{Connection, params};

use super::StoreError;

/// The address whose completion text is `text` (`0x`, then lowercase hex digits without a
/// leading zero, or `0x0`), if `text` is one.
pub(super) fn address_of_text(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x")?;
    let canonical = !digits.is_empty()
        && digits.len() <= 16
        && digits
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && (digits == "0" || !digits.starts_with('0'));
    canonical
        .then(|| u64::from_str_radix(digits, 16).ok())
        .flatten()
}

/// How many hex digits the text of `address` has (one for 0).
fn hex_digits(address: u64) -> u32 {
    (64 - address.leading_zeros()).div_ceil(4).max(1)
}

/// The completion text of `address` (what `Address`'s `Display` writes), without the formatting
/// machinery: an open builds one for every procedure of its inventory.
pub(super) fn text_of_address(address: u64) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = hex_digits(address);
    let mut text = String::with_capacity(2 + digits as usize);
    text.push_str("0x");
    for d in (0..digits).rev() {
        text.push(char::from(DIGITS[((address >> (4 * d)) & 0xf) as usize]));
    }
    text
}

/// A key that sorts addresses as their texts sort: the texts' digits compare left-aligned, and
/// of two texts whose digits agree so far the shorter comes first.
pub(super) fn text_order(address: u64) -> (u64, u32) {
    let digits = hex_digits(address);
    (address << (64 - 4 * digits), digits)
}

/// The addresses whose text starts with `prefix`, as inclusive ranges (lowest first for each
/// count of digits).
pub(super) fn ranges(prefix: &str) -> Vec<(u64, u64)> {
    if "0x".starts_with(prefix) {
        return vec![(0, u64::MAX)];
    }
    let Some(digits) = prefix.strip_prefix("0x") else {
        return Vec::new();
    };
    if digits == "0" {
        return vec![(0, 0)];
    }
    let Some(head) = address_of_text(prefix) else {
        return Vec::new();
    };
    // `head` followed by `extra` more digits, any of them.
    (0..=16 - digits.len())
        .map(|extra| {
            let shift = 4 * extra as u32;
            let lo = u128::from(head) << shift;
            let hi = ((u128::from(head) + 1) << shift) - 1;
            (lo as u64, hi.min(u128::from(u64::MAX)) as u64)
        })
        .collect()
}

/// `lo..=hi` as ranges of the signed integers SQLite stores the addresses as (an address above
/// `i64::MAX` keeps its bits, so it sorts below zero).
fn signed(lo: u64, hi: u64) -> Vec<(i64, i64)> {
    const TOP: u64 = i64::MAX as u64;
    if hi <= TOP || lo > TOP {
        vec![(lo as i64, hi as i64)]
    } else {
        vec![(lo as i64, i64::MAX), (i64::MIN, hi as i64)]
    }
}

/// Calls `each` with every address of the completion scope `document` of `target_id` (a
/// document's procedures, or with 0 those of every document of the target, each address once)
/// whose text starts with `prefix`.
pub(super) fn each_in_scope(
    conn: &Connection,
    target_id: i64,
    document: i64,
    prefix: &str,
    mut each: impl FnMut(u64),
) -> Result<(), StoreError> {
    // A document's addresses are unique by the primary key; the target's are taken once.
    let (sql, scope) = if document == 0 {
        (
            "select distinct address from procedures
             where document_id in (select id from documents where target_id = ?1)
               and address between ?2 and ?3",
            target_id,
        )
    } else {
        (
            "select address from procedures where document_id = ?1 and address between ?2 and ?3",
            document,
        )
    };
    let mut stmt = conn.prepare_cached(sql)?;
    for (lo, hi) in ranges(prefix) {
        for (lo, hi) in signed(lo, hi) {
            let mut rows = stmt.query(params![scope, lo, hi])?;
            while let Some(row) = rows.next()? {
                each(row.get::<_, i64>(0)? as u64);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Address;

    #[test]
    fn texts_are_read_back_only_when_canonical_regression_30() {
        for a in [0, 1, 0xf, 0x10, 0x1000_0000, u64::MAX, 1 << 63] {
            assert_eq!(address_of_text(&Address(a).to_string()), Some(a));
        }
        // The quick text is `Display`'s, at every digit count and at random.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let spread = (0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) + 1]);
        let random = (0..10_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        });
        let all: Vec<u64> = [0, u64::MAX]
            .into_iter()
            .chain(spread)
            .chain(random)
            .collect();
        for &a in &all {
            assert_eq!(text_of_address(a), Address(a).to_string());
        }
        // And `text_order` sorts them as their texts sort.
        let mut by_key = all.clone();
        by_key.sort_by_key(|&a| text_order(a));
        let mut by_text = all;
        by_text.sort_by_key(|&a| Address(a).to_string());
        assert_eq!(by_key, by_text);
        for text in [
            "",
            "0x",
            "0x01",
            "0X10",
            "0x1A",
            "0xg",
            "10",
            "0x10000000000000000",
        ] {
            assert_eq!(address_of_text(text), None, "{text}");
        }
    }

    /// Every address of a set whose text starts with a prefix, and no other, lies in the ranges:
    /// checked against the texts themselves for every prefix of every text, and more.
    #[test]
    fn ranges_hold_exactly_the_addresses_a_prefix_matches_regression_30() {
        let addresses = [
            0u64,
            1,
            0xf,
            0x10,
            0x11,
            0x1f,
            0x100,
            0x1000,
            0x1001,
            0x10008d264,
            0xfff,
            0x7fff_ffff_ffff_ffff,
            0x8000_0000_0000_0000,
            0xffff_ffff_ffff_f000,
            u64::MAX,
        ];
        let texts: Vec<String> = addresses.iter().map(|&a| Address(a).to_string()).collect();
        let mut prefixes: Vec<String> = vec!["".into(), "0".into(), "0x".into(), "0x0".into()];
        for t in &texts {
            for end in 0..=t.len() {
                prefixes.push(t[..end].to_owned());
            }
        }
        prefixes.extend(["0x00", "0x01", "0xg", "x", "1", "0x1g", "main"].map(String::from));
        for prefix in &prefixes {
            let ranges = ranges(prefix);
            for (a, t) in addresses.iter().zip(&texts) {
                let inside = ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(a));
                assert_eq!(inside, t.starts_with(prefix.as_str()), "{prefix:?} and {t}");
            }
        }
        assert_eq!(ranges("0x1"), {
            let mut r = vec![(1, 1)];
            for d in 1..16u32 {
                r.push((1 << (4 * d), (2 << (4 * d)) - 1));
            }
            r
        });
        assert_eq!(
            signed(0x7fff_ffff_ffff_fff0, 0x8000_0000_0000_000f),
            vec![
                (0x7fff_ffff_ffff_fff0, i64::MAX),
                (i64::MIN, i64::MIN + 0xf)
            ]
        );
    }
}
