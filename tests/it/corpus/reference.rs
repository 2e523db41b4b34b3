//! What the reference tools say about a corpus file: function symbols (readelf, nm, llvm-nm),
//! and listings (GNU objdump, llvm-objdump-14) read into instructions with their direct targets
//! and the addresses their operands compute.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Toolchain, run};

/// A function symbol as the reference tool prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub address: u64,
    /// The name as printed: with `@VERSION`/`@@VERSION` for versioned ELF dynamic symbols, with
    /// Mach-O's leading underscore.
    pub name: String,
    /// ELF only (`readelf` size column); zero when the symbol states none.
    pub size: u64,
    /// `FUNC` or `IFUNC` (ELF); `T`/`t` (nm).
    pub kind: String,
    /// Whether the symbol is global (or weak).
    pub global: bool,
    /// ELF: the symbol comes from `.dynsym`.
    pub dynamic: bool,
}

fn hex(text: &str) -> Option<u64> {
    u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// Function symbols of a file defined in a section, from the tool that fits its format.
pub fn functions(path: &Path, toolchain: Toolchain) -> Vec<Symbol> {
    let path = path.to_str().unwrap();
    match toolchain {
        Toolchain::ElfX64 | Toolchain::ElfA64 => readelf_functions(&run("readelf", &["-sW", path])),
        Toolchain::PeX64 => coff_functions(
            &run("x86_64-w64-mingw32-objdump", &["-t", path]),
            &run("x86_64-w64-mingw32-objdump", &["-h", path]),
        ),
        Toolchain::PeX86 => coff_functions(
            &run("i686-w64-mingw32-objdump", &["-t", path]),
            &run("i686-w64-mingw32-objdump", &["-h", path]),
        ),
        Toolchain::MachoArm64 | Toolchain::MachoX64 => {
            nm_functions(&run("llvm-nm-14", &["-n", "--defined-only", path]))
        }
    }
}

/// `readelf -sW`: FUNC and IFUNC symbols of both tables that have a section.
fn readelf_functions(text: &str) -> Vec<Symbol> {
    let mut out = Vec::new();
    let mut dynamic = false;
    for line in text.lines() {
        if line.starts_with("Symbol table '.dynsym'") {
            dynamic = true;
            continue;
        }
        if line.starts_with("Symbol table ") {
            dynamic = false;
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[0].ends_with(':') {
            continue;
        }
        if !matches!(f[3], "FUNC" | "IFUNC") || matches!(f[6], "UND" | "ABS") {
            continue;
        }
        let (Some(address), Ok(size)) = (hex(f[1]), f[2].parse::<u64>()) else {
            continue;
        };
        out.push(Symbol {
            address,
            name: f[7].to_string(),
            size,
            kind: f[3].to_string(),
            global: f[4] != "LOCAL",
            dynamic,
        });
    }
    out
}

/// `objdump -t` of a PE file: COFF symbols of function type (`ty 20`), whose values are
/// offsets into their section (numbered from 1 in the order `objdump -h` lists them).
fn coff_functions(symbols: &str, headers: &str) -> Vec<Symbol> {
    let vmas: Vec<u64> = headers
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 7 && f[0].parse::<usize>().is_ok()).then(|| hex(f[3]))?
        })
        .collect();
    let mut out: Vec<Symbol> = symbols
        .lines()
        .filter(|l| l.contains("(ty   20)"))
        .filter_map(|l| {
            let section: usize = l
                .split("(sec")
                .nth(1)?
                .split(')')
                .next()?
                .trim()
                .parse()
                .ok()?;
            let class: u32 = l
                .split("(scl")
                .nth(1)?
                .split(')')
                .next()?
                .trim()
                .parse()
                .ok()?;
            let rest = l.split(") 0x").nth(1)?;
            let (value, name) = rest.split_once(' ')?;
            Some(Symbol {
                address: vmas.get(section.checked_sub(1)?)? + hex(value)?,
                name: name.trim().to_string(),
                size: 0,
                kind: "F".to_string(),
                // Storage class 2 is external, 3 static.
                global: class == 2,
                dynamic: false,
            })
        })
        .collect();
    out.sort_by_key(|s| s.address);
    out
}

/// `nm -n --defined-only`: text symbols (`T`, `t`), without section symbols and local labels
/// (names starting with `.`, which mingw's CRT objects carry).
fn nm_functions(text: &str) -> Vec<Symbol> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 3 || !matches!(f[1], "T" | "t") || f[2].starts_with('.') {
                return None;
            }
            Some(Symbol {
                address: hex(f[0])?,
                name: f[2].to_string(),
                size: 0,
                kind: f[1].to_string(),
                global: f[1] == "T",
                dynamic: false,
            })
        })
        .collect()
}

/// One instruction of a reference listing.
#[derive(Debug, Clone)]
pub struct Insn {
    pub address: u64,
    pub bytes: Vec<u8>,
    pub mnemonic: String,
    /// Operands as printed, without the tool's comment.
    pub operands: String,
    /// The tool's comment (`# 0x2020 <x>`, `// #9`, `## 0x3000`), when it printed one.
    pub comment: Option<String>,
    /// The function label the instruction is listed under.
    pub function: Option<String>,
    /// The section it is listed in.
    pub section: String,
}

impl Insn {
    /// The numeric operand of a direct branch or call (`call 1370 <f>`, `bl 0x608 <_f>`,
    /// `cbz w0, 8f0 <f+0x10>`): its last operand when that is a plain number.
    pub fn direct_target(&self) -> Option<u64> {
        let last = self
            .operands
            .split(',')
            .next_back()?
            .split('<')
            .next()?
            .trim();
        if last.is_empty() || last.starts_with('#') {
            return None;
        }
        hex(last)
    }

    /// The address named by an x86 comment (`# 207e <PACKED+0x3e>`, `## 0x3000`), or else
    /// computed from a `[rip + disp]` operand and the instruction's length.
    pub fn comment_address(&self) -> Option<u64> {
        if let Some(c) = self.comment.as_deref()
            && c.starts_with('#')
        {
            return hex(c.trim_start_matches('#').split_whitespace().next()?);
        }
        let inner = self.operands.split('[').nth(1)?.split(']').next()?;
        let rest = inner.trim().strip_prefix("rip")?.trim();
        let (negative, number) = match (rest.strip_prefix('+'), rest.strip_prefix('-')) {
            (Some(n), _) => (false, n.trim()),
            (_, Some(n)) => (true, n.trim()),
            _ => return None,
        };
        let disp: u64 = match number.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok()?,
            None => number.parse().ok()?,
        };
        let next = self.address + self.bytes.len() as u64;
        Some(if negative {
            next.wrapping_sub(disp)
        } else {
            next.wrapping_add(disp)
        })
    }

    pub fn is_call(&self) -> bool {
        matches!(self.mnemonic.as_str(), "call" | "bl" | "callq")
    }

    pub fn is_jump(&self) -> bool {
        matches!(self.mnemonic.as_str(), "jmp" | "b" | "jmpq")
    }
}

/// Which disassembler produced a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disassembler {
    /// GNU objdump (`objdump`, `aarch64-linux-gnu-objdump`, `x86_64-w64-mingw32-objdump`).
    Gnu,
    /// `llvm-objdump-14`.
    Llvm,
}

/// The disassembly of every executable section of a file (`-M intel` on x86).
pub fn listing(path: &Path, toolchain: Toolchain, tool: Disassembler) -> Vec<Insn> {
    let path = path.to_str().unwrap();
    let text = match (tool, toolchain) {
        // Mach-O goes through llvm-objdump's Mach-O printer, which alone honours
        // LC_DATA_IN_CODE (a jump table among the code is `.long` data, not instructions);
        // without symbolic operands it prints numbers, as elsewhere.
        (_, Toolchain::MachoX64) => run(
            "llvm-objdump-14",
            &[
                "--macho",
                "-d",
                "--no-symbolic-operands",
                "--x86-asm-syntax=intel",
                path,
            ],
        ),
        (_, Toolchain::MachoArm64) => run(
            "llvm-objdump-14",
            &["--macho", "-d", "--no-symbolic-operands", path],
        ),
        (Disassembler::Llvm, t) if t.is_x86() => {
            run("llvm-objdump-14", &["-d", "--x86-asm-syntax=intel", path])
        }
        (Disassembler::Llvm, _) => run("llvm-objdump-14", &["-d", path]),
        (Disassembler::Gnu, Toolchain::ElfX64) => {
            run("objdump", &["-d", "-w", "-M", "intel", path])
        }
        (Disassembler::Gnu, Toolchain::PeX64) => run(
            "x86_64-w64-mingw32-objdump",
            &["-d", "-w", "-M", "intel", path],
        ),
        (Disassembler::Gnu, Toolchain::PeX86) => run(
            "i686-w64-mingw32-objdump",
            &["-d", "-w", "-M", "intel", path],
        ),
        (Disassembler::Gnu, Toolchain::ElfA64) => {
            run("aarch64-linux-gnu-objdump", &["-d", "-w", path])
        }
    };
    parse_listing(&text, toolchain.is_x86())
}

/// Reads GNU (`addr:\tbytes\ttext`, or a 32-bit word on AArch64) and LLVM (`addr: bytes\ttext`)
/// listing lines.
pub fn parse_listing(text: &str, x86: bool) -> Vec<Insn> {
    let mut out: Vec<Insn> = Vec::new();
    let mut function = None;
    let mut section = String::new();
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("Disassembly of section ") {
            section = s.trim_end_matches(':').to_string();
            continue;
        }
        if let Some(label) = line.strip_suffix(">:")
            && let Some((address, name)) = label.split_once(" <")
            && hex(address).is_some()
        {
            function = Some(name.to_string());
            continue;
        }
        // The Mach-O printer: `(__TEXT,__text) section`, then `_name:` before each function.
        if let Some(s) = line
            .strip_suffix(") section")
            .and_then(|l| l.strip_prefix('('))
        {
            section = s.to_string();
            continue;
        }
        if let Some(name) = line.strip_suffix(':')
            && !line.starts_with(char::is_whitespace)
            && !name.contains(' ')
            && hex(name).is_none()
        {
            function = Some(name.to_string());
            continue;
        }
        let Some((address, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Some(address) = hex(address).filter(|_| !address.is_empty()) else {
            continue;
        };
        let rest = rest.trim_start_matches(' ').trim_start_matches('\t');
        let (bytes_text, text) = rest.split_once('\t').unwrap_or((rest, ""));
        let mut bytes = Vec::new();
        let mut ok = true;
        for token in bytes_text.split_whitespace() {
            match token.len() {
                2 => bytes.push(u8::from_str_radix(token, 16).unwrap_or_else(|_| {
                    ok = false;
                    0
                })),
                // GNU objdump prints an AArch64 instruction as one little-endian word.
                8 => match u32::from_str_radix(token, 16) {
                    Ok(word) => bytes.extend(word.to_le_bytes()),
                    Err(_) => ok = false,
                },
                _ => ok = false,
            }
        }
        if !ok || bytes.is_empty() {
            continue;
        }
        let text = text.trim();
        if text.is_empty() {
            // A continuation line of a long instruction (GNU objdump without -w).
            if let Some(last) = out.last_mut() {
                last.bytes.extend(bytes);
            }
            continue;
        }
        let (body, comment) = split_comment(text, x86);
        // GNU objdump names a redundant REX prefix (`rex.W jmp …`); the instruction is the
        // one after it.
        let body = body
            .split_whitespace()
            .skip_while(|t| x86 && t.starts_with("rex"))
            .collect::<Vec<_>>()
            .join(" ");
        // llvm-objdump 14 prints a `lock` prefix as an instruction of its own; it belongs to
        // the instruction after it.
        if x86
            && let Some(last) = out.last_mut()
            && last.mnemonic == "lock"
            && last.operands.is_empty()
            && last.address + last.bytes.len() as u64 == address
        {
            last.bytes.extend(bytes);
            last.mnemonic = format!("lock {}", body.split(' ').next().unwrap_or(""));
            last.operands = body.split_once(' ').map_or("", |(_, o)| o).to_string();
            last.comment = comment;
            continue;
        }
        let (mnemonic, operands) = body.split_once(' ').unwrap_or((&body, ""));
        out.push(Insn {
            address,
            bytes,
            mnemonic: mnemonic.to_string(),
            operands: operands.to_string(),
            comment,
            function: function.clone(),
            section: section.clone(),
        });
    }
    out
}

/// Splits a tool's comment off: `#` starts one on x86 (operands never hold it), `//` or `;`
/// on AArch64 (where `#` marks immediates); ` @ ` follows a Mach-O data directive.
fn split_comment(text: &str, x86: bool) -> (&str, Option<String>) {
    let at = if x86 {
        text.find('#').or_else(|| text.find("\t@ "))
    } else {
        text.find("//").or_else(|| text.find(';'))
    };
    match at {
        Some(at) => (text[..at].trim_end(), Some(text[at..].trim().to_string())),
        None => (text, None),
    }
}

/// Addresses an AArch64 listing computes with `adrp` followed by `add` (possibly a chain of
/// them) or a load/store offset, keyed by the instruction that completes the address. An `add`
/// that only feeds a further `add` is an intermediate step, not a reference of its own. A
/// register's value is forgotten at the next write the rule does not follow (see [`forget`]).
pub fn arm64_addresses(listing: &[Insn]) -> BTreeMap<u64, u64> {
    // Register → (value, the `add` that computed it, if not an `adrp`).
    let mut regs: BTreeMap<String, (u64, Option<u64>)> = BTreeMap::new();
    let mut out = BTreeMap::new();
    let mut function = None;
    for insn in listing {
        if insn.function != function {
            regs.clear();
            function = insn.function.clone();
        }
        let ops: Vec<String> = insn
            .operands
            .split(',')
            .map(|o| o.split('<').next().unwrap().trim().to_string())
            .collect();
        let imm = |text: &str| -> Option<u64> {
            let t = text.trim().trim_start_matches('#');
            if let Some(h) = t.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else {
                t.parse().ok()
            }
        };
        let dest = ops.first().cloned().unwrap_or_default();
        match insn.mnemonic.as_str() {
            "adrp" if ops.len() == 2 => {
                // The Mach-O printer gives the page in a `; 0x4000` comment; the others print
                // it as the operand.
                let page = match insn.comment.as_deref().and_then(|c| c.strip_prefix(';')) {
                    Some(c) => hex(c.trim()),
                    None => hex(&ops[1]),
                };
                if let Some(page) = page {
                    regs.insert(dest, (page, None));
                }
                continue;
            }
            "add" if ops.len() == 3 && !ops[2].contains(' ') => {
                if let (Some(&(base, origin)), Some(offset)) = (regs.get(&ops[1]), imm(&ops[2])) {
                    if let Some(origin) = origin {
                        out.remove(&origin);
                    }
                    out.insert(insn.address, base + offset);
                    regs.insert(dest, (base + offset, Some(insn.address)));
                    continue;
                }
            }
            m if (m.starts_with("ldr") || m.starts_with("str")) && ops.len() >= 2 => {
                let memory = insn.operands.split('[').nth(1).unwrap_or("");
                let mut parts = memory.trim_end_matches(']').split(',');
                let base = parts.next().unwrap_or("").trim();
                let offset = parts.next().map(|p| p.trim().trim_end_matches(']'));
                if let Some(&(page, _)) = regs.get(base) {
                    let offset = offset.and_then(imm).unwrap_or(0);
                    out.insert(insn.address, page + offset);
                }
            }
            _ => {}
        }
        forget(&mut regs, insn, &ops);
    }
    out
}

/// What an instruction the address rule does not follow makes it forget, as a value flows in
/// straight-line code: the registers it writes (a `w` write clobbers the `x` register, a load
/// pair writes two, writeback moves the base; stores and comparisons write none), the
/// registers a call may clobber (x0-x18, x30), and everything after an unconditional transfer.
fn forget(regs: &mut BTreeMap<String, (u64, Option<u64>)>, insn: &Insn, ops: &[String]) {
    let x = |r: &str| match r.strip_prefix('w') {
        Some(n) => format!("x{n}"),
        None => r.to_string(),
    };
    let m = insn.mnemonic.as_str();
    let writes = !(m.starts_with("st") || matches!(m, "cmp" | "cmn" | "tst"));
    let pair = ["ldp", "ldnp", "ldxp", "ldaxp"]
        .iter()
        .any(|p| m.starts_with(p));
    if writes {
        for r in ops.iter().take(if pair { 2 } else { 1 }) {
            regs.remove(&x(r));
        }
    }
    if insn.operands.contains("]!") || insn.operands.contains("],") {
        let base = insn.operands.split('[').nth(1).unwrap_or("");
        let base = base.split([',', ']']).next().unwrap_or("").trim();
        regs.remove(&x(base));
    }
    match m {
        "bl" | "blr" => {
            for r in (0..=18).chain([30]) {
                regs.remove(&format!("x{r}"));
            }
        }
        "b" | "br" | "ret" => regs.clear(),
        _ => {}
    }
}
