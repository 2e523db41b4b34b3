// procedure_pseudo_code, read_bytes and search_bytes through the official TypeScript SDK, whose
// client validates every structuredContent against the tool's output schema (strict 2020-12
// Ajv), on graph.c of the ground-truth corpus built here (x86-64 ELF), with exact values from
// the C source and nm. The pseudo-code needs the angr venv (`.ci/angr-venv.sh`; scripts/test.sh
// exports REA_ANGR_PYTHON); without it the test fails and says so.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { Session } from './lib/exercise.mjs';
import { REPO, cleanup, connectStdio, nmSymbol, serverDirs, tempDir } from './lib/rea.mjs';

const PACKED = 'https://releases.example.invalid/downloadberylliumcobaltnickel';

let root;
let graph;
let session;
let close;

before(async () => {
  const python = process.env.REA_ANGR_PYTHON;
  assert.ok(python, 'REA_ANGR_PYTHON is not set: create the venv with `bash .ci/angr-venv.sh` and export REA_ANGR_PYTHON=$PWD/.venv-angr/bin/python');
  accessSync(python, constants.X_OK);
  root = tempDir();
  graph = join(root, 'graph');
  execFileSync('cc', ['-O0', '-o', graph, join(REPO, 'tests', 'corpus', 'graph.c')]);
  // serverDirs names REA_ANGR_PYTHON's interpreter in the server's rea.toml.
  const connected = await connectStdio(serverDirs(root));
  // The SDK validates structuredContent with the output schemas tools/list gave it.
  await connected.client.listTools();
  session = new Session(connected.client);
  close = connected.close;
  await session.tool('open_binary', { path: graph });
});

after(async () => {
  await close?.();
  cleanup(root);
});

const hexOf = (n) => `0x${n.toString(16)}`;
const at = (symbol) => BigInt(nmSymbol(graph, symbol).address);

test('procedure_pseudo_code resolves its callee and string, is recorded once and paged', async () => {
  const code = await session.tool('procedure_pseudo_code', { procedure: 'say_prompt' });
  assert.equal(code.procedure, hexOf(at('say_prompt')));
  assert.equal(code.name, 'say_prompt');
  assert.ok(code.lines.some((l) => l.includes('sink("\\nEnter password:", 16)')), code.lines.join('\n'));
  assert.equal(code.total_lines, code.lines.length);
  assert.equal(code.next_offset, null);
  const calls = code.references.filter((r) => r.kind === 'call').map((r) => r.referent);
  assert.deepEqual(calls, [{ kind: 'procedure', address: hexOf(at('sink')), name: 'sink' }]);
  const strings = code.references.filter((r) => r.kind === 'string').map((r) => r.referent);
  assert.deepEqual(strings, [{ kind: 'string', text: '\nEnter password:', encoding: 'utf-8' }]);
  assert.equal(code.evidence.provider.id, 'angr');
  assert.equal(code.evidence.confidence, 'derived');
  assert.equal(code.evidence.new, true);

  const page = await session.tool('procedure_pseudo_code', { procedure: code.procedure, offset: 2, limit: 1 });
  assert.deepEqual(page.lines, code.lines.slice(2, 3));
  assert.equal(page.next_offset, 3);
  assert.equal(page.evidence.id, code.evidence.id);
  assert.equal(page.evidence.new, false);
});

test('read_bytes gives the bytes of PACKED with its section, symbol and typed values', async () => {
  const packed = at('PACKED');
  const read = await session.tool('read_bytes', { address: hexOf(packed + 41n), length: 9 });
  assert.equal(read.hex, Buffer.from('beryllium').toString('hex'));
  assert.equal(read.printable, 'beryllium');
  assert.deepEqual([read.section, read.symbol, read.symbol_offset, read.length], ['.rodata', 'PACKED', 41, 9]);
  const bytes = Buffer.from('berylliu');
  assert.equal(read.values.u8, bytes[0]);
  assert.equal(read.values.u16_be, bytes.readUInt16BE(0));
  assert.equal(read.values.u32_le, bytes.readUInt32LE(0));
  assert.equal(read.values.u64_be, hexOf(bytes.readBigUInt64BE(0)));
  assert.equal(read.values.pointer, hexOf(bytes.readBigUInt64LE(0)));
  const whole = await session.tool('read_bytes', { address: hexOf(packed), length: PACKED.length });
  assert.equal(whole.printable, PACKED);
  const bss = await session.client.callTool({ name: 'read_bytes', arguments: { address: hexOf(at('SINK')), length: 4 } });
  assert.equal(bss.isError, true);
  assert.match(bss.content[0].text, /lies in \.bss, which has no bytes in the file/);
});

test('search_bytes finds the wildcard pattern once, where PACKED holds it', async () => {
  const found = await session.tool('search_bytes', { pattern: '62 65 72 79 6c ?? 69 75 6d' });
  assert.equal(found.total, 1);
  assert.equal(found.next_offset, null);
  assert.deepEqual(found.hits, [{ address: hexOf(at('PACKED') + 41n), section: '.rodata' }]);
  const code = await session.tool('search_bytes', { pattern: '5d c3', section: '.text', limit: 1 });
  assert.ok(code.total >= 1);
  assert.equal(code.hits.length, 1);
  assert.equal(code.next_offset, code.total > 1 ? 1 : null);
});
