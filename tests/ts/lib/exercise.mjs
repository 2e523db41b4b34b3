// One investigation through an SDK client, the same over stdio and HTTP: every prompt, every
// completion family and every tool, each result checked against the listed output schema by the
// SDK (strict 2020-12 Ajv) and against values from the source, nm, objdump and readelf.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { compile, nmSymbol, REQUEST_TIMEOUT_MS } from './rea.mjs';

export const MARKER = 'rea-ts-marker-7f3a';

const SOURCE = `#include <stdio.h>
const char *marker = "${MARKER}";
__attribute__((noinline)) int answer(int x) { return x * 42; }
int main(int argc, char **argv) { (void)argv; printf("%s pid=%d\\n", marker, 1234); return answer(argc) == 42 ? 0 : 1; }
`;

/** The programs and the JavaScript app one run works on, with what reference tools say. */
export function buildTargets(root) {
  const prog = compile(root, 'prog', SOURCE);
  const prog2 = compile(root, 'prog2', `${SOURCE}int extra(void) { return 7; }\n`);
  const app = join(root, 'jsapp');
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), '{"name":"demo","version":"1.0.0","main":"main.js"}');
  writeFileSync(
    join(app, 'main.js'),
    "const { app, BrowserWindow, ipcMain } = require('electron');\nipcMain.handle('search', () => 1);\n",
  );
  const disassembly = execFileSync('objdump', ['-d', '--no-show-raw-insn', prog], { encoding: 'utf8' });
  return {
    prog,
    prog2,
    app,
    answer: nmSymbol(prog, 'answer'),
    main: nmSymbol(prog, 'main'),
    answerInstructions: instructionsOf(disassembly, 'answer'),
    callSite: callSiteOf(disassembly, 'main', 'answer'),
    markerAddress: stringAddress(prog, MARKER),
  };
}

/** The instruction addresses objdump lists in `symbol`. */
function instructionsOf(disassembly, symbol) {
  const block = disassembly.split(/\n\n/).find((b) => b.includes(`<${symbol}>:`));
  assert.ok(block, `objdump shows no ${symbol}`);
  return block
    .split('\n')
    .map((line) => line.match(/^\s+([0-9a-f]+):\s+\S/))
    .filter(Boolean)
    .map((m) => `0x${m[1]}`);
}

/** The address of the call from `caller` to `callee`, as objdump shows it. */
function callSiteOf(disassembly, caller, callee) {
  const block = disassembly.split(/\n\n/).find((b) => b.includes(`<${caller}>:`));
  const line = block.split('\n').find((l) => /\scall\s/.test(l) && l.includes(`<${callee}>`));
  assert.ok(line, `objdump shows no call from ${caller} to ${callee}`);
  return `0x${line.trim().split(':')[0]}`;
}

/** Where the string `text` is loaded, from its file offset and readelf's section table. */
function stringAddress(file, text) {
  const offset = readFileSync(file).indexOf(Buffer.from(`${text}\0`));
  const sections = execFileSync('readelf', ['-SW', file], { encoding: 'utf8' });
  for (const line of sections.split('\n')) {
    const m = line.match(/\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/);
    if (!m) continue;
    const [address, start, size] = [m[2], m[3], m[4]].map((h) => parseInt(h, 16));
    if (address !== 0 && offset >= start && offset < start + size) {
      return { address: `0x${(address + offset - start).toString(16)}`, section: m[1] };
    }
  }
  throw new Error(`no section holds ${text}`);
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Strings anywhere in `value` that match `pattern`. */
function stringsMatching(value, pattern, out = new Set()) {
  if (typeof value === 'string') {
    if (pattern.test(value)) out.add(value);
  } else if (Array.isArray(value)) {
    value.forEach((v) => stringsMatching(v, pattern, out));
  } else if (value && typeof value === 'object') {
    Object.values(value).forEach((v) => stringsMatching(v, pattern, out));
  }
  return out;
}

/** Wraps a client: every answer's size is kept, and tool results must succeed. */
export class Session {
  constructor(client) {
    this.client = client;
    this.largest = { bytes: 0, what: '' };
    this.called = new Set();
  }

  note(what, answer) {
    const bytes = Buffer.byteLength(JSON.stringify(answer));
    if (bytes > this.largest.bytes) this.largest = { bytes, what };
  }

  /** Calls a tool that must succeed; the SDK has validated its structuredContent already. */
  async tool(name, args = {}) {
    assert.ok(this.client.getToolOutputValidator(name), `the SDK holds no output validator for ${name}`);
    const result = await this.client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
    this.note(`tools/call ${name}`, result);
    assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`);
    assert.ok(result.structuredContent, `${name} returned no structuredContent`);
    this.called.add(name);
    return result.structuredContent;
  }

  async complete(prompt, argument, value, context) {
    const answer = await this.client.complete({
      ref: { type: 'ref/prompt', name: prompt },
      argument: { name: argument, value },
      ...(context ? { context: { arguments: context } } : {}),
    });
    this.note(`completion ${prompt}.${argument}`, answer);
    return answer.completion;
  }

  async prompt(name, args) {
    const answer = await this.client.getPrompt({ name, arguments: args });
    this.note(`prompts/get ${name}`, answer);
    return answer.messages.map((m) => m.content.text).join('\n');
  }
}

/** Required arguments of each prompt, with one optional argument each (SPEC's table). */
const PROMPT_ARGUMENTS = {
  investigate_feature: { feature: 'offline search', document: 'prog' },
  compare_application_versions: { left_target_path: '/a/Old.app', right_target_path: '/b/New.app', focus_occurrence_id: 'occ_x' },
  verify_reconstruction: { reconstruction_goal: 'same program', provider_id: 'auto' },
  trace_crash: { crash_signal: 'SIGSEGV', procedure: 'answer' },
  audit_residual_unknowns: { audit_scope: 'everything open', unknown_id: 'unk_x' },
  prepare_bounded_process_capture: { behavior_question: 'does it print?', executable: '/bin/true', working_directory: '/tmp' },
};

/** Every prompt: listed with SPEC's arguments, rendered with its arguments as data, naming only
 * listed tools, and without an argument it does not declare. */
export async function checkPrompts(session) {
  const { client } = session;
  const listed = await client.listPrompts();
  assert.deepEqual(
    listed.prompts.map((p) => p.name),
    Object.keys(PROMPT_ARGUMENTS),
  );
  const tools = new Set((await client.listTools()).tools.map((t) => t.name));
  for (const prompt of listed.prompts) {
    const args = { ...PROMPT_ARGUMENTS[prompt.name], undeclared_extra: 'zq7-not-declared' };
    const text = await session.prompt(prompt.name, args);
    for (const [name, value] of Object.entries(PROMPT_ARGUMENTS[prompt.name])) {
      assert.ok(text.includes(`"${name}": "${value}"`), `${prompt.name} does not render ${name}`);
    }
    assert.ok(!text.includes('undeclared_extra') && !text.includes('zq7-not-declared'), `${prompt.name} renders an undeclared argument`);
    const steps = [...text.matchAll(/^\d+\. `([a-z_]+)`/gm)].map((m) => m[1]);
    assert.ok(steps.length > 0, `${prompt.name} suggests no tool`);
    for (const step of steps) assert.ok(tools.has(step), `${prompt.name} names ${step}, which is not listed`);
  }
  // A missing required argument is a protocol error, -32602.
  await assert.rejects(client.getPrompt({ name: 'trace_crash', arguments: {} }), (e) => e.code === -32602);
}

/**
 * The investigation: every tool once (some twice), every completion family, with exact values.
 * Leaves the binary session closed. Returns the tools called.
 */
export async function investigate(session, t, { stateDir, root }) {
  const doctor = await session.tool('doctor', {});
  assert.equal(doctor.prompts, 6);
  assert.equal(doctor.state_dir, stateDir);
  assert.match(doctor.process_capture, /^enabled/);

  const opened2 = await session.tool('open_binary', { path: t.prog2 });
  assert.equal(opened2.sha256, sha256(t.prog2));
  const inventory2 = await session.tool('inspect_artifact', {});
  const opened = await session.tool('open_binary', { path: t.prog });
  assert.deepEqual(
    [opened.name, opened.format, opened.architecture, opened.sha256],
    ['prog', 'elf', 'x86_64', sha256(t.prog)],
  );
  assert.equal(opened.session_id, opened2.session_id, 'switching targets keeps the session');

  const documents = await session.tool('list_documents', {});
  assert.deepEqual(
    documents.documents.map((d) => [d.name, d.format, d.file_size]),
    [['prog', 'elf', statSync(t.prog).size]],
  );
  const procedures = await session.tool('list_procedures', {});
  const byName = Object.fromEntries(procedures.procedures.filter((p) => p.name).map((p) => [p.name, p]));
  assert.deepEqual([byName.answer.address, byName.answer.size], [t.answer.address, t.answer.size]);
  assert.deepEqual([byName.main.address, byName.main.size], [t.main.address, t.main.size]);
  assert.equal(procedures.total, opened.documents[0].procedures);

  const found = await session.tool('search_procedures', { query: 'answer' });
  assert.deepEqual(found.procedures.map((p) => [p.name, p.address]), [['answer', t.answer.address]]);
  const strings = await session.tool('search_strings', { pattern: MARKER });
  assert.deepEqual(
    strings.matches.map((m) => [m.text, m.address, m.section, m.length]),
    [[MARKER, t.markerAddress.address, t.markerAddress.section, MARKER.length]],
  );
  const info = await session.tool('procedure_info', { procedure: 'answer' });
  assert.deepEqual([info.procedure.address, info.size, info.section], [t.answer.address, t.answer.size, '.text']);
  const assembly = await session.tool('procedure_assembly', { procedure: 'answer' });
  assert.deepEqual(assembly.instructions.map((i) => i.address), t.answerInstructions);
  assert.equal(assembly.total_instructions, t.answerInstructions.length);
  assert.equal(assembly.instructions.at(-1).text, 'ret');
  const callers = await session.tool('procedure_callers', { procedure: 'answer' });
  assert.deepEqual(
    callers.callers.map((c) => [c.name, c.procedure, c.sites]),
    [['main', t.main.address, [t.callSite]]],
  );
  const callees = await session.tool('procedure_callees', { procedure: 'main' });
  assert.deepEqual(
    callees.callees.filter((c) => c.kind === 'procedure').map((c) => [c.name, c.target, c.sites]),
    [['answer', t.answer.address, [t.callSite]]],
  );
  const xrefs = await session.tool('xrefs', { address: t.answer.address });
  assert.deepEqual(xrefs.code.map((x) => [x.site, x.procedure, x.procedure_name]), [[t.callSite, t.main.address, 'main']]);
  const dossier = await session.tool('analyze_function', { procedure: 'answer' });
  assert.deepEqual([dossier.info.address, dossier.info.size], [t.answer.address, t.answer.size]);
  // Deeper reads; depth.test.mjs checks each of them in detail.
  const code = await session.tool('procedure_pseudo_code', { procedure: 'answer' });
  assert.equal(code.procedure, t.answer.address);
  assert.ok(code.lines.some((l) => l.includes('* 42')), code.lines.join('\n'));
  const marker = await session.tool('read_bytes', { address: t.markerAddress.address, length: MARKER.length });
  assert.deepEqual([marker.printable, marker.section], [MARKER, t.markerAddress.section]);
  const markers = await session.tool('search_bytes', { pattern: Buffer.from(MARKER).toString('hex') });
  assert.deepEqual([markers.total, markers.hits.map((h) => h.address)], [1, [t.markerAddress.address]]);

  const inventory = await session.tool('inspect_artifact', {});
  assert.match(inventory.manifest.id, /^agm_[0-9a-f]{64}$/);
  assert.deepEqual(
    [inventory.manifest.parts[0].path, inventory.manifest.parts[0].sha256, inventory.manifest.parts[0].size],
    ['prog', sha256(t.prog), statSync(t.prog).size],
  );
  const comparison = await session.tool('compare_artifacts', {
    left_manifest_id: inventory.manifest.id,
    right_manifest_id: inventory2.manifest.id,
  });
  const changedFile = comparison.parts.changed.find((p) => p.left_kind === 'elf');
  assert.deepEqual([changedFile.left_sha256, changedFile.right_sha256], [sha256(t.prog), sha256(t.prog2)]);
  // Function by function: prog2 only adds `extra` (tests/ts/compare.test.mjs goes further).
  const procedureDiff = await session.tool('compare_procedures', {
    left_manifest_id: inventory.manifest.id,
    right_manifest_id: inventory2.manifest.id,
    status: 'added',
  });
  assert.deepEqual(
    procedureDiff.entries.map((e) => [e.status, e.right.name, e.right.address]),
    [['added', 'extra', nmSymbol(t.prog2, 'extra').address]],
  );
  // Annotations: a name kept beside the file's, listed, and carried to prog2's `answer`
  // (annotations.test.mjs goes further).
  const named = await session.tool('annotate', {
    procedure: 'answer', kind: 'name', text: 'the_answer', rationale: 'returns 42', cites: [opened.evidence.id],
  });
  assert.deepEqual([named.annotation.address, named.annotation.head.revision], [t.answer.address, 1]);
  const annotations = await session.tool('list_annotations', { procedure: 'answer' });
  assert.deepEqual(annotations.annotations.map((a) => a.id), [named.annotation.id]);
  const carried = await session.tool('carry_annotations', {
    from_manifest_id: inventory.manifest.id,
    to_manifest_id: inventory2.manifest.id,
  });
  assert.deepEqual(
    carried.carried.map((c) => [c.from, c.text, c.to_address]),
    [[named.annotation.id, 'the_answer', nmSymbol(t.prog2, 'answer').address]],
  );
  const paths = await session.tool('call_paths', { from: 'main', to: 'answer' });
  assert.deepEqual(
    paths.paths.map((p) => p.steps.map((s) => [s.node.name, s.node.address, s.site])),
    [[['main', t.main.address, null], ['answer', t.answer.address, t.callSite]]],
  );
  // Claims in the flattened, portable form the input schema describes.
  const verdict = await session.tool('verify_reconstruction', {
    spec: {
      claims: [
        { claim: 'procedure_exists', document: 'prog', name: 'answer' },
        { claim: 'part_exists', part: 'prog', sha256: sha256(t.prog) },
        { claim: 'no_change', comparison_evidence_id: comparison.evidence.id, dimension: 'procedures' },
        { claim: 'procedures_added', comparison_evidence_id: comparison.evidence.id, count: 1 },
      ],
    },
  });
  assert.deepEqual(verdict.claims.map((c) => c.status), ['pass', 'pass', 'fail', 'pass']);
  assert.equal(verdict.status, 'fail');

  const javascript = await session.tool('analyze_javascript_application', { input_path: t.app });
  assert.deepEqual(
    javascript.ipc.map((c) => [c.channel, c.handlers.map((h) => [h.api, h.file, h.line, h.column])]),
    [['search', [['ipcMain.handle', 'main.js', 2, 1]]]],
  );

  const first = await session.tool('capture_process_scenario', { executable: t.prog, working_directory: root, approved: true });
  assert.deepEqual([first.stdout.data, first.termination], [`${MARKER} pid=1234\n`, { kind: 'exited', code: 0 }]);
  const second = await session.tool('capture_process_scenario', {
    executable: t.prog,
    working_directory: root,
    approved: true,
    arguments: ['x'],
  });
  assert.deepEqual(second.termination, { kind: 'exited', code: 1 });
  const captures = await session.tool('compare_process_captures', {
    left_capture_id: first.evidence.id,
    right_capture_id: second.evidence.id,
    normalize: [{ kind: 'pids' }, { kind: 'pattern', pattern: 'marker-[0-9a-f]+', replacement: 'marker' }],
  });
  assert.deepEqual(
    [captures.exit_status.verdict, captures.stdout.verdict, captures.rules],
    ['different', 'equal', ['pids', '/marker-[0-9a-f]+/ -> "marker"']],
  );

  const unknown = await session.tool('record_unknown', { question: 'Why 42?', evidence_ids: [info.evidence.id] });
  assert.equal(unknown.head.revision, 1);

  // Every completion family, from this live session.
  assert.deepEqual((await session.complete('investigate_feature', 'document', 'pr')).values, ['prog']);
  const procedure = await session.complete('investigate_feature', 'procedure', 'ans', { document: 'prog' });
  assert.deepEqual([procedure.values, procedure.total], [['answer'], 1]);
  const providers = await session.complete('investigate_feature', 'provider_id', '');
  // auto and angr (serverDirs names the angr venv), among the deep candidates, sorted.
  assert.ok(['auto', 'angr'].every((id) => providers.values.includes(id)), JSON.stringify(providers.values));
  assert.deepEqual(providers.values, [...providers.values].sort());
  const evidence = await session.complete('verify_reconstruction', 'comparison_evidence_id', comparison.evidence.id.slice(0, 20));
  assert.ok(evidence.values.includes(comparison.evidence.id));
  assert.deepEqual(
    (await session.complete('audit_residual_unknowns', 'evidence_id', info.evidence.id)).values,
    [info.evidence.id],
  );
  const captureIds = [first.evidence.id, second.evidence.id].sort();
  assert.deepEqual((await session.complete('trace_crash', 'capture_evidence_id', '')).values, captureIds);
  assert.deepEqual((await session.complete('prepare_bounded_process_capture', 'prior_capture_evidence_id', 'ev_')).values, captureIds);
  const manifests = await session.complete('compare_application_versions', 'left_manifest_id', 'agm_');
  assert.deepEqual(
    manifests.values,
    [inventory.manifest.id, inventory2.manifest.id, javascript.graph_id].sort(),
  );
  const pageIds = [...inventory.pages, ...inventory2.pages].map((p) => p.evidence_id);
  const occurrences = new Set();
  for (const id of pageIds) {
    const page = await session.tool('get_evidence', { evidence_id: id });
    stringsMatching(page.record.result, /^occ_[0-9a-f]{64}$/, occurrences);
  }
  // Occurrences of both inventories' pages, and one for each occurrence of the JavaScript graph.
  const occurrence = await session.complete('compare_application_versions', 'focus_occurrence_id', 'occ_');
  assert.ok(occurrences.size > 0);
  assert.deepEqual(occurrence.values.filter((v) => occurrences.has(v)), [...occurrences].sort());
  assert.equal(occurrence.total, occurrences.size + javascript.occurrences.length);
  assert.deepEqual((await session.complete('audit_residual_unknowns', 'unknown_id', 'unk_')).values, [unknown.id]);

  const updated = await session.tool('update_unknown', {
    unknown_id: unknown.id,
    expected_revision: 1,
    status: 'resolved',
    resolution: 'withdrawn',
    rationale: 'Answered by the source.',
  });
  assert.deepEqual([updated.head.revision, updated.head.status], [2, 'resolved']);
  assert.equal((await session.tool('list_unknowns', {})).total, 0);
  assert.deepEqual((await session.tool('list_unknowns', { include_resolved: true })).unknowns.map((u) => u.id), [unknown.id]);
  assert.deepEqual((await session.complete('audit_residual_unknowns', 'unknown_id', 'unk_')).values, []);

  const fetched = await session.tool('get_evidence', { evidence_id: first.evidence.id });
  assert.deepEqual([fetched.id, fetched.record.operation], [first.evidence.id, 'capture_process_scenario']);
  const ledger = await session.tool('list_evidence', { limit: 500 });
  const state = await session.tool('binary_session', {});
  assert.equal(state.evidence, ledger.total);
  for (const id of [opened.evidence.id, comparison.evidence.id, first.evidence.id, verdict.evidence.id]) {
    assert.ok(ledger.evidence.some((e) => e.id === id), `${id} is not listed`);
  }
  const exportPath = join(root, `export-${Date.now()}.jsonl`);
  const exported = await session.tool('export_evidence', { path: exportPath, format: 'jsonl' });
  const [header, ...lines] = readFileSync(exportPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(header, { rea_export: 'evidence', format_version: 1, session_id: opened.session_id });
  assert.deepEqual([exported.evidence, lines.length], [ledger.total, ledger.total]);
  assert.deepEqual(lines.map((l) => l.id).sort(), ledger.evidence.map((e) => e.id).sort());

  const closed = await session.tool('close_binary', {});
  assert.deepEqual([closed.session_id, closed.evidence_dropped], [opened.session_id, ledger.total]);
  return opened;
}

/** Opens a target and leaves the session for a later connection to resume. */
export async function leaveResumable(session, t) {
  const opened = await session.tool('open_binary', { path: t.prog });
  return opened.session_id;
}

/** Resumes the session a previous connection left. */
export async function resume(session, sessionId, t) {
  const resumed = await session.tool('resume_session', { session_id: sessionId });
  assert.deepEqual([resumed.id, resumed.active_target, resumed.evidence], [sessionId, t.prog, 1]);
}
