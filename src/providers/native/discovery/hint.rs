//! The one-byte hint the walk keeps for an instruction: its length in the low four bits, and
//! in the high ones what the walk does with it. The quick decoder gives it; the walk reads it.

/// The high bits of a hint: the walk steps over the instruction.
pub(super) const STEP: u8 = 0;
/// ... it returns (or is `int3`).
pub(super) const RETURN: u8 = 1 << 4;
/// ... it is a direct call, jump or conditional jump, to where its last byte (or, with
/// [`WIDE`], its last four bytes) says, from its end.
pub(super) const CALL: u8 = 2 << 4;
pub(super) const JUMP: u8 = 3 << 4;
pub(super) const COND_JUMP: u8 = 4 << 4;
/// ... it is x86-64 code that reads or writes memory at its end plus its last four bytes
/// (`mov rax, [rip+x]`), and otherwise only steps on; with [`ADDRESS`], it computes that
/// address instead (`lea rdi, [rip+x]`). The walk keeps the address.
pub(super) const ACCESS: u8 = 5 << 4;
pub(super) const ADDRESS: u8 = 6 << 4;
pub(super) const WIDE: u8 = 1 << 7;
/// The bits that say which of those it is.
pub(super) const KIND: u8 = 7 << 4;
