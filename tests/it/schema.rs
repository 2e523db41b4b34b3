//! Tool schemas as clients see them (issue 17, item 3): input schemas in the subset every MCP
//! client family accepts, output schemas valid JSON Schema 2020-12 with the Evidence envelope
//! defined once, results that match them, and a `tools/list` under 100 KiB with every tool.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

use crate::common::{Harness, Mode, start_in};

/// The `format`s JSON Schema 2020-12 defines.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords no input schema may use: what Gemini's function subset, Codex, Cursor or Ajv in
/// strict mode reject or rewrite.
const FORBIDDEN_IN_INPUTS: &[&str] = &[
    "$schema",
    "$ref",
    "$defs",
    "definitions",
    "$dynamicRef",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "const",
    "additionalProperties",
    "patternProperties",
    "prefixItems",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
];

/// Every way `schema` (an input schema, or a part of one at `path`) leaves the portable subset.
fn portability_violations(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(node) = schema.as_object() else {
        out.push(format!("{path}: a schema is an object"));
        return;
    };
    for keyword in FORBIDDEN_IN_INPUTS {
        if node.contains_key(*keyword) {
            out.push(format!("{path}: uses {keyword}"));
        }
    }
    match node.get("type") {
        Some(Value::String(_)) => {}
        Some(other) => out.push(format!("{path}: type {other} is not one type")),
        None => out.push(format!("{path}: has no type")),
    }
    if let Some(format) = node.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        out.push(format!("{path}: non-standard format {format}"));
    }
    if node.get("default").is_some_and(Value::is_null) {
        out.push(format!("{path}: default null"));
    }
    if let Some(description) = node.get("description") {
        let text = description.as_str().unwrap_or_default();
        if text.contains("[`")
            || text.contains("](")
            || text.contains('\n')
            || text.trim().is_empty()
        {
            out.push(format!(
                "{path}: description is not a plain sentence: {text:?}"
            ));
        }
        if let Some(Value::Array(values)) = node.get("enum") {
            for value in values {
                let shown = value
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or(value.to_string());
                if !text.contains(&shown) {
                    out.push(format!("{path}: description does not list {value}"));
                }
            }
        }
    } else if path != "input" && !path.ends_with("[]") {
        // Every argument says what it is; the items of a described list need not.
        out.push(format!("{path}: has no description"));
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        if node.get("type") != Some(&json!("object")) {
            out.push(format!("{path}: has properties but is not type object"));
        }
        for (name, child) in properties {
            portability_violations(child, &format!("{path}.{name}"), out);
        }
        for required in node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !required
                .as_str()
                .is_some_and(|r| properties.contains_key(r))
            {
                out.push(format!(
                    "{path}: requires {required}, which it does not define"
                ));
            }
        }
    }
    if let Some(items) = node.get("items") {
        portability_violations(items, &format!("{path}[]"), out);
    }
}

/// The `$defs` entries of an output schema that define the Evidence envelope: objects whose
/// properties are the envelope's.
fn evidence_definitions(schema: &Value) -> usize {
    const ENVELOPE: &[&str] = &["id", "seq", "created_at", "new", "operation", "provider"];
    let mut found = 0;
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties")
                    && ENVELOPE.iter().all(|k| props.contains_key(*k))
                {
                    found += 1;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found
}

/// A server with process capture enabled, so that every tool is listed.
async fn every_tool(root: &std::path::Path) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    std::fs::write(config.path().join("rea.toml"), capture_policy(root)).unwrap();
    start_in(Mode::Legacy, state, config).await
}

fn capture_policy(root: &std::path::Path) -> String {
    format!(
        "[capture]\nenabled = true\nexecutable_roots = [{root:?}]\nworking_directory_roots = [{root:?}]\n"
    )
}

#[tokio::test]
async fn listed_schemas_are_portable_inputs_and_valid_2020_12_outputs_regression_17() {
    let root = tempfile::tempdir().unwrap();
    let h = every_tool(root.path()).await;
    let tools = h.client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "capture_process_scenario"));
    assert_eq!(tools.len(), rea::tools::all_tool_names().len());
    let mut violations = vec![];
    for tool in &tools {
        let name = tool.name.to_string();
        let input = Value::Object((*tool.input_schema).clone());
        assert_eq!(input["type"], "object", "{name}");
        if let Err(e) = jsonschema::draft202012::meta::validate(&input) {
            violations.push(format!("{name}: input is not valid 2020-12: {e}"));
        }
        let mut found = vec![];
        portability_violations(&input, "input", &mut found);
        violations.extend(found.into_iter().map(|v| format!("{name}: {v}")));
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(
            !description.contains('\n') && !description.contains("[`"),
            "{name}: {description:?}"
        );

        let output = Value::Object(
            (**tool
                .output_schema
                .as_ref()
                .unwrap_or_else(|| panic!("{name} has no output schema")))
            .clone(),
        );
        if let Err(e) = jsonschema::draft202012::meta::validate(&output) {
            violations.push(format!("{name}: output is not valid 2020-12: {e}"));
        }
        if let Err(e) = jsonschema::draft202012::new(&output) {
            violations.push(format!("{name}: output does not compile: {e}"));
        }
        if output.get("$schema").is_some() {
            violations.push(format!("{name}: output names a $schema"));
        }
        let text = output.to_string();
        for format in ["uint", "int32", "int64", "double", "float"] {
            if text.contains(&format!("\"format\":\"{format}")) {
                violations.push(format!("{name}: output uses format {format}"));
            }
        }
        // The envelope is one `$defs` entry, referred to where a result carries its Evidence.
        let envelope = evidence_definitions(&output);
        assert!(
            envelope <= 1,
            "{name} defines the Evidence envelope {envelope} times"
        );
        if let Some(evidence) = output["properties"].get("evidence")
            && evidence.get("type").is_none()
        {
            // doctor carries its Evidence only when a session is open to record it in.
            let optional = json!({"anyOf": [{"$ref": "#/$defs/EvidenceInline"}, {"type": "null"}]});
            assert!(
                evidence == &json!({"$ref": "#/$defs/EvidenceInline"})
                    || (name == "doctor" && evidence == &optional),
                "{name}: {evidence}"
            );
            assert_eq!(envelope, 1, "{name}");
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The portability check itself catches what the issue found in the generated schemas.
#[test]
fn the_portability_check_catches_every_feature_it_names() {
    let bad = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "a": {"type": ["string", "null"], "default": null, "description": "A."},
            "b": {"$ref": "#/$defs/B", "description": "See [`B`]."},
            "c": {"type": "integer", "format": "uint64", "description": "C."},
            "d": {"oneOf": [{"const": "x"}, {"const": "y"}], "type": "string", "description": "D."},
            "e": {"type": "string", "enum": ["p", "q"], "description": "Only p."}
        },
        "$defs": {"B": {"type": "string"}}
    });
    let mut found = vec![];
    portability_violations(&bad, "input", &mut found);
    let text = found.join("\n");
    for expected in [
        "input: uses $schema",
        "input: uses additionalProperties",
        "input: uses $defs",
        "input.a: type [\"string\",\"null\"] is not one type",
        "input.a: default null",
        "input.b: uses $ref",
        "input.b: has no type",
        "input.b: description is not a plain sentence",
        "input.c: non-standard format uint64",
        "input.d: uses oneOf",
        "input.e: description does not list \"q\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

/// Compiles a C program into `dir`.
fn compile(dir: &std::path::Path, name: &str, source: &str) -> std::path::PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-O0", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

#[tokio::test]
async fn results_match_the_listed_output_schemas() {
    let root = tempfile::tempdir().unwrap();
    let program = compile(
        root.path(),
        "prog",
        "int answer(int x) { return x * 42; }\nint main(void) { return answer(1) == 42 ? 0 : 1; }\n",
    );
    let h = every_tool(root.path()).await;
    let schemas: Map<String, Value> = h
        .client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            let output = t.output_schema.map(|s| Value::Object((*s).clone()));
            (t.name.to_string(), output.unwrap_or(Value::Null))
        })
        .collect();
    let calls = [
        ("doctor", json!({})),
        ("open_binary", json!({"path": program})),
        ("binary_session", json!({})),
        ("list_documents", json!({})),
        ("list_procedures", json!({})),
        ("procedure_info", json!({"procedure": "answer"})),
        ("procedure_assembly", json!({"procedure": "answer"})),
        ("search_strings", json!({"pattern": "a"})),
        ("list_evidence", json!({})),
    ];
    for (name, args) in calls {
        let result = h.call(name, args).await;
        let validator = jsonschema::draft202012::new(&schemas[name]).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{result}");
    }
}

/// One `tools/list` over stdio from the built binary, with capture enabled: the frame's bytes.
fn tools_list_frame() -> String {
    let root = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::write(config.path().join("rea.toml"), capture_policy(root.path())).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("serve")
        .env("REA_STATE_DIR", root.path().join("state"))
        .env("REA_CONFIG_DIR", config.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"size","version":"1"}}}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    stdin.flush().unwrap();
    let mut frame = String::new();
    loop {
        frame.clear();
        assert!(
            stdout.read_line(&mut frame).unwrap() > 0,
            "no tools/list answer"
        );
        if frame.starts_with(r#"{"jsonrpc":"2.0","id":2,"#) {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    frame.trim_end().to_owned()
}

/// Bytes of the compact JSON of `value`.
fn json_bytes(value: &Value) -> usize {
    serde_json::to_string(value).unwrap().len()
}

#[test]
fn tools_list_fits_what_models_see_and_the_output_schema_budget_regression_17() {
    let frame = tools_list_frame();
    let listed: Value = serde_json::from_str(&frame).unwrap();
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "capture_process_scenario")
    );
    assert_eq!(tools.len(), rea::tools::all_tool_names().len());
    // SPEC's budget: what a model sees of the catalog (names, titles, descriptions and input
    // schemas) at most 48 KB, about 12k tokens; output schemas, which clients use to validate
    // results, at most 96 KB in all.
    let seen: usize = tools
        .iter()
        .map(|t| {
            ["name", "title", "description", "inputSchema"]
                .iter()
                .map(|k| t.get(*k).map_or(0, json_bytes))
                .sum::<usize>()
        })
        .sum();
    let outputs: usize = tools
        .iter()
        .map(|t| t.get("outputSchema").map_or(0, json_bytes))
        .sum();
    eprintln!(
        "tools/list with {} tools: {} bytes; seen by models {seen}, output schemas {outputs}",
        tools.len(),
        frame.len()
    );
    assert!(seen <= 48 * 1000, "models see {seen} bytes of tools/list");
    assert!(outputs <= 96 * 1000, "output schemas are {outputs} bytes");
}
