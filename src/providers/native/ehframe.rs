//! `.eh_frame` reading: every FDE's initial address and length, the function starts that
//! survive stripping in ELF binaries.

use std::collections::HashMap;

use gimli::{BaseAddresses, CieOrFde, EhFrame, EhFrameOffset, RunTimeEndian, UnwindSection};

/// The addresses a section's pointer encodings may be relative to.
pub(crate) struct EhFrameBases {
    /// Virtual address of `.eh_frame` itself (for `DW_EH_PE_pcrel`).
    pub(crate) eh_frame: u64,
    /// Virtual address of `.text` (for `DW_EH_PE_textrel`).
    pub(crate) text: u64,
    /// Virtual address of `.got` (for `DW_EH_PE_datarel` on some targets).
    pub(crate) got: u64,
}

/// One FDE: the start and length of the code it describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FdeRange {
    pub(crate) start: u64,
    pub(crate) len: u64,
}

/// Reads every FDE of an `.eh_frame` section. A malformed entry ends the walk: the FDEs read
/// before it are returned, since a partial list is still true.
pub(crate) fn fde_ranges(
    data: &[u8],
    big_endian: bool,
    address_size: u8,
    bases: &EhFrameBases,
) -> Vec<FdeRange> {
    let endian = if big_endian {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    let mut section = EhFrame::new(data, endian);
    section.set_address_size(address_size);
    let bases = BaseAddresses::default()
        .set_eh_frame(bases.eh_frame)
        .set_text(bases.text)
        .set_got(bases.got);
    // CIEs are shared by many FDEs; parsing each once keeps big binaries fast.
    let mut cies = HashMap::new();
    let mut out = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let parsed = partial.parse(|section, bases, offset: EhFrameOffset<usize>| {
            if let Some(cie) = cies.get(&offset.0) {
                return Ok(Clone::clone(cie));
            }
            let cie = section.cie_from_offset(bases, offset)?;
            cies.insert(offset.0, cie.clone());
            Ok(cie)
        });
        if let Ok(fde) = parsed {
            let start = fde.initial_address();
            if start != 0 {
                out.push(FdeRange {
                    start,
                    len: fde.len(),
                });
            }
        }
    }
    out
}
