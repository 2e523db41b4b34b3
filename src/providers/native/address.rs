//! Canonical address text (lowercase `0x` hex) and the serde adapters that put it on the wire.

/// Formats an address the one way rea shows addresses: lowercase hex with a `0x` prefix and no
/// padding, so that the same address always reads (and hashes into Evidence) identically.
pub fn format_address(address: u64) -> String {
    format!("{address:#x}")
}

/// Parses the address forms agents send: `0x`/`0X`-prefixed hex or bare hex, surrounded by
/// optional whitespace. Anything else (decimal markers, signs, empty text, overflow) is `None`.
pub fn parse_address(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Serde adapter: a `u64` address as canonical hex text; reading also accepts a JSON number.
pub mod hex {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the canonical text.
    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format_address(*value))
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(u64),
    }

    /// Reads canonical or bare hex text, or a plain number.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        match Either::deserialize(deserializer)? {
            Either::Number(n) => Ok(n),
            Either::Text(t) => super::parse_address(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("not a hex address: {t:?}"))),
        }
    }
}

/// Serde adapter for `Option<u64>` addresses, with the same text form as [`hex`].
pub mod hex_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the canonical text, or null.
    pub fn serialize<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => serializer.serialize_str(&super::format_address(*v)),
            None => serializer.serialize_none(),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(u64),
    }

    /// Reads canonical or bare hex text, a plain number, or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        match Option::<Either>::deserialize(deserializer)? {
            None => Ok(None),
            Some(Either::Number(n)) => Ok(Some(n)),
            Some(Either::Text(t)) => super::parse_address(&t)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("not a hex address: {t:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_lowercase_without_padding() {
        assert_eq!(format_address(0), "0x0");
        assert_eq!(format_address(0x1F), "0x1f");
        assert_eq!(format_address(u64::MAX), "0xffffffffffffffff");
    }

    #[test]
    fn parses_agent_forms() {
        assert_eq!(parse_address("0x1f"), Some(0x1f));
        assert_eq!(parse_address("0X1F"), Some(0x1f));
        assert_eq!(parse_address("1f"), Some(0x1f));
        assert_eq!(parse_address(" 0x00401000 "), Some(0x401000));
        assert_eq!(parse_address("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_address("0x1_0000_0000_0000_0000"), None);
        assert_eq!(parse_address("0x10000000000000000"), None);
        assert_eq!(parse_address(""), None);
        assert_eq!(parse_address("0x"), None);
        assert_eq!(parse_address("#31"), None);
        assert_eq!(parse_address("-1"), None);
        assert_eq!(parse_address("0xg"), None);
    }

    #[test]
    fn serde_round_trip() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T {
            #[serde(with = "hex")]
            a: u64,
            #[serde(with = "hex_opt")]
            b: Option<u64>,
        }
        let t = T { a: 0x10, b: None };
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, r#"{"a":"0x10","b":null}"#);
        assert_eq!(serde_json::from_str::<T>(&text).unwrap(), t);
        let n: T = serde_json::from_str(r#"{"a":16,"b":"20"}"#).unwrap();
        assert_eq!(
            n,
            T {
                a: 16,
                b: Some(0x20)
            }
        );
    }
}
