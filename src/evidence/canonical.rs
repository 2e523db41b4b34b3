//! RFC 8785 canonical JSON written straight from a `serde_json::Value` tree.
//!
//! `serde_jcs` canonicalizes any `Serialize` value, but it buffers every object member, boxes a
//! writer per token and parses each key back to sort it: about 9 µs for a typical 550-byte record,
//! three times the cost of the rest of recording it outside SQLite. Records are turned into a
//! `Value` first and written here in one pass. The output must be byte for byte what `serde_jcs`
//! writes, since ids already in ledgers are digests of it; the tests and the `canonical_json`
//! fuzz target compare the two.

use serde_json::{Map, Number, Value};

/// Appends the canonical form of `value` to `out`.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => write_object(members, out),
    }
}

/// Members in the order of their names' UTF-16 code units (RFC 8785 §3.2.3). The map is
/// ordered by UTF-8 bytes, which is the same order unless a name holds a character at or above
/// U+E000 next to one beyond U+FFFF; only then are the members sorted again.
fn write_object(members: &Map<String, Value>, out: &mut String) {
    out.push('{');
    let needs_sort = members.keys().any(|k| k.chars().any(|c| c >= '\u{e000}'));
    let mut write_member = |i: usize, name: &str, value: &Value| {
        if i > 0 {
            out.push(',');
        }
        write_string(name, out);
        out.push(':');
        write_value(value, out);
    };
    if needs_sort {
        let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
        sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        for (i, (name, value)) in sorted.into_iter().enumerate() {
            write_member(i, name, value);
        }
    } else {
        for (i, (name, value)) in members.iter().enumerate() {
            write_member(i, name, value);
        }
    }
    out.push('}');
}

/// Every number as the IEEE 754 double it denotes, in ECMAScript's shortest form (RFC 8785
/// §3.2.2.3); integers beyond 2^53 lose precision exactly as JavaScript would.
fn write_number(n: &Number, out: &mut String) {
    // A Value never holds NaN or an infinity, so every number has a finite double.
    let double = n.as_f64().unwrap_or(0.0);
    let mut buffer = ryu_js::Buffer::new();
    out.push_str(buffer.format_finite(double));
}

/// A string with only `"`, `\` and control characters escaped (RFC 8785 §3.2.2.2).
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let mut plain = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x09 => "\\t",
            0x0a => "\\n",
            0x0c => "\\f",
            0x0d => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[plain..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        plain = i + 1;
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canonical(value: &Value) -> String {
        let mut out = String::new();
        write_value(value, &mut out);
        out
    }

    #[test]
    fn rfc_8785_examples() {
        // RFC 8785 §3.2.3: names sorted by UTF-16 code units, so U+1F600 (D83D DE00) comes
        // before U+FB33 though it is the larger code point.
        let value = json!({
            "\u{20ac}": "Euro Sign",
            "\r": "Carriage Return",
            "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\u{1f600}": "Emoji: Grinning Face",
            "\u{0080}": "Control",
            "\u{00f6}": "Latin Small Letter O With Diaeresis"
        });
        assert_eq!(
            canonical(&value),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{0080}\":\"Control\",\"\u{00f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        // §3.2.2.3 numbers, parsed from the RFC's JSON text.
        let numbers: Value = serde_json::from_str(
            "[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0.0, 9007199254740993]",
        )
        .unwrap();
        assert_eq!(
            canonical(&numbers),
            "[333333333.3333333,1e+30,4.5,0.002,1e-27,0,9007199254740992]"
        );
        assert_eq!(
            canonical(&json!("\u{0}\u{1f}\u{7f}\"\\/\u{8}\u{c}")),
            "\"\\u0000\\u001f\u{7f}\\\"\\\\/\\b\\f\""
        );
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x20\"\\\\\u{e000}-\u{e010}\u{10000}-\u{10010}a-c]{0,6}"
                .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        any::<String>(),
                        "[a-c\u{e000}-\u{e002}\u{fb33}\u{10000}-\u{10002}\u{1f600}\"\\x01]{0,4}",
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn writes_what_serde_jcs_writes(value in any_value()) {
            prop_assert_eq!(canonical(&value), serde_jcs::to_string(&value).unwrap());
        }

        #[test]
        fn a_record_keeps_the_id_serde_jcs_gives_it(
            parameters in any_value(),
            result in any_value(),
            limitation in any::<String>(),
            line in any::<Option<u32>>(),
        ) {
            use crate::evidence::{Authority, Confidence, EvidenceRecord, Location, ProviderStamp};
            let record = EvidenceRecord {
                subject: None,
                provider: ProviderStamp::builtin(),
                operation: "proptest".into(),
                parameters,
                result,
                confidence: Confidence::Inferred,
                authority: Authority::ShippedArtifact,
                limitations: vec![limitation],
                locations: vec![Location { document: Some("d".into()), address: None, file: None, line }],
                links: vec![],
            };
            prop_assert_eq!(record.canonical_json().unwrap(), serde_jcs::to_string(&record).unwrap());
        }
    }
}
