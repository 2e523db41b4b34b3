//! The six built-in guided prompts of `mcp-prompts.md`, with the arguments of SPEC's table.

use super::{ArgumentDef, PromptDef, StepCondition, StepDef};
use crate::completion::Family;

fn arg(name: &str, required: bool, completion: Option<Family>, description: &str) -> ArgumentDef {
    ArgumentDef {
        name: name.into(),
        description: description.into(),
        required,
        completion,
    }
}

fn step(tool: &str, text: &str) -> StepDef {
    StepDef {
        tool: Some(tool.into()),
        text: text.into(),
        when: StepCondition::Always,
    }
}

fn step_when(when: StepCondition, tool: &str, text: &str) -> StepDef {
    StepDef {
        tool: Some(tool.into()),
        text: text.into(),
        when,
    }
}

fn note(text: &str) -> StepDef {
    StepDef {
        tool: None,
        text: text.into(),
        when: StepCondition::Always,
    }
}

/// The built-in prompts, in the order of `mcp-prompts.md`.
pub fn builtin_prompts() -> Vec<PromptDef> {
    vec![
        PromptDef {
            name: "investigate_feature".into(),
            title: Some("Investigate a feature".into()),
            description: "Trace a feature from discovery into relevant function evidence.".into(),
            arguments: vec![
                arg("feature", true, None, "The feature or behaviour to trace, in the user's words."),
                arg("target_path", false, Some(Family::TargetPath), "A binary, .app bundle, or JavaScript/Electron application directory to investigate; omit to use the open target."),
                arg("document", false, Some(Family::Document), "A document (slice, bundle image or file) of the open target to focus on."),
                arg("procedure", false, Some(Family::Procedure), "A procedure address or unique name to start from."),
                arg("provider_id", false, Some(Family::Provider), "Provider for analysis calls: auto, or a deep provider candidate of this host."),
            ],
            objective: "Find where the requested feature is implemented in the target and support each claim about it with Evidence from the tools below.".into(),
            steps: vec![
                step_when(StepCondition::JavascriptTarget, "analyze_javascript_application", "Call analyze_javascript_application with input_path set to the requested target_path. It reads the application's package, module graph, processes, IPC channels and window settings; open_binary is not needed for this directory."),
                step_when(StepCondition::BinaryTarget, "open_binary", "If target_path is given and is not the active target, open it with open_binary (path = target_path). If no target is open and none is given, ask for one."),
                step_when(StepCondition::BinaryTarget, "list_documents", "List the documents when the target has several (slices, bundle images) and pick the one that matters, or use the requested document."),
                step_when(StepCondition::BinaryTarget, "search_strings", "Search strings for words of the feature (user-visible text, keys, URLs) to find where it is referenced."),
                step_when(StepCondition::BinaryTarget, "search_procedures", "Search procedure names for words of the feature."),
                step_when(StepCondition::BinaryTarget, "xrefs", "Follow references from interesting strings or data to the code that uses them."),
                step_when(StepCondition::BinaryTarget, "analyze_function", "Build a dossier of the requested procedure, or of the candidates found above: callers, callees, strings, imports and first instructions."),
                step_when(StepCondition::BinaryTarget, "procedure_callers", "Walk callers upward to find how the feature is reached."),
                step_when(StepCondition::BinaryTarget, "procedure_assembly", "Read the instructions of a procedure when a dossier is not enough."),
                step_when(StepCondition::BinaryTarget, "procedure_pseudo_code", "Read a procedure's pseudo-C when provider_id angr is offered, and follow the callees and strings its references name."),
                step("record_unknown", "Record each question you could not settle as a residual unknown, citing the Evidence ids that bear on it."),
                step("annotate", "Annotate what you worked out (a procedure's name, comment or prototype, a data location's name or type) with a rationale and the Evidence ids it rests on. An annotation is an inference: it is shown beside the file's names, never in their place."),
            ],
        },
        PromptDef {
            name: "compare_application_versions".into(),
            title: Some("Compare application versions".into()),
            description: "Compare two shipped artifacts, with optional static and runtime follow-up.".into(),
            arguments: vec![
                arg("left_target_path", true, Some(Family::TargetPath), "Path of the older (left) artifact: a file or .app bundle."),
                arg("right_target_path", true, Some(Family::TargetPath), "Path of the newer (right) artifact: a file or .app bundle."),
                arg("left_manifest_id", false, Some(Family::ArtifactManifest), "An artifact manifest already inspected for the left side."),
                arg("right_manifest_id", false, Some(Family::ArtifactManifest), "An artifact manifest already inspected for the right side."),
                arg("focus_occurrence_id", false, Some(Family::ArtifactOccurrence), "An occurrence (entitlement, URL, symbol, …) to focus the comparison on."),
            ],
            objective: "Establish what changed between the two artifacts, distinguishing real differences from dimensions that could not be compared.".into(),
            steps: vec![
                step("open_binary", "Open each target before inspecting it: open_binary with path = left_target_path (unless left_manifest_id is given)."),
                step("inspect_artifact", "Call inspect_artifact on the active (left) target; it returns the manifest graph and findings together, inline. Note its manifest id."),
                step("open_binary", "Open the right target: open_binary with path = right_target_path (unless right_manifest_id is given)."),
                step("inspect_artifact", "Call inspect_artifact on the active (right) target and note its manifest id."),
                step("compare_artifacts", "Compare the two manifest ids. Dimensions reported unknown were not compared; never read them as unchanged."),
                step("get_evidence", "If focus_occurrence_id is given, read the inventory Evidence that holds it to see its part and value."),
                step("compare_procedures", "Optional static follow-up: for an executable the comparison reports changed, compare its procedures function by function (the two manifest ids); filter by status changed, added or removed."),
                step("carry_annotations", "If the left version has annotations, carry them to the procedures the matching pairs in the right version (the two manifest ids); what did not carry is listed with the reason, and a carried annotation on a changed body needs checking again."),
                step("analyze_function", "Build dossiers of procedures that were added, removed or changed."),
                step("capture_process_scenario", "Optional runtime follow-up: when the operator has enabled process capture, run a bounded scenario against each version and compare the captures."),
                step("compare_process_captures", "Compare the two captures' exit status, outputs and limits."),
                step("record_unknown", "Record differences you could not explain as residual unknowns."),
            ],
        },
        PromptDef {
            name: "verify_reconstruction".into(),
            title: Some("Verify a reconstruction".into()),
            description: "Evaluate a finite reconstruction specification against retained comparison Evidence.".into(),
            arguments: vec![
                arg("reconstruction_goal", true, None, "What the reconstruction is supposed to reproduce, in words."),
                arg("comparison_evidence_id", false, Some(Family::Evidence), "The comparison Evidence to evaluate claims against."),
                arg("provider_id", false, Some(Family::Provider), "Provider for any follow-up analysis calls."),
            ],
            objective: "Decide, claim by claim, whether the reconstruction meets the goal, using only Evidence retained in this session's ledger.".into(),
            steps: vec![
                step("get_evidence", "Read the comparison Evidence named by comparison_evidence_id, if given, to see which dimensions it covers and which are unknown."),
                step("list_evidence", "Otherwise list compare_artifacts and inspect_artifact Evidence in the ledger to find what can be cited."),
                step("compare_artifacts", "If no comparison exists yet, compare the two manifests that the goal concerns."),
                note("Write the goal as a finite list of typed claims (part exists with digest, occurrence has value, procedure exists in document, comparison shows no change in a dimension)."),
                step("verify_reconstruction", "Evaluate the claims. Each is pass, fail or unknown with the Evidence ids it rests on; a pass covers only its own claim."),
                step("list_annotations", "A claim that an annotation holds rests on the Evidence the annotation cites: read the annotation and cite that Evidence, not the annotation alone."),
                step("record_unknown", "Record each unknown claim as a residual unknown, citing the verdict Evidence."),
            ],
        },
        PromptDef {
            name: "trace_crash".into(),
            title: Some("Trace a crash".into()),
            description: "Correlate a crash symptom with static paths and optional process capture evidence.".into(),
            arguments: vec![
                arg("crash_signal", true, None, "The crash symptom: signal, exception, message or faulting address."),
                arg("target_path", false, Some(Family::TargetPath), "The crashing binary; omit to use the open target."),
                arg("document", false, Some(Family::Document), "The document (slice or image) that crashed."),
                arg("procedure", false, Some(Family::Procedure), "A procedure suspected of crashing, by address or unique name."),
                arg("capture_evidence_id", false, Some(Family::ProcessCapture), "A retained process capture of the crash."),
            ],
            objective: "Locate the code path that produces the crash and support it with static and, where available, runtime Evidence.".into(),
            steps: vec![
                step("open_binary", "If target_path is given and is not the active target, open it with open_binary."),
                step("get_evidence", "If capture_evidence_id is given, read that capture: signal, faulting address, instruction pointer and the procedure it maps to."),
                step("capture_process_scenario", "If no capture exists and the operator has enabled process capture, reproduce the crash in a bounded scenario (approved: true) to get the faulting address."),
                note("Use the capture's backtrace to see how the program got there: fault.backtrace.frames lists the calls innermost first, with registers at the fault, and frame_procedures maps each frame to the active target's procedure (address and name) or names the module it is in. Note why the walk ended (fault.backtrace.end) before trusting the outer frames."),
                step("procedure_info", "Look up the procedure containing the faulting address, or the requested procedure."),
                step("procedure_assembly", "Read the instructions around the fault."),
                step("procedure_pseudo_code", "Read the faulting procedure's pseudo-C when provider_id angr is offered, to see which value the faulting instruction uses."),
                step("procedure_callers", "Walk callers to find the paths that reach it."),
                step("call_paths", "List the call paths from the entry point (or a caller from the backtrace) to the faulting procedure, and the indirect calls that could hide others."),
                step("xrefs", "Follow references to the data involved in the fault."),
                step("record_unknown", "Record what remains unexplained as residual unknowns."),
                step("annotate", "Annotate the faulting procedure and the data involved with what you established (name, comment, prototype or type), citing the capture and static Evidence."),
            ],
        },
        PromptDef {
            name: "audit_residual_unknowns".into(),
            title: Some("Audit residual unknowns".into()),
            description: "Audit current residual-unknown heads and evidence-qualified resolution.".into(),
            arguments: vec![
                arg("audit_scope", true, None, "What the audit covers, in words."),
                arg("unknown_id", false, Some(Family::ResidualUnknown), "One unresolved unknown to start with."),
                arg("evidence_id", false, Some(Family::Evidence), "Evidence to weigh against the unknowns."),
            ],
            objective: "Review every unresolved unknown in scope and move each forward only as far as retained Evidence allows.".into(),
            steps: vec![
                step("list_unknowns", "List the current unresolved unknown heads (and the requested unknown_id first)."),
                step("get_evidence", "Read the Evidence each unknown cites, and evidence_id if given."),
                step("list_annotations", "List the annotations of the places an unknown concerns: one may settle it, but only through the Evidence it cites; an annotation alone is an inference."),
                step("update_unknown", "Revise an unknown with the revision you read: resolve as verified only with at least one supporting Evidence id from this ledger; withdrawn or out-of-scope need a rationale; otherwise set investigating, blocked or contradicted."),
                step("record_unknown", "Record new questions the audit raises."),
            ],
        },
        PromptDef {
            name: "prepare_bounded_process_capture".into(),
            title: Some("Prepare a bounded process capture".into()),
            description: "Design a bounded controlled process experiment before execution.".into(),
            arguments: vec![
                arg("behavior_question", true, None, "The behaviour the experiment should answer."),
                arg("executable", true, Some(Family::ExecutablePath), "The program to run."),
                arg("working_directory", true, Some(Family::DirectoryPath), "The directory to run it in."),
                arg("prior_capture_evidence_id", false, Some(Family::ProcessCapture), "An earlier capture to build on."),
            ],
            objective: "Design, before anything runs, the smallest bounded experiment that answers the behaviour question.".into(),
            steps: vec![
                step("doctor", "Check whether process capture is enabled on this server and which roots it allows."),
                step("get_evidence", "If prior_capture_evidence_id is given, read that capture and reuse what it settled."),
                note("Write the scenario: executable, arguments, working directory, the few environment variables that must pass, stdin, wall and CPU time, memory and output caps, and network off unless the question needs it."),
                note("State what outcome would answer the question and what would not, before running."),
                step("capture_process_scenario", "Only after the operator approves the scenario, run it with approved: true."),
            ],
        },
    ]
}
