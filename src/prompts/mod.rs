//! The guided prompts: six provider-neutral investigation workflows, plus operator-defined ones.
//!
//! A prompt is data ([`PromptDef`]): arguments (each with an optional completion family), an
//! objective and ordered workflow steps that name tools. Rendering ([`render`]) turns a definition
//! and the requested arguments into the text an agent reads. The catalog ([`Catalog`]) holds the
//! built-in prompts and the TOML files of `$REA_CONFIG_DIR/prompts/`.

mod builtin;
mod catalog;
mod render;

pub use builtin::builtin_prompts;
pub use catalog::{Catalog, CatalogError};
pub use render::{RenderContext, inert_json, mentioned_tools, render};

use serde::{Deserialize, Serialize};

use crate::completion::Family;

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentDef {
    /// Argument name.
    pub name: String,
    /// What the argument means.
    pub description: String,
    /// Whether prompts/get needs it.
    #[serde(default)]
    pub required: bool,
    /// Where completion suggestions come from; `None` for free text.
    #[serde(default)]
    pub completion: Option<Family>,
}

/// When a workflow step applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StepCondition {
    /// Always.
    #[default]
    Always,
    /// Only when the target is a JavaScript/Electron directory.
    JavascriptTarget,
    /// Only when the target is not a JavaScript/Electron directory.
    BinaryTarget,
}

/// One step of a workflow. `tool` names a tool of the live catalog; a step whose tool is not in
/// the catalog is left out when rendering (its feature is off on this server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDef {
    /// The tool the step suggests, if any.
    #[serde(default)]
    pub tool: Option<String>,
    /// What to do, in words. `{argument}` names refer to requested arguments by name only; values
    /// are never substituted into instructions.
    pub text: String,
    /// When the step applies.
    #[serde(default)]
    pub when: StepCondition,
}

/// A guided prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptDef {
    /// Prompt name.
    pub name: String,
    /// Human title.
    #[serde(default)]
    pub title: Option<String>,
    /// What the prompt is for.
    pub description: String,
    /// Arguments, in the order listed.
    #[serde(default)]
    pub arguments: Vec<ArgumentDef>,
    /// The objective stated at the top of the rendered prompt.
    pub objective: String,
    /// The ordered workflow.
    pub steps: Vec<StepDef>,
}

impl PromptDef {
    /// The argument with this name.
    pub fn argument(&self, name: &str) -> Option<&ArgumentDef> {
        self.arguments.iter().find(|a| a.name == name)
    }

    /// Every tool the workflow names.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|s| s.tool.as_deref())
    }
}
