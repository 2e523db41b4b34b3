//! The serde adapters that put `u64` addresses of the native provider's types on the wire in
//! canonical text. Text and parsing are [`Address`]'s: one canonical form, one parser.

use crate::ids::Address;

/// Formats an address the one way rea shows addresses (see [`Address`]).
pub fn format_address(address: u64) -> String {
    Address(address).to_string()
}

/// Parses the address forms agents send, as [`Address::parse`] does; anything else is `None`.
pub fn parse_address(text: &str) -> Option<u64> {
    Address::parse(text).ok().map(|a| a.0)
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

    /// Reads `0x`-hex text (see [`Address::parse`](crate::ids::Address::parse)), or a plain number.
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

    /// Reads `0x`-hex text, a plain number, or null.
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
        assert_eq!(parse_address("0x00401000"), Some(0x401000));
        // Only 0x-hex: bare digits and surrounding spaces are not guessed at.
        assert_eq!(parse_address("1f"), None);
        assert_eq!(parse_address(" 0x00401000 "), None);
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
        let n: T = serde_json::from_str(r#"{"a":16,"b":"0x20"}"#).unwrap();
        assert_eq!(
            n,
            T {
                a: 16,
                b: Some(0x20)
            }
        );
    }
}
