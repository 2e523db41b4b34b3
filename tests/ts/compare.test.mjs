// compare_procedures, call_paths, and compare_artifacts/verify_reconstruction at function level
// through the official TypeScript SDK, every result validated against its outputSchema (issue 18;
// issue 15, item 2: stripped builds and changed bodies compared "equal"). The programs are
// procdiff's store.c in three versions (-DCHANGED changes checksum's body, -DADDED adds
// export_csv), built here with cc -O2 and stripped, and ops.c (-DV2: op_mul gains + 0x1337,
// run_ops a call to the new op_neg) for the instruction-level diff of one pair; the truth is the
// source and nm on the unstripped twin.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { arch } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { cleanup, connectStdio, nmSymbol, REPO, serverDirs, tempDir } from './lib/rea.mjs';
import { Session } from './lib/exercise.mjs';

const STORE = join(REPO, 'src', 'analyzers', 'procdiff', 'testdata', 'store.c');
const OPS = join(REPO, 'src', 'analyzers', 'procdiff', 'testdata', 'ops.c');

let root;
let dirs;
let builds;

/** An unstripped build of `source` with `flags`, and its stripped copy. */
function build(name, source, ...flags) {
  const plain = join(root, name);
  const stripped = join(root, `${name}-stripped`);
  execFileSync('cc', ['-O2', ...flags, '-o', plain, source]);
  execFileSync('strip', ['-o', stripped, plain]);
  return { plain, stripped };
}

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  builds = {
    v1: build('v1', STORE),
    v2: build('v2', STORE, '-DCHANGED'),
    v3: build('v3', STORE, '-DADDED'),
    ops1: build('ops1', OPS),
    ops2: build('ops2', OPS, '-DV2'),
  };
});

after(() => cleanup(root));

async function inspected(session, path) {
  const opened = await session.tool('open_binary', { path });
  const inventory = await session.tool('inspect_artifact', {});
  return [inventory.manifest.id, opened.documents[0].procedures];
}

const totals = (s) => [s.status, s.added_total, s.removed_total, s.changed_total, s.unchanged_total];

test('stripped versions compare function by function', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    const [m1, procs] = await inspected(session, builds.v1.stripped);
    const [m2] = await inspected(session, builds.v2.stripped);
    const [m3] = await inspected(session, builds.v3.stripped);

    const added = await session.tool('compare_procedures', { left_manifest_id: m1, right_manifest_id: m3, status: 'added' });
    assert.deepEqual(totals(added.summary), ['different', 1, 0, 0, procs]);
    assert.deepEqual(
      added.entries.map((e) => [e.status, e.right.address, e.matched_by]),
      [['added', nmSymbol(builds.v3.plain, 'export_csv').address, null]],
    );

    const changed = await session.tool('compare_procedures', { left_manifest_id: m1, right_manifest_id: m2, status: 'changed' });
    assert.deepEqual(totals(changed.summary), ['different', 0, 0, 1, procs - 1]);
    const [entry] = changed.entries;
    assert.deepEqual(
      [entry.left.address, entry.right.address],
      [nmSymbol(builds.v1.plain, 'checksum').address, nmSymbol(builds.v2.plain, 'checksum').address],
    );
    assert.ok(['shape', 'similarity'].includes(entry.matched_by), JSON.stringify(entry));
    assert.equal(entry.changes.constants.added_total, entry.changes.constants.removed_total);

    const cmp3 = await session.tool('compare_artifacts', { left_manifest_id: m1, right_manifest_id: m3 });
    assert.deepEqual(totals(cmp3.procedures), ['different', 1, 0, 0, procs]);
    const cmp2 = await session.tool('compare_artifacts', { left_manifest_id: m1, right_manifest_id: m2 });
    assert.deepEqual(totals(cmp2.procedures), ['different', 0, 0, 1, procs - 1]);

    const verdict = await session.tool('verify_reconstruction', {
      spec: {
        claims: [
          { claim: 'no_change', comparison_evidence_id: cmp2.evidence.id, dimension: 'procedures' },
          { claim: 'procedures_added', comparison_evidence_id: cmp3.evidence.id, count: 2 },
          { claim: 'procedure_changed', comparison_evidence_id: changed.evidence.id, procedure: entry.left.address },
          { claim: 'procedure_unchanged', comparison_evidence_id: changed.evidence.id, procedure: entry.right.address },
        ],
      },
    });
    assert.deepEqual(verdict.claims.map((c) => c.status), ['fail', 'fail', 'pass', 'fail']);
    assert.equal(verdict.claims[1].reason, 'the comparison counted 1 procedure(s) added, not 2');

    // call_paths in the unstripped v1: store_digest calls checksum (noipa, so never inlined).
    await session.tool('open_binary', { path: builds.v1.plain });
    const paths = await session.tool('call_paths', { from: 'store_digest', to: 'checksum', max_depth: 3 });
    assert.deepEqual([paths.shortest, paths.total, paths.truncated, paths.deadline_hit], [1, 1, false, false]);
    assert.deepEqual(
      paths.paths[0].steps.map((s) => [s.node.name, s.node.address, s.via]),
      [
        ['store_digest', nmSymbol(builds.v1.plain, 'store_digest').address, null],
        ['checksum', nmSymbol(builds.v1.plain, 'checksum').address, 'call'],
      ],
    );
  } finally {
    await close();
  }
});

test('the detail of one pair is its instruction-level diff', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    const [m1] = await inspected(session, builds.ops1.plain);
    const [m2] = await inspected(session, builds.ops2.plain);

    const page = await session.tool('compare_procedures', { left_manifest_id: m1, right_manifest_id: m2, detail: 'op_mul' });
    assert.equal(page.total, 1);
    assert.deepEqual(
      [page.entries[0].status, page.entries[0].left.address, page.entries[0].right.address],
      ['changed', nmSymbol(builds.ops1.plain, 'op_mul').address, nmSymbol(builds.ops2.plain, 'op_mul').address],
    );
    const { detail } = page;
    assert.deepEqual([detail.removed, detail.added, detail.truncated, detail.lines_total], [0, 1, false, detail.lines.length]);
    const changed = detail.lines.filter((l) => l.kind !== 'kept');
    assert.equal(changed.length, 1, JSON.stringify(detail));
    assert.equal(changed[0].kind, 'added');
    if (arch() === 'x64') assert.equal(changed[0].text, 'add rax, 0x1337');

    const refused = await client.callTool({
      name: 'compare_procedures',
      arguments: { left_manifest_id: m1, right_manifest_id: m2, detail: 'op_neg' },
    });
    assert.equal(refused.isError, true);
    assert.equal(
      refused.content[0].text,
      `detail: op_neg (${nmSymbol(builds.ops2.plain, 'op_neg').address}) is added: only the right side has it, so there is no pair to diff`,
    );
  } finally {
    await close();
  }
});
