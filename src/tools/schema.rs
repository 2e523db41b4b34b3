//! Portable tool schemas: one pass over the schemas schemars generates, applied where the tool
//! catalog is built, so every tool, current and future, is listed in a form every MCP client
//! family takes.
//!
//! Input schemas end in the subset the strictest clients accept (Gemini's function subset,
//! Codex, Cursor, Ajv in strict mode): a root `type: object`; no `$schema`, `$ref`/`$defs`
//! (definitions are inlined), type arrays (an optional argument is one that is not required),
//! `const`, `additionalProperties`, `oneOf`/`anyOf`/`allOf` (an enum of strings becomes `enum`;
//! a tagged union becomes one object whose tag is an `enum` and whose other fields are optional,
//! each saying which tag values use it); only the `format`s JSON Schema defines; descriptions as
//! plain sentences that list the allowed values. The argument structs still parse what a client
//! sends: their field names and tags are unchanged.
//!
//! Output schemas stay JSON Schema 2020-12 (MCP's default dialect, so no `$schema`) and are made
//! compact: a type used in several places, the Evidence envelope above all, stays one `$defs`
//! entry, enums of constants become `enum`, non-standard formats go, and so do descriptions:
//! they were nearly half of `tools/list`, and what a result means is said by the tool's
//! description and its input schema.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use regex::Regex;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value, json};

/// The `format` values JSON Schema 2020-12 defines; any other (schemars' `uint64`, `int32`,
/// `double`, …) is unknown to validators in strict mode and is dropped.
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

/// Rewrites every tool of `router` into its portable form.
pub fn portable_router<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        portable_tool(&mut route.attr);
    }
    router
}

/// Rewrites one tool: its description, input schema and output schema.
pub fn portable_tool(tool: &mut Tool) {
    if let Some(description) = &tool.description {
        tool.description = Some(prose(description).into());
    }
    tool.input_schema = Arc::new(portable_input(&tool.input_schema));
    if let Some(output) = &tool.output_schema {
        tool.output_schema = Some(Arc::new(compact_output(output)));
    }
}

/// Doc-comment text as a plain sentence: intra-doc links lose their brackets, wrapped lines
/// are joined.
pub fn prose(text: &str) -> String {
    static LINK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\[(`[^`\]]+`|[^\]\[]+)\](\([^)\s]*\))?").expect("a valid regex")
    });
    // `[text](target)` and ``[`item`]`` are rustdoc links; other brackets (`name[1234]`) stay.
    let text = LINK.replace_all(text, |c: &regex::Captures<'_>| {
        if c.get(2).is_some() || c[1].starts_with('`') {
            c[1].to_owned()
        } else {
            c[0].to_owned()
        }
    });
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The portable form of an input schema.
pub fn portable_input(schema: &JsonObject) -> JsonObject {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let portable = input_node(&Value::Object(schema.clone()), &defs, &mut Vec::new());
    let mut root = match list_enums(&portable) {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    root.insert("type".into(), json!("object"));
    root.entry("properties").or_insert_with(|| json!({}));
    root
}

/// The compact form of an output schema.
pub fn compact_output(schema: &JsonObject) -> JsonObject {
    let mut root = match output_node(&Value::Object(schema.clone())) {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    root.remove("$schema");
    // Keep only the definitions something refers to.
    if let Some(Value::Object(defs)) = root.remove("$defs") {
        let mut used = BTreeSet::new();
        let mut pending = refs(&Value::Object(root.clone()));
        while let Some(name) = pending.pop() {
            if used.insert(name.clone())
                && let Some(def) = defs.get(&name)
            {
                pending.extend(refs(def));
            }
        }
        let kept: Map<String, Value> = defs
            .into_iter()
            .filter(|(name, _)| used.contains(name))
            .collect();
        if !kept.is_empty() {
            root.insert("$defs".into(), Value::Object(kept));
        }
    }
    root
}

/// Names of the `#/$defs/` entries `node` refers to.
fn refs(node: &Value) -> Vec<String> {
    let mut out = vec![];
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    out.push(name.to_owned());
                } else {
                    out.extend(refs(value));
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| out.extend(refs(v))),
        _ => {}
    }
    out
}

/// Applies `f` to every subschema of `node`: the values of `properties`, `$defs` and
/// `patternProperties`, `items`, `additionalProperties`, `not`, and the members of
/// `anyOf`/`oneOf`/`allOf`/`prefixItems`. A property named `description` is a subschema, not
/// a keyword, and is left to `f`.
fn map_children(node: &mut Map<String, Value>, f: &mut dyn FnMut(&Value) -> Value) {
    for (key, value) in node.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(children)) => {
                for child in children.values_mut() {
                    *child = f(child);
                }
            }
            ("items" | "additionalProperties" | "not", child @ Value::Object(_)) => {
                *child = f(child);
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems" | "items", Value::Array(members)) => {
                for member in members.iter_mut() {
                    *member = f(member);
                }
            }
            _ => {}
        }
    }
}

/// Drops a non-standard `format`; an unsigned one leaves `minimum: 0` behind.
fn standard_format(node: &mut Map<String, Value>) {
    if let Some(format) = node.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        let unsigned = format.starts_with("uint");
        node.remove("format");
        if unsigned {
            node.entry("minimum").or_insert(json!(0));
        }
    }
}

fn output_node(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut map = map.clone();
    for keyword in ["description", "title", "default", "examples", "$comment"] {
        map.remove(keyword);
    }
    // `true` is what an object schema allows anyway.
    if map.get("additionalProperties") == Some(&Value::Bool(true)) {
        map.remove("additionalProperties");
    }
    map_children(&mut map, &mut output_node);
    // An output need not say again that a count is not negative: the `minimum` an unsigned
    // `format` becomes in an input is left out here, where no caller chooses the value.
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("uint"))
    {
        map.remove("format");
        if map.get("minimum") == Some(&json!(0)) {
            map.remove("minimum");
        }
    }
    standard_format(&mut map);
    for keyword in ["oneOf", "anyOf"] {
        if let Some(Value::Array(members)) = map.get(keyword)
            && let Some((values, _)) = string_constants(members)
        {
            map.remove(keyword);
            map.insert("type".into(), json!("string"));
            map.insert("enum".into(), Value::Array(values));
        }
    }
    // A long list of names (architectures, document roles) is worth listing where a caller
    // chooses one, in an input; repeated in the subject of every output it cost more than all
    // else an output says, so an output states only that the value is a string.
    if map
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| values.len() > MAX_OUTPUT_ENUM)
        && matches!(map.get("type"), Some(t) if t == &json!("string") || t == &json!(["string", "null"]))
    {
        map.remove("enum");
    }
    Value::Object(map)
}

/// Most values an output schema's `enum` lists; longer ones are left as plain strings.
const MAX_OUTPUT_ENUM: usize = 8;

/// When every member is a string constant (`const`, or an `enum` of one), the values and what
/// each means.
fn string_constants(members: &[Value]) -> Option<(Vec<Value>, Vec<Option<String>>)> {
    let mut values = vec![];
    let mut meanings = vec![];
    for member in members {
        let member = member.as_object()?;
        let structural = member
            .keys()
            .any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description"));
        if structural || member.get("type").is_some_and(|t| t != "string") {
            return None;
        }
        let member_values = match (member.get("const"), member.get("enum")) {
            (Some(v @ Value::String(_)), None) => vec![v.clone()],
            (None, Some(Value::Array(vs))) if vs.iter().all(Value::is_string) => vs.clone(),
            _ => return None,
        };
        let meaning = member.get("description").and_then(Value::as_str).map(prose);
        for value in member_values {
            values.push(value);
            meanings.push(meaning.clone());
        }
    }
    (!values.is_empty()).then_some((values, meanings))
}

/// `"a" (meaning a); "b" (meaning b)`, or `"a", "b"` when no value has a meaning.
fn list_values(values: &[Value], meanings: &[Option<String>]) -> String {
    let described = meanings.iter().any(Option::is_some);
    let items: Vec<String> = values
        .iter()
        .zip(meanings)
        .map(|(value, meaning)| match meaning {
            Some(m) => format!("{value} ({})", m.trim_end_matches('.')),
            None => value.to_string(),
        })
        .collect();
    items.join(if described { "; " } else { ", " })
}

fn append_sentence(node: &mut Map<String, Value>, sentence: &str) {
    let text = match node.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => {
            let d = d.trim_end();
            let stop = if d.ends_with(['.', '!', '?', ':']) {
                ""
            } else {
                "."
            };
            format!("{d}{stop} {sentence}")
        }
        _ => sentence.to_owned(),
    };
    node.insert("description".into(), Value::String(text));
}

fn input_node(node: &Value, defs: &Map<String, Value>, inlining: &mut Vec<String>) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut map = map.clone();
    for keyword in ["$schema", "$defs", "definitions", "$comment"] {
        map.remove(keyword);
    }
    // `Option<T>` is a union with `null`: the argument is `T`, and optional because it is not
    // required. Merged before anything else, so the site's description meets `T`'s definition.
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = map.get(keyword)
            && members.iter().any(is_null)
        {
            let rest: Vec<Value> = members.iter().filter(|m| !is_null(m)).cloned().collect();
            map.remove(keyword);
            match rest.as_slice() {
                [Value::Object(only)] => merge_under(&mut map, only.clone()),
                _ => {
                    map.insert(keyword.into(), Value::Array(rest));
                }
            }
        }
    }
    if let Some(reference) = map.remove("$ref") {
        let name = reference
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .unwrap_or_default()
            .to_owned();
        return match defs.get(&name).and_then(Value::as_object) {
            Some(def) if !inlining.contains(&name) => {
                // The referring site's keywords (its description, its default) win.
                let mut merged = def.clone();
                merged.extend(map);
                inlining.push(name);
                let inlined = input_node(&Value::Object(merged), defs, inlining);
                inlining.pop();
                inlined
            }
            _ => {
                // A recursive type cannot be inlined; it is left as any object.
                tracing::warn!(%name, "a recursive input schema is listed as an open object");
                map.insert("type".into(), json!("object"));
                input_node(&Value::Object(map), defs, inlining)
            }
        };
    }
    map_children(&mut map, &mut |child| input_node(child, defs, inlining));

    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    if let Some(value) = map.remove("const") {
        map.entry("enum").or_insert(Value::Array(vec![value]));
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if non_null.len() == 1 {
            map.insert("type".into(), non_null[0].clone());
        }
    }
    standard_format(&mut map);
    if let Some(Value::Array(members)) = map.get("allOf")
        && members.len() == 1
        && let Some(only) = members[0].as_object().cloned()
    {
        map.remove("allOf");
        merge_under(&mut map, only);
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = map.remove(keyword) {
            collapse_union(&mut map, keyword, members);
        }
    }
    if let Some(extra) = map.remove("additionalProperties")
        && let Some(value_type) = extra.get("type").and_then(Value::as_str)
    {
        append_sentence(&mut map, &format!("Each value is a {value_type}."));
    }
    if let Some(description) = map.get("description").and_then(Value::as_str) {
        let text = prose(description);
        map.insert("description".into(), Value::String(text));
    }
    Value::Object(map)
}

/// Makes every `enum` whose description does not name all its values list them (after the
/// unions are gone, so that a union's members do not list their one value each).
fn list_enums(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut map = map.clone();
    map_children(&mut map, &mut list_enums);
    if let Some(Value::Array(values)) = map.get("enum").cloned() {
        let described = map.get("description").and_then(Value::as_str).unwrap_or("");
        let unlisted = values.iter().any(|v| match v {
            Value::String(s) => !described.contains(s.as_str()),
            other => !described.contains(&other.to_string()),
        });
        if unlisted {
            let list = list_values(&values, &vec![None; values.len()]);
            append_sentence(&mut map, &format!("One of: {list}."));
        }
    }
    Value::Object(map)
}

/// Whether `schema` admits only `null`.
fn is_null(schema: &Value) -> bool {
    schema.as_object().is_some_and(|m| {
        m.get("type").is_some_and(|t| t == "null")
            && m.keys().all(|k| k == "type" || k == "description")
    })
}

/// Adds `member`'s keywords to `node` where `node` has none of its own.
fn merge_under(node: &mut Map<String, Value>, member: Map<String, Value>) {
    for (key, value) in member {
        node.entry(key).or_insert(value);
    }
}

/// Replaces a union (`keyword` is `anyOf` or `oneOf`) by a portable equivalent where there is
/// one; otherwise puts it back as it was.
fn collapse_union(node: &mut Map<String, Value>, keyword: &str, members: Vec<Value>) {
    if let [only] = members.as_slice()
        && let Some(only) = only.as_object()
    {
        merge_under(node, only.clone());
        return;
    }
    if let Some((values, meanings)) = string_constants(&members) {
        node.insert("type".into(), json!("string"));
        let list = list_values(&values, &meanings);
        node.insert("enum".into(), Value::Array(values));
        append_sentence(node, &format!("One of: {list}."));
        return;
    }
    if let Some(flat) = flatten_tagged(&members) {
        for (key, value) in flat {
            if key == "description" && node.contains_key("description") {
                continue;
            }
            node.insert(key, value);
        }
        return;
    }
    node.insert(keyword.into(), Value::Array(members));
}

/// One object for a union of objects that all carry the same tag property (a one-value `enum`,
/// as serde's internally tagged enums are generated): the tag lists every value and what it
/// means; every other property is optional and says which tag values use it (and require it).
/// `None` when the members are not such objects, or a property differs in type between them.
fn flatten_tagged(members: &[Value]) -> Option<Map<String, Value>> {
    let objects: Vec<&Map<String, Value>> = members
        .iter()
        .map(Value::as_object)
        .collect::<Option<_>>()?;
    let properties_of =
        |m: &Map<String, Value>| m.get("properties").and_then(Value::as_object).cloned();
    let required_of = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = properties_of(objects.first()?)?;
    let tag_value = |m: &Map<String, Value>, tag: &str| -> Option<String> {
        let values = properties_of(m)?.get(tag)?.get("enum")?.as_array()?.clone();
        match values.as_slice() {
            [Value::String(v)] if required_of(m).iter().any(|r| r == tag) => Some(v.clone()),
            _ => None,
        }
    };
    let tag = first
        .keys()
        .find(|key| objects.iter().all(|m| tag_value(m, key).is_some()))?
        .clone();
    let tags: Vec<String> = objects.iter().filter_map(|m| tag_value(m, &tag)).collect();

    // Each property in order of first appearance, with the tags that have it.
    let mut names: Vec<String> = vec![];
    for m in &objects {
        for name in properties_of(m)?.keys() {
            if *name != tag && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let mut properties = Map::new();
    let meanings: Vec<Option<String>> = objects
        .iter()
        .map(|m| m.get("description").and_then(Value::as_str).map(prose))
        .collect();
    let tag_values: Vec<Value> = tags.iter().map(|t| json!(t)).collect();
    let mut tag_schema = Map::new();
    tag_schema.insert("type".into(), json!("string"));
    tag_schema.insert("enum".into(), Value::Array(tag_values.clone()));
    tag_schema.insert(
        "description".into(),
        json!(format!(
            "Which kind this is; it decides the other fields. One of: {}.",
            list_values(&tag_values, &meanings)
        )),
    );
    properties.insert(tag.clone(), Value::Object(tag_schema));
    let mut required = vec![json!(tag)];
    for name in &names {
        let mut shape: Option<Map<String, Value>> = None;
        let mut descriptions: Vec<(String, String)> = vec![];
        let mut users: Vec<(String, bool)> = vec![];
        for (m, t) in objects.iter().zip(&tags) {
            let Some(schema) = properties_of(m).and_then(|p| p.get(name).cloned()) else {
                continue;
            };
            let mut schema = schema.as_object()?.clone();
            if let Some(d) = schema
                .remove("description")
                .and_then(|d| d.as_str().map(prose))
            {
                descriptions.push((t.clone(), d));
            }
            match &shape {
                None => shape = Some(schema),
                Some(s) if *s == schema => {}
                Some(_) => return None,
            }
            users.push((t.clone(), required_of(m).contains(name)));
        }
        let mut schema = shape?;
        let distinct: BTreeSet<&str> = descriptions.iter().map(|(_, d)| d.as_str()).collect();
        let mut text = match distinct.len() {
            0 => String::new(),
            1 => descriptions[0].1.clone(),
            _ => descriptions
                .iter()
                .map(|(t, d)| format!("With {tag} {t:?}: {d}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        let everywhere = users.len() == tags.len() && users.iter().all(|(_, r)| *r);
        if everywhere {
            required.push(json!(name));
        } else {
            let uses: Vec<String> = users
                .iter()
                .map(|(t, r)| format!("{t:?}{}", if *r { " (required)" } else { "" }))
                .collect();
            let sentence = format!("Used with {tag} {}.", uses.join(", "));
            text = if text.is_empty() {
                sentence
            } else {
                let stop = if text.ends_with('.') { "" } else { "." };
                format!("{text}{stop} {sentence}")
            };
        }
        if !text.is_empty() {
            schema.insert("description".into(), Value::String(text));
        }
        properties.insert(name.clone(), Value::Object(schema));
    }
    let mut flat = Map::new();
    flat.insert("type".into(), json!("object"));
    flat.insert("properties".into(), Value::Object(properties));
    flat.insert("required".into(), Value::Array(required));
    Some(flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(schema: Value) -> Value {
        Value::Object(portable_input(schema.as_object().unwrap()))
    }

    #[test]
    fn prose_drops_rustdoc_links_and_joins_lines() {
        assert_eq!(
            prose("At most [`MAX`] claims,\nsee [the spec](crate::x) and `name[1234]`."),
            "At most `MAX` claims, see the spec and `name[1234]`."
        );
    }

    #[test]
    fn references_are_inlined_and_optional_means_not_required() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "id": {"$ref": "#/$defs/Id", "description": "The id."},
                "limit": {"type": ["integer", "null"], "format": "uint64", "minimum": 0, "default": null},
                "count": {"type": "integer", "format": "uint32"},
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}], "default": null, "description": "New status"}
            },
            "required": ["id"],
            "$defs": {
                "Id": {"type": "string", "pattern": "^ev_", "description": "an id"},
                "Status": {"oneOf": [
                    {"const": "open", "type": "string", "description": "Not yet worked on."},
                    {"const": "done", "type": "string"}
                ]}
            }
        });
        assert_eq!(
            input(schema),
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": "^ev_", "description": "The id."},
                    "limit": {"type": "integer", "minimum": 0},
                    "count": {"type": "integer", "minimum": 0},
                    "status": {"type": "string", "enum": ["open", "done"],
                        "description": "New status. One of: \"open\" (Not yet worked on); \"done\"."}
                },
                "required": ["id"]
            })
        );
    }

    #[test]
    fn a_tagged_union_becomes_one_object_with_an_enum_tag() {
        let schema = json!({
            "type": "object",
            "properties": {"claim": {"$ref": "#/$defs/Claim"}},
            "required": ["claim"],
            "$defs": {"Claim": {"description": "One claim.", "oneOf": [
                {"type": "object", "additionalProperties": false, "description": "A part exists.",
                 "properties": {"claim": {"const": "part", "type": "string"},
                                "path": {"type": "string", "description": "Part path."},
                                "sha": {"type": ["string", "null"]}},
                 "required": ["claim", "path"]},
                {"type": "object", "additionalProperties": false, "description": "A value is seen.",
                 "properties": {"claim": {"const": "value", "type": "string"},
                                "path": {"type": "string", "description": "Only in this part."},
                                "value": {"type": "string"}},
                 "required": ["claim", "value"]}
            ]}}
        });
        assert_eq!(
            input(schema)["properties"]["claim"],
            json!({
                "description": "One claim.",
                "type": "object",
                "properties": {
                    "claim": {"type": "string", "enum": ["part", "value"],
                        "description": "Which kind this is; it decides the other fields. One of: \"part\" (A part exists); \"value\" (A value is seen)."},
                    "path": {"type": "string",
                        "description": "With claim \"part\": Part path. With claim \"value\": Only in this part. Used with claim \"part\" (required), \"value\"."},
                    "sha": {"type": "string", "description": "Used with claim \"part\"."},
                    "value": {"type": "string", "description": "Used with claim \"value\" (required)."}
                },
                "required": ["claim"]
            })
        );
    }

    #[test]
    fn output_schemas_keep_one_definition_and_lose_prose() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "description": "A result.",
            "properties": {
                "evidence": {"$ref": "#/$defs/Evidence", "description": "Its Evidence."},
                "description": {"type": "string", "description": "A property named description."},
                "seq": {"type": "integer", "format": "int64"}
            },
            "$defs": {
                "Evidence": {"type": "object", "properties": {"confidence": {"$ref": "#/$defs/Confidence"}}},
                "Confidence": {"oneOf": [{"const": "observed", "type": "string", "description": "Seen."}, {"const": "derived", "type": "string"}]},
                "Unused": {"type": "string"}
            }
        });
        assert_eq!(
            Value::Object(compact_output(schema.as_object().unwrap())),
            json!({
                "type": "object",
                "properties": {
                    "evidence": {"$ref": "#/$defs/Evidence"},
                    "description": {"type": "string"},
                    "seq": {"type": "integer"}
                },
                "$defs": {
                    "Evidence": {"type": "object", "properties": {"confidence": {"$ref": "#/$defs/Confidence"}}},
                    "Confidence": {"type": "string", "enum": ["observed", "derived"]}
                }
            })
        );
    }
}
