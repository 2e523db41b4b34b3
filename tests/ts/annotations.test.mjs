// Issue 26: annotate and list_annotations through the official MCP TypeScript SDK, each result
// validated by the SDK against the tool's outputSchema; an analyst name shows beside the file's
// name in search_strings' users and procedure_callees, and a revision made from a stale head is a
// tool error.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { cleanup, compile, connectStdio, nmSymbol, serverDirs, tempDir } from './lib/rea.mjs';
import { Session } from './lib/exercise.mjs';

const SOURCE = `
#include <stdio.h>
__attribute__((noinline)) void greet(void) { puts("annotation marker text"); }
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

test('annotations show beside file names and revise append-only', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    const opened = await session.tool('open_binary', { path: prog });
    const greet = nmSymbol(prog, 'greet').address;

    const made = await session.tool('annotate', {
      procedure: 'greet', kind: 'name', text: 'say_hello', rationale: 'prints the greeting', cites: [opened.evidence.id],
    });
    assert.deepEqual([made.annotation.address, made.annotation.head.revision], [greet, 1]);
    assert.equal(made.evidence.confidence, 'inferred');

    const found = await session.tool('search_strings', { pattern: 'annotation marker' });
    assert.deepEqual(found.matches[0].users.map((u) => [u.procedure, u.name, u.analyst_name]), [[greet, 'greet', 'say_hello']]);
    const callees = await session.tool('procedure_callees', { procedure: 'main' });
    const edge = callees.callees.find((e) => e.target === greet);
    assert.deepEqual([edge.name, edge.analyst_name, edge.annotation_id], ['greet', 'say_hello', made.annotation.id]);

    const revised = await session.tool('annotate', {
      supersedes: made.annotation.id, revision: 1, kind: 'name', text: 'print_greeting', rationale: 'it calls puts', cites: [opened.evidence.id],
    });
    assert.equal(revised.annotation.head.revision, 2);
    const stale = await client.callTool({
      name: 'annotate',
      arguments: { supersedes: made.annotation.id, revision: 1, kind: 'name', text: 'late', rationale: 'r', cites: [opened.evidence.id] },
    });
    assert.equal(stale.isError, true);
    assert.equal(stale.content[0].text, `annotation ${made.annotation.id} is at revision 2, not 1: read it again (list_annotations) and retry`);

    const listed = await session.tool('list_annotations', { include_history: true });
    assert.equal(listed.total, 1);
    assert.deepEqual(listed.annotations[0].history.map((r) => r.text), ['say_hello']);
    assert.equal(listed.annotations[0].head.text, 'print_greeting');
  } finally {
    await close();
  }
});

const NEXT = `
#include <stdio.h>
__attribute__((noinline)) void greet(void) { puts("annotation marker text"); }
__attribute__((noinline)) void farewell(void) { puts("goodbye"); }
int main(void) { greet(); farewell(); return 0; }
`;

test('carry_annotations moves a name to the matched procedure of the next version', async () => {
  const next = compile(root, 'next', NEXT);
  const { client, close } = await connectStdio(serverDirs(tempDir()));
  try {
    const session = new Session(client);
    await client.listTools();
    await session.tool('open_binary', { path: next });
    const right = (await session.tool('inspect_artifact', {})).manifest.id;
    const opened = await session.tool('open_binary', { path: prog });
    const left = (await session.tool('inspect_artifact', {})).manifest.id;
    const made = await session.tool('annotate', {
      procedure: 'greet', kind: 'name', text: 'say_hello', rationale: 'prints the greeting', cites: [opened.evidence.id],
    });
    const carried = await session.tool('carry_annotations', { from_manifest_id: left, to_manifest_id: right });
    assert.equal(carried.carried_total, 1);
    assert.deepEqual(
      carried.carried.map((c) => [c.from, c.text, c.from_address, c.to_address]),
      [[made.annotation.id, 'say_hello', nmSymbol(prog, 'greet').address, nmSymbol(next, 'greet').address]],
    );
    assert.equal(carried.not_carried_total, 0);
    assert.equal(carried.evidence.operation, 'carry_annotations');
  } finally {
    await close();
  }
});
