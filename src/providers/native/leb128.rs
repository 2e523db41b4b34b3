//! ULEB128, the variable-length integers of Mach-O's load-command payloads (function starts,
//! export tries, bind opcodes).

/// Reads a ULEB128 value at `*at`, advancing it; `None` past the end or beyond 64 bits.
pub(super) fn uleb(data: &[u8], at: &mut usize) -> Option<u64> {
    let (mut value, mut shift) = (0u64, 0u32);
    loop {
        let byte = *data.get(*at)?;
        *at += 1;
        if shift >= 64 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}
