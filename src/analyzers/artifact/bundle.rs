//! Bundle metadata: the Info.plist keys an investigation cares about, and Electron's fuse names
//! and their insecure states.

use plist::Value;

use super::Severity;

/// Info.plist keys reported verbatim when present.
const SCALAR_KEYS: [&str; 5] = [
    "CFBundleIdentifier",
    "CFBundleShortVersionString",
    "CFBundleVersion",
    "CFBundleExecutable",
    "LSMinimumSystemVersion",
];

/// App Transport Security switches reported when present.
const ATS_KEYS: [&str; 4] = [
    "NSAllowsArbitraryLoads",
    "NSAllowsArbitraryLoadsInWebContent",
    "NSAllowsArbitraryLoadsForMedia",
    "NSAllowsLocalNetworking",
];

/// One ElectronAsarIntegrity entry: archive path relative to the bundle's `Contents/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AsarIntegrity {
    pub archive: String,
    pub algorithm: Option<String>,
    pub hash: Option<String>,
}

/// What an Info.plist says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PlistFacts {
    /// `(dotted key path, value)` pairs, in document order of the keys looked for.
    pub entries: Vec<(String, String)>,
    /// `CFBundleExecutable`.
    pub executable: Option<String>,
    /// ElectronAsarIntegrity entries.
    pub asar_integrity: Vec<AsarIntegrity>,
}

/// Renders a plist value as occurrence text: booleans and numbers plainly, strings as they are,
/// arrays and dictionaries as JSON.
pub(crate) fn render(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Boolean(flag) => flag.to_string(),
        Value::Integer(number) => number.to_string(),
        Value::Real(number) => number.to_string(),
        other => serde_json::to_string(&to_json(other)).unwrap_or_default(),
    }
}

fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::String(text) => serde_json::Value::String(text.clone()),
        Value::Boolean(flag) => serde_json::Value::Bool(*flag),
        Value::Integer(number) => number
            .as_signed()
            .map(serde_json::Value::from)
            .or_else(|| number.as_unsigned().map(serde_json::Value::from))
            .unwrap_or(serde_json::Value::Null),
        Value::Real(number) => serde_json::Number::from_f64(*number)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Dictionary(dict) => serde_json::Value::Object(
            dict.iter()
                .map(|(key, value)| (key.clone(), to_json(value)))
                .collect(),
        ),
        Value::Data(bytes) => serde_json::Value::String(hex::encode(bytes)),
        Value::Date(date) => serde_json::Value::String(date.to_xml_format()),
        Value::Uid(uid) => serde_json::Value::from(uid.get()),
        _ => serde_json::Value::Null,
    }
}

/// Reads the keys that matter from an Info.plist (XML or binary).
pub(crate) fn info_plist_facts(data: &[u8]) -> Result<PlistFacts, String> {
    let value = Value::from_reader(std::io::Cursor::new(data)).map_err(|e| e.to_string())?;
    let dict = value
        .as_dictionary()
        .ok_or_else(|| "the top level is not a dictionary".to_string())?;
    let mut facts = PlistFacts::default();
    for key in SCALAR_KEYS {
        if let Some(value) = dict.get(key) {
            facts.entries.push((key.to_string(), render(value)));
        }
    }
    facts.executable = dict
        .get("CFBundleExecutable")
        .and_then(Value::as_string)
        .map(str::to_string);
    if let Some(types) = dict.get("CFBundleURLTypes").and_then(Value::as_array) {
        for url_type in types {
            let schemes = url_type
                .as_dictionary()
                .and_then(|d| d.get("CFBundleURLSchemes"))
                .and_then(Value::as_array);
            for scheme in schemes.into_iter().flatten() {
                facts.entries.push((
                    "CFBundleURLTypes.CFBundleURLSchemes".to_string(),
                    render(scheme),
                ));
            }
        }
    }
    if let Some(ats) = dict
        .get("NSAppTransportSecurity")
        .and_then(Value::as_dictionary)
    {
        for key in ATS_KEYS {
            if let Some(value) = ats.get(key) {
                facts
                    .entries
                    .push((format!("NSAppTransportSecurity.{key}"), render(value)));
            }
        }
        if let Some(domains) = ats.get("NSExceptionDomains").and_then(Value::as_dictionary) {
            for (domain, settings) in domains {
                facts.entries.push((
                    "NSAppTransportSecurity.NSExceptionDomains".to_string(),
                    domain.clone(),
                ));
                for (key, value) in settings.as_dictionary().into_iter().flatten() {
                    facts.entries.push((
                        format!("NSAppTransportSecurity.NSExceptionDomains.{domain}.{key}"),
                        render(value),
                    ));
                }
            }
        }
    }
    if let Some(integrity) = dict
        .get("ElectronAsarIntegrity")
        .and_then(Value::as_dictionary)
    {
        for (archive, settings) in integrity {
            let settings = settings.as_dictionary();
            let field = |name: &str| {
                settings
                    .and_then(|d| d.get(name))
                    .and_then(Value::as_string)
                    .map(str::to_string)
            };
            let entry = AsarIntegrity {
                archive: archive.clone(),
                algorithm: field("algorithm"),
                hash: field("hash"),
            };
            if let Some(algorithm) = &entry.algorithm {
                facts.entries.push((
                    format!("ElectronAsarIntegrity.{archive}.algorithm"),
                    algorithm.clone(),
                ));
            }
            if let Some(hash) = &entry.hash {
                facts.entries.push((
                    format!("ElectronAsarIntegrity.{archive}.hash"),
                    hash.clone(),
                ));
            }
            facts.asar_integrity.push(entry);
        }
    }
    Ok(facts)
}

/// Name of fuse `index` of wire version 1, in wire order.
pub(crate) fn fuse_name(index: usize) -> String {
    const NAMES: [&str; 9] = [
        "RunAsNode",
        "EnableCookieEncryption",
        "EnableNodeOptionsEnvironmentVariable",
        "EnableNodeCliInspectArguments",
        "EnableEmbeddedAsarIntegrityValidation",
        "OnlyLoadAppFromAsar",
        "LoadBrowserProcessSpecificV8Snapshot",
        "GrantFileProtocolExtraPrivileges",
        "WasmTrapHandlers",
    ];
    NAMES
        .get(index)
        .map_or_else(|| format!("fuse-{index}"), |name| name.to_string())
}

/// The state text of a fuse byte.
pub(crate) fn fuse_state(byte: u8) -> String {
    match byte {
        b'0' => "off".to_string(),
        b'1' => "on".to_string(),
        b'r' => "removed".to_string(),
        other => format!("0x{other:02x}"),
    }
}

/// If `(fuse, state)` is insecure, its severity and a sentence saying why.
pub(crate) fn insecure_fuse(name: &str, state: &str) -> Option<(Severity, &'static str)> {
    match (name, state) {
        ("RunAsNode", "on") => Some((
            Severity::Medium,
            "ELECTRON_RUN_AS_NODE turns the app into a plain Node.js runtime that runs any script with the app's identity",
        )),
        ("EnableNodeOptionsEnvironmentVariable", "on") => Some((
            Severity::Medium,
            "NODE_OPTIONS lets the environment inject code into the app's Node.js runtime",
        )),
        ("EnableNodeCliInspectArguments", "on") => Some((
            Severity::Medium,
            "--inspect arguments let anyone who can launch the app attach a debugger to it",
        )),
        ("EnableEmbeddedAsarIntegrityValidation", "off") => Some((
            Severity::Low,
            "app.asar is not checked against its recorded hash, so it can be altered after signing",
        )),
        ("OnlyLoadAppFromAsar", "off") => Some((
            Severity::Low,
            "the app may load its code from folders other than app.asar, bypassing asar integrity",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ats_url_schemes_and_integrity() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>CFBundleIdentifier</key><string>com.example.app</string>
<key>CFBundleExecutable</key><string>Example</string>
<key>CFBundleURLTypes</key><array><dict><key>CFBundleURLSchemes</key><array><string>example</string><string>ex2</string></array></dict></array>
<key>NSAppTransportSecurity</key><dict><key>NSAllowsArbitraryLoads</key><true/>
<key>NSExceptionDomains</key><dict><key>example.org</key><dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict></dict>
<key>ElectronAsarIntegrity</key><dict><key>Resources/app.asar</key><dict><key>algorithm</key><string>SHA256</string><key>hash</key><string>abc</string></dict></dict>
</dict></plist>"#;
        let facts = info_plist_facts(xml).expect("valid plist");
        let has = |k: &str, v: &str| facts.entries.iter().any(|(a, b)| a == k && b == v);
        assert!(has("CFBundleIdentifier", "com.example.app"));
        assert!(has("CFBundleURLTypes.CFBundleURLSchemes", "example"));
        assert!(has("CFBundleURLTypes.CFBundleURLSchemes", "ex2"));
        assert!(has("NSAppTransportSecurity.NSAllowsArbitraryLoads", "true"));
        assert!(has(
            "NSAppTransportSecurity.NSExceptionDomains",
            "example.org"
        ));
        assert!(has(
            "NSAppTransportSecurity.NSExceptionDomains.example.org.NSExceptionAllowsInsecureHTTPLoads",
            "true"
        ));
        assert!(has("ElectronAsarIntegrity.Resources/app.asar.hash", "abc"));
        assert_eq!(facts.executable.as_deref(), Some("Example"));
        assert_eq!(
            facts.asar_integrity,
            vec![AsarIntegrity {
                archive: "Resources/app.asar".into(),
                algorithm: Some("SHA256".into()),
                hash: Some("abc".into())
            }]
        );
        assert!(info_plist_facts(b"<plist><array/></plist>").is_err());
        assert!(info_plist_facts(b"garbage").is_err());
    }

    #[test]
    fn fuse_names_and_states() {
        assert_eq!(fuse_name(0), "RunAsNode");
        assert_eq!(fuse_name(12), "fuse-12");
        assert_eq!(fuse_state(b'r'), "removed");
        assert_eq!(fuse_state(0x90), "0x90");
        assert!(insecure_fuse("RunAsNode", "on").is_some());
        assert!(insecure_fuse("RunAsNode", "off").is_none());
        assert!(insecure_fuse("OnlyLoadAppFromAsar", "off").is_some());
    }
}
