//! Estimates how deeply the parser will recurse on a source text, so that crafted inputs
//! (thousands of nested brackets, prefix operators or `else if` links) are refused before they
//! can overflow the parsing thread's stack.

/// Keywords that open a construct the parser handles by recursion (unary operators, nested
/// statements without braces).
const NESTING_KEYWORDS: [&str; 11] = [
    "new", "typeof", "void", "delete", "await", "yield", "if", "else", "while", "for", "with",
];

/// Keywords that can only start a statement, so no expression nesting continues across them.
const STATEMENT_KEYWORDS: [&str; 9] = [
    "const", "var", "export", "return", "break", "continue", "switch", "try", "debugger",
];

/// Keywords after which a `/` starts a regular expression rather than a division.
const REGEX_AFTER: [&str; 13] = [
    "return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
    "yield", "await",
];

/// An upper estimate of how deeply the parser will recurse on `text`.
///
/// The parser recurses once per bracket and once per prefix operator, `?`, assignment, arrow,
/// `**`, and per statement nested without braces (`if (a) if (b) …`, `else if` chains). Per
/// bracket level, this counts such tokens since the last `;` or `,` (or statement-only keyword)
/// and returns the largest sum over the open levels. Strings, comments and regular expressions
/// are skipped. It over-counts (binary `+` after an operator, non-recursive `=`), which is safe.
pub(crate) fn nesting_estimate(text: &str) -> usize {
    let b = text.as_bytes();
    let mut levels: Vec<usize> = vec![0];
    let (mut total, mut max, mut i) = (0usize, 0usize, 0usize);
    // The previous significant byte: decides unary operators and regular expressions.
    let mut prev = b';';
    let operand_expected = |p: u8| b"(,=:[!&|?{};+-*%<>~^".contains(&p);
    while i < b.len() {
        let c = b[i];
        let mut bump = false;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' | b'[' | b'{' => {
                levels.push(0);
                total += 1;
                max = max.max(total);
            }
            b')' | b']' | b'}' if levels.len() > 1 => {
                let top = levels.pop().unwrap_or(0);
                total = total.saturating_sub(top + 1);
            }
            b';' | b',' => {
                if let Some(top) = levels.last_mut() {
                    total = total.saturating_sub(*top);
                    *top = 0;
                }
            }
            b'"' | b'\'' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c && !(c != b'`' && b[i] == b'\n') {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'/' if operand_expected(prev) => {
                // A regular expression literal: skip to its closing slash (outside a class).
                let mut in_class = false;
                i += 1;
                while i < b.len() && b[i] != b'\n' {
                    match b[i] {
                        b'\\' => i += 1,
                        b'[' => in_class = true,
                        b']' => in_class = false,
                        b'/' if !in_class => break,
                        _ => {}
                    }
                    i += 1;
                }
                prev = b'a';
                i += 1;
                continue;
            }
            b'!' | b'~' => bump = b.get(i + 1) != Some(&b'='),
            b'+' | b'-' => {
                if b.get(i + 1) == Some(&c) {
                    i += 1;
                } else {
                    bump = operand_expected(prev);
                }
            }
            b'?' => match b.get(i + 1) {
                Some(b'?') => i += 1,
                Some(b'.') if !b.get(i + 2).is_some_and(u8::is_ascii_digit) => i += 1,
                _ => bump = true,
            },
            b'=' => match b.get(i + 1) {
                Some(b'=') => {
                    while b.get(i + 1) == Some(&b'=') {
                        i += 1;
                    }
                }
                Some(b'>') => {
                    bump = true;
                    i += 1;
                }
                _ => bump = !matches!(prev, b'<' | b'>' | b'!' | b'='),
            },
            // JSX elements and TypeScript type arguments nest without brackets.
            b'<' => {
                bump = b
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'>' || *n == b'_');
            }
            b'*' if b.get(i + 1) == Some(&b'*') => {
                bump = true;
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
                // Compared as bytes: `start` may follow an escape that ended mid-character.
                let word = &b[start..i];
                let is = |list: &[&str]| list.iter().any(|k| k.as_bytes() == word);
                if is(&NESTING_KEYWORDS) {
                    bump = true;
                } else if is(&STATEMENT_KEYWORDS)
                    && let Some(top) = levels.last_mut()
                {
                    total = total.saturating_sub(*top);
                    *top = 0;
                }
                prev = if is(&REGEX_AFTER) { b'=' } else { b'a' };
                if bump && let Some(top) = levels.last_mut() {
                    *top += 1;
                    total += 1;
                    max = max.max(total);
                }
                continue;
            }
            _ => {}
        }
        if bump && let Some(top) = levels.last_mut() {
            *top += 1;
            total += 1;
            max = max.max(total);
        }
        prev = c;
        i += 1;
    }
    max
}

#[cfg(test)]
mod tests {
    use super::nesting_estimate;

    #[test]
    fn real_code_estimates_low() {
        let bundle = std::fs::read_to_string(
            crate::analyzers::javascript::tests::fixtures()
                .join("nativefier/package/app/lib/main.js"),
        )
        .expect("nativefier main.js");
        assert_eq!(nesting_estimate(&bundle), 55);
    }

    #[test]
    fn strings_comments_and_regexes_do_not_count() {
        assert_eq!(
            nesting_estimate("a = '((((' + \"[[[\" + `{{{`; // ((((\n/* [[[[ */"),
            1
        );
        assert_eq!(nesting_estimate("x = /[(]+\\(/.test(y); z = a / b / c;"), 2);
        assert_eq!(nesting_estimate("x = !!!a"), 4);
        assert_eq!(nesting_estimate("f(a ? b : c ? d : e)"), 3);
        assert_eq!(
            nesting_estimate("if (a) { x = 1; } else if (b) { y = 2; }"),
            5
        );
        // `;`, `,` and statement-only keywords end a run.
        assert_eq!(nesting_estimate("a = 1; b = 2, c = 3\nconst d = 4"), 1);
    }
}
