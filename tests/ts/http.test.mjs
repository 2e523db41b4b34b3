// rea over streamable HTTP, driven by the official MCP TypeScript SDK: the same investigation as
// over stdio, each result validated by the SDK against the tool's outputSchema.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { cleanup, connectHttp, connectStdio, serverDirs, startHttp, tempDir } from './lib/rea.mjs';
import { buildTargets, checkPrompts, investigate, leaveResumable, resume, Session } from './lib/exercise.mjs';

let root;
let dirs;
let targets;
let server;

before(async () => {
  root = tempDir();
  dirs = serverDirs(root);
  targets = buildTargets(root);
  server = await startHttp(dirs);
});

after(async () => {
  await server.stop();
  cleanup(root);
});

test('every prompt, completion family and tool over streamable HTTP', async (t) => {
  const { client, close } = await connectHttp(server.url);
  try {
    const session = new Session(client);
    const listed = await client.listTools();
    await checkPrompts(session);
    await investigate(session, targets, { stateDir: dirs.state, root });

    // resume_session needs a session no live process holds: one left by a stdio server that
    // has ended (the HTTP server's own MCP sessions release theirs only once their task ends,
    // after the DELETE has been answered).
    const left = await connectStdio(dirs);
    const leaving = new Session(left.client);
    await left.client.listTools();
    const sessionId = await leaveResumable(leaving, targets);
    await left.close();
    await resume(session, sessionId, targets);

    const names = listed.tools.map((tool) => tool.name);
    assert.deepEqual([...session.called, ...leaving.called].filter((n, i, all) => all.indexOf(n) === i).sort(), names.sort());
    t.diagnostic(`largest answer over HTTP: ${session.largest.bytes} bytes (${session.largest.what})`);
  } finally {
    await close();
  }
});

test('a deleted MCP session is gone: its id gets 404', async () => {
  const first = await connectHttp(server.url);
  const sessionId = first.transport.sessionId;
  assert.ok(sessionId);
  await first.close();
  const response = await fetch(server.url, {
    method: 'DELETE',
    headers: { 'mcp-session-id': sessionId },
  });
  assert.equal(response.status, 404);
  const body = await response.json();
  assert.deepEqual([body.jsonrpc, body.id, body.error.code], ['2.0', null, -32600]);
});
