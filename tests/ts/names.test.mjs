// Issue 15/18 names and string users through the official MCP TypeScript SDK: search_strings'
// users, list_procedures with limit 0, C++-free selectors and update_unknown's carried
// Evidence, each result validated by the SDK against the tool's outputSchema.

import assert from 'node:assert/strict';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { cleanup, compile, connectStdio, nmSymbol, serverDirs, tempDir } from './lib/rea.mjs';
import { Session } from './lib/exercise.mjs';

const SOURCE = `
#include <stdio.h>
__attribute__((noinline)) void greet(void) { puts("names marker text"); }
int main(void) { greet(); return 0; }
`;

let root;
let dirs;
let prog;

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  prog = compile(root, 'prog', SOURCE);
});

after(() => cleanup(root));

test('string matches name their users; limit 0 counts; unknowns keep their Evidence', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    const opened = await session.tool('open_binary', { path: prog });
    const total = opened.documents[0].procedures;

    const found = await session.tool('search_strings', { pattern: 'names marker' });
    assert.equal(found.total, 1);
    const match = found.matches[0];
    assert.equal(match.address, match.string_address);
    const end = BigInt(match.address) + BigInt('names marker text'.length);
    assert.equal(match.string_end, `0x${end.toString(16)}`);
    const greet = nmSymbol(prog, 'greet').address;
    assert.deepEqual(match.users.map((u) => [u.procedure, u.name]), [[greet, 'greet']]);
    assert.equal(match.users_total, 1);

    const counted = await session.tool('list_procedures', { limit: 0 });
    assert.deepEqual([counted.procedures, counted.total], [[], total]);

    const unknown = await session.tool('record_unknown', { question: 'who prints?', evidence_ids: [opened.evidence.id] });
    const next = await session.tool('update_unknown', { unknown_id: unknown.id, expected_revision: 1, status: 'investigating' });
    assert.deepEqual(next.head.supporting, [opened.evidence.id]);

    const app = join(root, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), '{"name": "tiny", "version": "1.0.0", "main": "main.js"}');
    writeFileSync(join(app, 'main.js'), 'console.log("hi");\n');
    const js = await session.tool('analyze_javascript_application', { input_path: app });
    assert.equal(js.evidence.subject.sha256, js.input.files_sha256);
  } finally {
    await close();
  }
});
