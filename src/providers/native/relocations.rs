//! ELF dynamic relocations that store known pointers: read by the data-reference analysis and
//! by the procedure inventory (a `main` loaded from a GOT slot), so it sits below both.

/// Most dynamic relocations read (here and by the data-reference analysis), against crafted
/// tables.
pub(crate) const MAX_RELOCATIONS: usize = 4_000_000;

/// `(value, place)` for each ELF dynamic relocation that stores a known pointer: a
/// `R_*_RELATIVE` stores its addend (the image is linked at its file addresses), an absolute or
/// GOT relocation against a defined symbol stores the symbol's value plus the addend.
pub(crate) fn relocated_pointers(file: &object::File<'_>) -> Vec<(u64, u64)> {
    use object::{Object, ObjectSymbol, ObjectSymbolTable, RelocationFlags, RelocationTarget};
    let Some(relocations) = file.dynamic_relocations() else {
        return Vec::new();
    };
    let dynsym = file.dynamic_symbol_table();
    let mut out = Vec::new();
    let architecture = file.architecture();
    for (place, relocation) in relocations.take(MAX_RELOCATIONS) {
        let RelocationFlags::Elf { r_type } = relocation.flags() else {
            continue;
        };
        // Relocation numbers mean different things on each machine.
        use object::Architecture as A;
        use object::elf as e;
        let (relative, absolute) = match architecture {
            A::X86_64 => (
                r_type == e::R_X86_64_RELATIVE,
                matches!(r_type, e::R_X86_64_64 | e::R_X86_64_GLOB_DAT),
            ),
            A::Aarch64 => (
                r_type == e::R_AARCH64_RELATIVE,
                matches!(r_type, e::R_AARCH64_ABS64 | e::R_AARCH64_GLOB_DAT),
            ),
            A::I386 => (
                r_type == e::R_386_RELATIVE,
                matches!(r_type, e::R_386_32 | e::R_386_GLOB_DAT),
            ),
            A::Arm => (
                r_type == e::R_ARM_RELATIVE,
                matches!(r_type, e::R_ARM_ABS32 | e::R_ARM_GLOB_DAT),
            ),
            _ => (false, false),
        };
        if relative {
            out.push((relocation.addend() as u64, place));
            continue;
        }
        if let (true, RelocationTarget::Symbol(index), Some(table)) =
            (absolute, relocation.target(), &dynsym)
            && let Ok(symbol) = table.symbol_by_index(index)
            && symbol.is_definition()
        {
            out.push((
                symbol.address().wrapping_add(relocation.addend() as u64),
                place,
            ));
        }
    }
    out
}
