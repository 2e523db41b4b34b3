//! The text rea returns from angr's pseudo-code: numbers angr left raw that are addresses rea
//! knows are written as assembly names them (strings quoted, data symbols, import slots,
//! procedures), and each such rewrite is a reference of the code.
//!
//! angr names what its own analyses resolved; an address it only sees as an operand (a load
//! from `stderr`'s copy, a typeinfo passed to `__cxa_throw`, a table base in an expression) stays
//! a number, which an agent cannot follow. rea knows the document's symbols, strings and import
//! slots, so the rewrite happens here, on whole tokens, outside literals and comments, and never
//! changes the number of lines (references and limitations point at lines).

use crate::providers::decompile::{CodeReference, ReferenceKind, Referent};
use crate::providers::native::{DataName, DataNames, Image};

/// Decimal numbers below this are never read as addresses: small constants are everywhere, and
/// angr prints the pointers it recognizes in hexadecimal.
const DECIMAL_FLOOR: u64 = 0x10000;

/// What an address is, for the text.
struct Named {
    kind: ReferenceKind,
    /// The expression standing for the address itself.
    address: String,
    /// The expression standing for what a load from the address reads, when it has a name.
    value: Option<String>,
    referent: Referent,
}

/// Rewrites `lines` in place and adds a reference for each rewrite (updating the `shown` text of
/// references angr already gave for the same token on the same line). `operands` (sorted) are the
/// addresses the procedure's instructions name: a number is an address only when it is one of
/// them, so a constant that merely equals one (isqrt's `return 0x1000;` in a PIE whose `_init`
/// is at 0x1000) stays a number. `None` when the instructions could not be decoded: then any
/// number in a mapped section is.
pub(crate) fn name_data(
    image: &Image,
    operands: Option<&[u64]>,
    lines: &mut [String],
    references: &mut Vec<CodeReference>,
) {
    let names = DataNames::new(image);
    for (index, line) in lines.iter_mut().enumerate() {
        let number = index + 1;
        if line.trim_start().starts_with("typedef") {
            continue;
        }
        let (text, found) = rewrite_line(image, &names, operands, line);
        if found.is_empty() {
            continue;
        }
        *line = text;
        for (raw, address, shown, named) in found {
            if let Some(existing) = references
                .iter_mut()
                .find(|r| r.line == number && r.address == address && r.shown == raw)
            {
                existing.shown = shown;
                continue;
            }
            if references
                .iter()
                .any(|r| r.line == number && r.address == address && r.shown == shown)
            {
                continue;
            }
            references.push(CodeReference {
                line: number,
                kind: named.kind,
                address,
                shown,
                referent: named.referent,
            });
        }
    }
    references.sort_by_key(|r| r.line);
}

/// One line rewritten, with `(raw token, address, shown text, what it is)` for each rewrite.
fn rewrite_line(
    image: &Image,
    names: &DataNames<'_>,
    operands: Option<&[u64]>,
    line: &str,
) -> (String, Vec<(String, u64, String, Named)>) {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        // String and character literals, and comments, are copied as they are.
        if c == b'"' || c == b'\'' {
            let end = literal_end(bytes, i);
            out.push_str(&line[i..end]);
            i = end;
            continue;
        }
        if line[i..].starts_with("//") {
            out.push_str(&line[i..]);
            break;
        }
        if line[i..].starts_with("/*") {
            let end = line[i + 2..]
                .find("*/")
                .map_or(line.len(), |e| i + 2 + e + 2);
            out.push_str(&line[i..end]);
            i = end;
            continue;
        }
        let boundary = i == 0 || !is_word(bytes[i - 1]);
        if c.is_ascii_digit() && boundary {
            let end = (i..bytes.len())
                .find(|&j| !is_word(bytes[j]))
                .unwrap_or(bytes.len());
            let token = &line[i..end];
            if let Some((address, named)) = number(token).and_then(|(value, hex)| {
                if (!hex && value < DECIMAL_FLOOR)
                    || operands.is_some_and(|o| o.binary_search(&value).is_err())
                {
                    return None;
                }
                lookup(image, names, value).map(|n| (value, n))
            }) {
                // `*((T *)ADDRESS)` is a load: the variable's name, when it has one.
                if let Some(value) = &named.value
                    && let Some(start) = load_start(&out)
                    && line[end..].starts_with(')')
                {
                    let raw = format!("{}{token})", &out[start..]);
                    out.truncate(start);
                    out.push_str(value);
                    found.push((raw, address, value.clone(), named));
                    i = end + 1;
                    continue;
                }
                out.push_str(&named.address);
                found.push((token.to_string(), address, named.address.clone(), named));
                i = end;
                continue;
            }
            out.push_str(token);
            i = end;
            continue;
        }
        let ch = line[i..].chars().next().expect("inside the line");
        out.push(ch);
        i += ch.len_utf8();
    }
    (out, found)
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// End (exclusive) of the literal opening at `start`.
fn literal_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut j = start + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b if b == quote => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// A number token's value, and whether it was written in hexadecimal.
fn number(token: &str) -> Option<(u64, bool)> {
    if let Some(hex) = token.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(|v| (v, true));
    }
    token.parse().ok().map(|v| (v, false))
}

/// Where `*((T *)` starts at the end of `out`, when it does: the cast of a load.
fn load_start(out: &str) -> Option<usize> {
    let open = out.rfind("*((")?;
    let cast = &out[open + 3..];
    let ty = cast.strip_suffix("*)")?;
    ty.bytes()
        .all(|b| is_word(b) || b == b' ' || b == b'*')
        .then_some(open)
}

/// What rea knows at `address`, as the text should name it: the names assembly operands get
/// ([`DataNames`]), and procedures by name.
fn lookup(image: &Image, names: &DataNames<'_>, address: u64) -> Option<Named> {
    let section = image.section_at(address)?;
    if section.executable {
        // Code: a procedure's start is its name (a function designator is its address).
        let procedure = image.procedure_starting_at(address)?;
        let name = procedure.name.clone()?;
        return Some(Named {
            kind: ReferenceKind::Function,
            address: name.clone(),
            value: None,
            referent: Referent::Procedure {
                address,
                name: Some(name),
            },
        });
    }
    match names.resolve(address)? {
        DataName::Slot(slot) => {
            let import = image.import_at(address)?;
            Some(Named {
                kind: ReferenceKind::Data,
                address: format!("&{slot}"),
                value: Some(slot),
                referent: Referent::Import {
                    name: import.name.clone(),
                    library: import.library.clone(),
                    via: import.kind.to_string(),
                },
            })
        }
        DataName::Text(quoted) => Some(Named {
            kind: ReferenceKind::String,
            address: quoted,
            value: None,
            referent: image
                .string_at(address)
                .map(|(text, encoding)| Referent::String {
                    text,
                    encoding: encoding.to_string(),
                })
                .unwrap_or_else(|| Referent::Unknown {
                    section: Some(section.name.clone()),
                }),
        }),
        DataName::Symbol { name, offset, .. } => {
            // The text names the variable as C does (`stderr`, not `stderr@GLIBC_2.2.5`).
            let base = name.split('@').next().unwrap_or(&name).to_string();
            let (address, value) = if offset == 0 {
                (format!("&{base}"), Some(base))
            } else {
                (format!("((char *)&{base} + {offset:#x})"), None)
            };
            Some(Named {
                kind: ReferenceKind::Data,
                address,
                value,
                referent: Referent::Symbol { name },
            })
        }
    }
}

/// Writes angr's `goto EXPR;` through a loaded pointer (`goto OPS[a0 & 3];`, `goto *((long long
/// *)(OPS + 8 * (a0 & 3)));`) as the tail call it is: a jump through a table of code pointers
/// leaves the function for the entry it loads. Returns a limitation per rewrite (the arguments
/// are the registers as the jump leaves them, which angr's code does not show) and per other
/// computed `goto` (a jump angr could not resolve, left as it is).
pub(crate) fn tail_calls_through_tables(lines: &mut [String]) -> Vec<String> {
    let mut limitations = Vec::new();
    for (index, line) in lines.iter_mut().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        let Some(target) = trimmed
            .strip_prefix("goto ")
            .and_then(|t| t.strip_suffix(';'))
        else {
            continue;
        };
        if target.starts_with("LABEL_") {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if is_load(target) {
            let shown = target.to_string();
            *line = format!("{indent}return ((long long (*)())({shown}))();");
            limitations.push(format!(
                "line {number}: angr's `goto {shown}` is a tail call of the table entry it \
                 loads, written as a call; its arguments are the argument registers as the jump \
                 leaves them, which the code does not show"
            ));
        } else {
            limitations.push(format!(
                "line {number}: `goto {target}` is an indirect jump angr did not resolve; where it \
                 goes is not shown"
            ));
        }
    }
    limitations
}

/// Whether `expr` is a load of a pointer: `NAME[...]` or `*(...)` as a whole.
fn is_load(expr: &str) -> bool {
    let closes_at_end = |open: usize, close_char: u8| {
        let bytes = expr.as_bytes();
        let open_char = bytes[open];
        let mut depth = 0usize;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            if b == open_char {
                depth += 1;
            } else if b == close_char {
                depth -= 1;
                if depth == 0 {
                    return i == bytes.len() - 1;
                }
            }
        }
        false
    };
    if expr.starts_with("*(") {
        return closes_at_end(1, b')');
    }
    match expr.find('[') {
        Some(open) if open > 0 && expr[..open].bytes().all(is_word) => closes_at_end(open, b']'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goto_through_a_loaded_pointer_is_a_tail_call_and_other_gotos_are_named() {
        let mut lines = vec![
            "    goto OPS[a0 & 3];".to_string(),
            "    goto *((long long *)(131168 + 8 * (a0 & 3)));".to_string(),
            "    goto (long long)(g_1[8 + v4] + (char *)&g_1[0]);".to_string(),
            "    goto LABEL_0x10;".to_string(),
        ];
        let limitations = tail_calls_through_tables(&mut lines);
        assert_eq!(
            lines,
            [
                "    return ((long long (*)())(OPS[a0 & 3]))();",
                "    return ((long long (*)())(*((long long *)(131168 + 8 * (a0 & 3)))))();",
                "    goto (long long)(g_1[8 + v4] + (char *)&g_1[0]);",
                "    goto LABEL_0x10;",
            ]
        );
        assert_eq!(limitations.len(), 3);
        assert!(limitations[0].starts_with("line 1: angr's `goto OPS[a0 & 3]` is a tail call"));
        assert!(limitations[2].starts_with(
            "line 3: `goto (long long)(g_1[8 + v4] + (char *)&g_1[0])` is an indirect jump"
        ));
    }
}
