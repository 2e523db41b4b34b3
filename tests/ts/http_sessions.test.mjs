// Binary sessions over streamable HTTP (issue 16, item 9), driven by the official TypeScript SDK
// with output validation on: a binary session opened in an MCP session is seen by the next call,
// reports its ledger check, exports its ledger with nothing skipped, and goes with close_binary
// and DELETE; a stateless 2026-07-28 request (which the SDK does not speak, so it is sent by
// hand) that names no binary session is told to name one, and one that names a wrong id is
// refused with the reason. Every request carries alice's bearer token unless it says otherwise
// (issue 25); a session alice opened is, for bob, exactly a session that does not exist.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { ALICE, BOB, bearer, cleanup, compile, connectHttp, nmSymbol, serverDirs, startHttp, tempDir } from './lib/rea.mjs';

const UNADDRESSED =
  'this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: ' +
  'pass the session id open_binary or resume_session returned as the `session` argument';

let root;
let dirs;
let server;
let program;

before(async () => {
  root = tempDir();
  dirs = serverDirs(root);
  program = compile(
    root,
    'sessioned',
    'int sessioned_marker(int x) { return x * 5 + 2; }\nint main(void) { return sessioned_marker(3); }\n',
  );
  server = await startHttp(dirs);
});

after(async () => {
  await server.stop();
  cleanup(root);
});

/** Binary session directories on disk. */
function sessionsOnDisk() {
  try {
    return readdirSync(join(dirs.state, 'sessions')).filter((n) => n.startsWith('ses_')).sort();
  } catch {
    return [];
  }
}

/** One stateless MCP 2026-07-28 `tools/call`: no MCP session, its version in `_meta` and headers. */
async function stateless(name, args, token = ALICE) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: {
      ...bearer(token),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'rea-ts-suite', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  assert.equal(response.headers.get('mcp-session-id'), null);
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  const messages = type.includes('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(text)];
  const answer = messages.find((m) => m.id === 9);
  assert.ok(answer, text);
  return answer;
}

test('a binary session in an MCP session: seen by the next call, checked, exported, closed and deleted', async () => {
  const marker = nmSymbol(program, 'sessioned_marker');
  const { client, transport, close } = await connectHttp(server.url);
  let closed = false;
  try {
    // Listing the tools gives the SDK their output schemas: every result below is validated.
    await client.listTools();
    const opened = await client.callTool({ name: 'open_binary', arguments: { path: program } });
    assert.equal(opened.isError, false, JSON.stringify(opened.content));
    const sid = opened.structuredContent.session_id;
    // The time, then 128 random bits.
    assert.match(sid, /^ses_[0-9a-f]+_[0-9a-f]{32}$/);
    assert.equal(opened.structuredContent.name, 'sessioned');
    assert.deepEqual(sessionsOnDisk(), [sid]);

    // The next call on the same MCP session sees that target, with no `session` argument.
    const state = await client.callTool({ name: 'binary_session', arguments: {} });
    assert.equal(state.structuredContent.session_id, sid);
    assert.deepEqual(state.structuredContent.targets.map((t) => [t.name, t.path, t.active]), [['sessioned', program, true]]);
    // A new session's ledger was empty when it opened: nothing to hash.
    assert.equal(state.structuredContent.ledger_check, 'clean');
    const found = await client.callTool({ name: 'search_procedures', arguments: { query: 'sessioned_marker' } });
    const hit = found.structuredContent.procedures.find((p) => p.name === 'sessioned_marker');
    assert.ok(hit, JSON.stringify(found.structuredContent));
    assert.equal(hit.address, marker.address);
    assert.equal(hit.size, marker.size);

    const dest = join(root, 'ledger.jsonl');
    const exported = await client.callTool({ name: 'export_evidence', arguments: { path: dest, format: 'jsonl' } });
    assert.equal(exported.isError, false, JSON.stringify(exported.content));
    const [header, ...lines] = readFileSync(dest, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(header, { rea_export: 'evidence', format_version: 1, session_id: sid });
    assert.deepEqual(
      [exported.structuredContent.evidence, exported.structuredContent.skipped, exported.structuredContent.skipped_rows],
      [lines.length, 0, []],
    );
    assert.deepEqual(lines.map((l) => l.seq), lines.map((_, i) => i + 1));
    assert.equal(lines[0].record.operation, 'open_binary');

    const ended = await client.callTool({ name: 'close_binary', arguments: {} });
    assert.equal(ended.structuredContent.session_id, sid);
    const none = await client.callTool({ name: 'binary_session', arguments: {} });
    assert.deepEqual([none.structuredContent.open, none.structuredContent.ledger_check], [false, null]);
    assert.deepEqual(sessionsOnDisk(), []);

    const mcpSession = transport.sessionId;
    assert.ok(mcpSession);
    await close();
    closed = true;
    // DELETE ended the MCP session: its id is not known any more.
    const again = await fetch(server.url, { method: 'DELETE', headers: { 'mcp-session-id': mcpSession, ...bearer() } });
    assert.equal(again.status, 404);
  } finally {
    if (!closed) await close();
  }
});

test('a stateless request that names no binary session is told to; a wrong id is refused with the reason', async () => {
  const before = sessionsOnDisk();
  const unnamed = await stateless('list_procedures', { limit: 1 });
  assert.equal(unnamed.result.isError, true);
  assert.deepEqual(unnamed.result.content, [{ type: 'text', text: UNADDRESSED }]);
  // No orphan session directory was left behind.
  assert.deepEqual(sessionsOnDisk(), before);

  const opened = await stateless('open_binary', { path: program });
  const sid = opened.result.structuredContent.session_id;
  const seen = await stateless('binary_session', { session: sid });
  assert.deepEqual(seen.result.structuredContent.targets.map((t) => t.name), ['sessioned']);

  const wrong = 'ses_1a232c9f7a0_00000000000000000000000000000000';
  const refused = await stateless('binary_session', { session: wrong });
  assert.deepEqual(refused.error, {
    code: -32602,
    message: `no live binary session ${wrong} on this server (closed, or released after sitting idle): resume_session it`,
  });
  const ended = await stateless('close_binary', { session: sid });
  assert.equal(ended.result.structuredContent.session_id, sid);
  assert.deepEqual(sessionsOnDisk(), before);
});

test('bob naming alice\'s session, by any tool, in any way, gets the answer of a session that does not exist', async (t) => {
  const alice = await connectHttp(server.url, ALICE);
  const bob = await connectHttp(server.url, BOB);
  try {
    await alice.client.listTools();
    const opened = await alice.client.callTool({ name: 'open_binary', arguments: { path: program } });
    const sid = opened.structuredContent.session_id;
    const noted = await alice.client.callTool({ name: 'record_unknown', arguments: { question: 'what does sessioned_marker compute?' } });
    assert.equal(noted.isError, false, JSON.stringify(noted.content));
    const before = (await alice.client.callTool({ name: 'binary_session', arguments: {} })).structuredContent;
    const never = sid.replace(/_[0-9a-f]+$/, (tail) => `_${'0'.repeat(tail.length - 1)}`);
    const masked = (answer, id) => JSON.stringify(answer).replaceAll(id, 'ID');
    let attempts = 0;
    let won = 0;
    const judge = (what, theirs, none, ids = [sid, never]) => {
      attempts += 1;
      if (masked(theirs, ids[0]) !== masked(none, ids[1])) {
        won += 1;
        t.diagnostic(`${what}: ${JSON.stringify(theirs)} differs from ${JSON.stringify(none)}`);
      }
    };

    // Stateless requests with bob's token: every tool, naming her session by `session`.
    const { tools } = await bob.client.listTools();
    const stolen = join(root, 'stolen.jsonl');
    for (const { name } of tools) {
      const args = (id) => ({ session: id, path: stolen, format: 'jsonl', overwrite: true });
      const theirs = await stateless(name, args(sid), BOB);
      const none = await stateless(name, args(never), BOB);
      assert.deepEqual(none.error, {
        code: -32602,
        message: `no live binary session ${never} on this server (closed, or released after sitting idle): resume_session it`,
      }, name);
      judge(name, theirs, none);
    }
    // resume_session of it, stateless and in bob's MCP session.
    judge(
      'stateless resume_session',
      await stateless('resume_session', { session_id: sid }, BOB),
      await stateless('resume_session', { session_id: never }, BOB),
    );
    const resumeAs = (id) => bob.client.callTool({ name: 'resume_session', arguments: { session_id: id } });
    const none = await resumeAs(never);
    assert.deepEqual(none.content, [{ type: 'text', text: `no session ${never} under ${dirs.state}` }]);
    judge('resume_session', await resumeAs(sid), none);

    // Her MCP session, named by bob: a POST, a DELETE.
    const mcp = alice.transport.sessionId;
    const unknownMcp = mcp.replace(/[0-9a-f]/g, '0');
    const ask = async (method, id) => {
      const response = await fetch(server.url, {
        method,
        headers: {
          ...bearer(BOB),
          'mcp-session-id': id,
          'mcp-protocol-version': '2025-11-25',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'binary_session', arguments: {} } }) : undefined,
      });
      return { status: response.status, body: await response.text() };
    };
    for (const method of ['POST', 'DELETE']) {
      const refused = await ask(method, unknownMcp);
      assert.equal(refused.status, 404);
      judge(`${method} of her MCP session`, await ask(method, mcp), refused, [mcp, unknownMcp]);
    }

    const after = (await alice.client.callTool({ name: 'binary_session', arguments: {} })).structuredContent;
    assert.deepEqual(after, before);
    assert.deepEqual(sessionsOnDisk().includes(sid), true);
    assert.throws(() => readFileSync(stolen));
    t.diagnostic(`hijack attempts across principals: ${attempts}, won: ${won}`);
    assert.equal(won, 0);
    await alice.client.callTool({ name: 'close_binary', arguments: {} });
  } finally {
    await bob.close();
    await alice.close();
  }
});
