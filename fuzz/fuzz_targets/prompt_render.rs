//! Fuzzes guided-prompt rendering with arbitrary argument maps (any Unicode, huge values, hostile
//! markup). The arguments must sit in exactly one data block that no value can close, parse back
//! to exactly the given arguments the prompt declares (undeclared ones are not rendered), add no
//! line per value, and the workflow must name only tools of the live catalog. The server's
//! `render_prompt` must refuse exactly the requests that lack a required argument.
//!
//! Input: the first byte picks the prompt (low 3 bits), whether the target is a JavaScript
//! directory (bit 3) and which quarter of the tools to drop from the catalog (bits 4-5, when bit
//! 7 is set); the rest is `\0`-separated key, value, key, value… (lossy UTF-8).
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use rea::prompts::{PromptDef, RenderContext, builtin_prompts, mentioned_tools, render};
use rea::server::{ReaServer, Shared};
use rea::tools::all_tool_names;
use rea::settings::Settings;

struct Env {
    prompts: Vec<PromptDef>,
    tools: BTreeSet<String>,
    server: ReaServer,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let shared: Arc<Shared> = Shared::new(Settings {
            state_dir: rea_fuzz::fresh_dir("prompt-state"),
            config_dir: None,
            allowed_roots: rea::fsroot::Roots::none(),
        });
        Env {
            prompts: builtin_prompts(),
            tools: all_tool_names(),
            server: ReaServer::new(shared),
        }
    })
}

fn data_block(text: &str) -> &str {
    let start = text.find("<data>\n").expect("an opening <data> line") + "<data>\n".len();
    let end = text.find("\n</data>").expect("a closing </data> line");
    &text[start..end]
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let env = env();
    let prompt = &env.prompts[usize::from(flags & 7) % env.prompts.len()];
    let tools: BTreeSet<String> = if flags & 0x80 != 0 {
        let drop = usize::from((flags >> 4) & 3);
        env.tools
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 != drop)
            .map(|(_, t)| t.clone())
            .collect()
    } else {
        env.tools.clone()
    };
    let pieces: Vec<String> = rest
        .split(|&b| b == 0)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let arguments: BTreeMap<String, String> = pieces
        .chunks(2)
        .map(|kv| (kv[0].clone(), kv.get(1).cloned().unwrap_or_default()))
        .collect();

    let ctx = RenderContext {
        tools: &tools,
        javascript_target: flags & 8 != 0,
    };
    let text = render(prompt, &arguments, &ctx);
    assert_eq!(text.matches("<data>").count(), 1, "one <data> opening");
    assert_eq!(text.matches("</data>").count(), 1, "a value closed the data block");
    // Only the arguments the prompt declares are rendered.
    let declared: BTreeMap<String, String> = arguments
        .iter()
        .filter(|(name, _)| prompt.argument(name).is_some())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let block = data_block(&text);
    let expected_lines = if declared.is_empty() { 1 } else { declared.len() + 2 };
    assert_eq!(block.lines().count(), expected_lines, "a value added a line: {block}");
    assert!(!block.contains(['<', '>', '`', '\u{2028}', '\u{2029}']), "markup in {block}");
    let back: BTreeMap<String, String> = serde_json::from_str(block)
        .unwrap_or_else(|e| panic!("the data block does not parse back: {e}\n{block}"));
    assert_eq!(back, declared, "the data block does not hold the declared arguments");
    let named = mentioned_tools(&text);
    assert!(named.is_subset(&tools), "workflow names tools outside the catalog: {named:?}");

    let missing = prompt
        .arguments
        .iter()
        .any(|a| a.required && arguments.get(&a.name).is_none_or(|v| v.trim().is_empty()));
    let served = env.server.render_prompt(&prompt.name, arguments.clone());
    assert_eq!(served.is_err(), missing, "render_prompt refused or accepted wrongly: {served:?}");
    let unknown = format!("{}\u{0}x", prompt.name);
    assert!(env.server.render_prompt(&unknown, arguments).is_err());
});
