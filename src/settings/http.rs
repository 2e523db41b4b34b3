//! The `[http]` table of `rea.toml`: who may call `rea serve --http` (bearer tokens, each a
//! principal, or `auth = "none"`), and the [`Principal`] a binary session belongs to.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::CONFIG_FILE_NAME;

/// Who calls: the local process over stdio (and every HTTP client when auth is off), or the
/// name of the bearer token an HTTP request carries. A binary session belongs to the principal
/// that opened it; its text is what the session's database keeps as its owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The text of the local principal.
    pub const LOCAL: &'static str = "local";

    /// The process that started rea (stdio), and every HTTP client when `auth = "none"`.
    pub fn local() -> Principal {
        Principal(Self::LOCAL.into())
    }

    /// The holder of the HTTP token named `name` in `[http] tokens`. The `http:` prefix keeps a
    /// token named `local` from ever being the local principal.
    pub fn token(name: &str) -> Principal {
        Principal(format!("http:{name}").into())
    }

    /// A principal as a session's database keeps it.
    pub fn stored(text: &str) -> Principal {
        Principal(text.into())
    }

    /// Its text, as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of the principal holding the token rea generates when `[http] tokens` names none.
pub const GENERATED_PRINCIPAL: &str = "default";

/// The file in the state directory holding the generated token.
pub const TOKEN_FILE_NAME: &str = "http-token";

/// Fewest characters a configured token may have: a short token can be guessed by trying
/// every one over loopback.
pub const MIN_TOKEN_CHARS: usize = 16;

/// How `rea serve --http` authenticates its callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpAuth {
    /// `auth = "none"`: every request is the local principal. For throwaway use only.
    None,
    /// Every request carries one of these tokens, each with its principal. Empty: none is
    /// configured, and rea generates one at start ([`generate_token`]).
    Bearer(Vec<(Principal, String)>),
}

/// Why the `[http]` table cannot be used; `rea serve --http` does not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The configuration file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML, or `[http]` has a wrong type or an unknown key.
    #[error("{path}: the [http] table is not valid: {reason}")]
    Syntax {
        /// The configuration file.
        path: PathBuf,
        /// What the TOML parser said.
        reason: String,
    },
    /// A value of `[http]` is not acceptable.
    #[error("{path}: [http] {reason}")]
    Invalid {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong and what would do.
        reason: String,
    },
}

/// The token file could not be written; `rea serve --http` does not start without it.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the HTTP token file {path}: {source}")]
pub struct TokenFileError {
    /// The file.
    pub path: PathBuf,
    /// What the operating system said.
    #[source]
    pub source: std::io::Error,
}

#[derive(serde::Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    http: Option<HttpTable>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpTable {
    auth: Option<String>,
    tokens: Option<BTreeMap<String, String>>,
}

/// The `[http]` table of `<config_dir>/rea.toml`: bearer tokens with a generated one when there
/// is no file, no table or no `tokens`.
pub fn load(config_dir: Option<&Path>) -> Result<HttpAuth, HttpConfigError> {
    let Some(dir) = config_dir else {
        return Ok(HttpAuth::Bearer(vec![]));
    };
    let path = dir.join(CONFIG_FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => from_toml(&text, &path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HttpAuth::Bearer(vec![])),
        Err(source) => Err(HttpConfigError::Read { path, source }),
    }
}

/// The authentication a `rea.toml` text sets (`path` names it in errors).
pub fn from_toml(text: &str, path: &Path) -> Result<HttpAuth, HttpConfigError> {
    let file: ConfigFile = toml::from_str(text).map_err(|e| HttpConfigError::Syntax {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let invalid = |reason: String| HttpConfigError::Invalid {
        path: path.to_owned(),
        reason,
    };
    let Some(table) = file.http else {
        return Ok(HttpAuth::Bearer(vec![]));
    };
    match table.auth.as_deref() {
        None | Some("bearer") => {}
        Some("none") if table.tokens.is_some() => {
            return Err(invalid(
                "auth = \"none\" turns authentication off, so tokens would never be checked; remove one of the two".into(),
            ));
        }
        Some("none") => return Ok(HttpAuth::None),
        Some(other) => {
            return Err(invalid(format!(
                "auth = {other:?} is not known; it is \"bearer\" (the default) or \"none\""
            )));
        }
    }
    let mut seen = HashSet::new();
    let mut tokens = vec![];
    for (name, token) in table.tokens.unwrap_or_default() {
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-@".contains(&b));
        if !name_ok {
            return Err(invalid(format!(
                "tokens: the name {name:?} is not 1 to 64 of the characters A-Z a-z 0-9 _ . - @"
            )));
        }
        if token.is_empty() {
            return Err(invalid(format!("tokens: the token of {name} is empty")));
        }
        // RFC 6750's b64token: what a client can send in the header as it is.
        let token_ok = token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b));
        if !token_ok {
            return Err(invalid(format!(
                "tokens: the token of {name} holds a character a bearer token cannot (only A-Z a-z 0-9 - . _ ~ + / =)"
            )));
        }
        if token.len() < MIN_TOKEN_CHARS {
            return Err(invalid(format!(
                "tokens: the token of {name} has {} characters, fewer than {MIN_TOKEN_CHARS}; a short token can be guessed",
                token.len()
            )));
        }
        if !seen.insert(token.clone()) {
            return Err(invalid(format!(
                "tokens: the token of {name} is also another name's; each principal needs a token of its own"
            )));
        }
        tokens.push((Principal::token(&name), token));
    }
    Ok(HttpAuth::Bearer(tokens))
}

/// A new random token (256 bits from the operating system, hex) for the
/// [`GENERATED_PRINCIPAL`], written to [`TOKEN_FILE_NAME`] in `state_dir`, readable by its owner
/// only. The file is written beside and renamed into place, so it is never seen half written or
/// with other permissions, and a link planted at its name is replaced, not followed.
pub fn generate_token(state_dir: &Path) -> Result<(String, PathBuf), TokenFileError> {
    let path = state_dir.join(TOKEN_FILE_NAME);
    let fail = |source| TokenFileError {
        path: path.clone(),
        source,
    };
    let mut random = [0u8; 32];
    getrandom::fill(&mut random).map_err(|e| fail(std::io::Error::other(e.to_string())))?;
    let token = hex::encode(random);
    std::fs::create_dir_all(state_dir).map_err(fail)?;
    let temporary = state_dir.join(format!(".{TOKEN_FILE_NAME}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        // On Windows the file takes the access list of the state directory, which under the
        // user's profile admits the user alone.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temporary)?;
        file.write_all(token.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(fail(e));
    }
    Ok((token, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<HttpAuth, String> {
        from_toml(text, Path::new("/c/rea.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_http_table_is_validated_regression_25() {
        assert_eq!(check(""), Ok(HttpAuth::Bearer(vec![])));
        assert_eq!(check("[http]\nauth = \"none\"\n"), Ok(HttpAuth::None));
        assert_eq!(
            check(
                "[http]\ntokens = { alice = \"aaaaaaaaaaaaaaaa1\", bob = \"bbbbbbbbbbbbbbbb2\" }\n"
            ),
            Ok(HttpAuth::Bearer(vec![
                (Principal::token("alice"), "aaaaaaaaaaaaaaaa1".into()),
                (Principal::token("bob"), "bbbbbbbbbbbbbbbb2".into()),
            ]))
        );
        assert_eq!(
            check("[http]\ntokens = { alice = \"\" }\n"),
            Err("/c/rea.toml: [http] tokens: the token of alice is empty".into())
        );
        assert_eq!(
            check("[http]\ntokens = { alice = \"same-token-0123456\", bob = \"same-token-0123456\" }\n"),
            Err("/c/rea.toml: [http] tokens: the token of bob is also another name's; each principal needs a token of its own".into())
        );
        assert_eq!(
            check("[http]\ntokens = { alice = \"short\" }\n"),
            Err("/c/rea.toml: [http] tokens: the token of alice has 5 characters, fewer than 16; a short token can be guessed".into())
        );
        assert_eq!(
            check("[http]\ntokens = { alice = \"has a space in it!!\" }\n"),
            Err("/c/rea.toml: [http] tokens: the token of alice holds a character a bearer token cannot (only A-Z a-z 0-9 - . _ ~ + / =)".into())
        );
        assert_eq!(
            check("[http]\ntokens = { \"a b\" = \"aaaaaaaaaaaaaaaa1\" }\n"),
            Err("/c/rea.toml: [http] tokens: the name \"a b\" is not 1 to 64 of the characters A-Z a-z 0-9 _ . - @".into())
        );
        assert_eq!(
            check("[http]\nauth = \"basic\"\n"),
            Err("/c/rea.toml: [http] auth = \"basic\" is not known; it is \"bearer\" (the default) or \"none\"".into())
        );
        assert_eq!(
            check("[http]\nauth = \"none\"\ntokens = { alice = \"aaaaaaaaaaaaaaaa1\" }\n"),
            Err("/c/rea.toml: [http] auth = \"none\" turns authentication off, so tokens would never be checked; remove one of the two".into())
        );
        let unknown = check("[http]\ntoken = \"aaaaaaaaaaaaaaaa1\"\n").unwrap_err();
        assert!(
            unknown.starts_with("/c/rea.toml: the [http] table is not valid: ")
                && unknown.contains("unknown field `token`"),
            "{unknown}"
        );
    }

    #[test]
    fn a_token_principal_is_never_the_local_one() {
        assert_ne!(Principal::token("local"), Principal::local());
        assert_eq!(Principal::token("alice").as_str(), "http:alice");
    }
}
