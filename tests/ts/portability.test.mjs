// The tool catalog as MCP clients take it: input schemas in the portable subset (no $schema,
// $ref/$defs, type arrays, const, additionalProperties, unions or non-standard formats;
// descriptions as plain sentences listing allowed values), output schemas that strict 2020-12 Ajv
// and the SDK's own default validator compile without a warning, and tools/list within SPEC's budget (what models see ≤ 48 KB, output schemas ≤ 96 KB).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

import { cleanup, connectStdio, portabilityViolations, serverDirs, strictAjv, tempDir } from './lib/rea.mjs';

let root;
let listed;

before(async () => {
  root = tempDir();
  const { client, close } = await connectStdio(serverDirs(root));
  try {
    listed = await client.listTools();
  } finally {
    await close();
  }
});

after(() => cleanup(root));

test('tools/list with every tool, capture included, fits the budget of what models see', (t) => {
  assert.ok(listed.tools.some((tool) => tool.name === 'capture_process_scenario'));
  const size = (v) => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));
  const seen = listed.tools
    .map((tool) => size(tool.name) + size(tool.title) + size(tool.description) + size(tool.inputSchema))
    .reduce((a, b) => a + b, 0);
  const outputs = listed.tools.map((tool) => size(tool.outputSchema)).reduce((a, b) => a + b, 0);
  t.diagnostic(`tools/list: ${listed.tools.length} tools, seen by models ${seen} bytes, output schemas ${outputs}`);
  assert.ok(seen <= 48 * 1000, `models see ${seen} bytes`);
  assert.ok(outputs <= 96 * 1000, `output schemas are ${outputs} bytes`);
});

test('every input schema is in the portable subset', () => {
  const violations = listed.tools.flatMap((tool) => {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    return portabilityViolations(tool.inputSchema).map((v) => `${tool.name}: ${v}`);
  });
  assert.deepEqual(violations, []);
  for (const tool of listed.tools) {
    assert.ok(!/\n|\[`/.test(tool.description), `${tool.name}: ${tool.description}`);
  }
});

test('the portability check fails on each feature it names', () => {
  const found = portabilityViolations({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    additionalProperties: false,
    properties: {
      a: { type: ['string', 'null'], description: 'A.' },
      b: { $ref: '#/$defs/B', description: 'See [`B`].' },
      c: { type: 'integer', format: 'uint64', description: 'C.' },
      d: { type: 'string', oneOf: [{ const: 'x' }], description: 'D.' },
      e: { type: 'string', enum: ['p', 'q'], description: 'Only p.' },
    },
    $defs: { B: { type: 'string' } },
  });
  for (const expected of [
    'input: uses $schema',
    'input: uses additionalProperties',
    'input: uses $defs',
    'input.a: type ["string","null"] is not one type',
    'input.b: uses $ref',
    'input.b: description is not a plain sentence: "See [`B`]."',
    'input.c: non-standard format uint64',
    'input.d: uses oneOf',
    'input.e: description does not list "q"',
  ]) {
    assert.ok(found.includes(expected), `missing ${expected} in ${JSON.stringify(found, null, 1)}`);
  }
});

test('every schema compiles in strict 2020-12 Ajv and in the SDK default validator, silently', () => {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    const ajv = strictAjv();
    const sdkDefault = new AjvJsonSchemaValidator();
    for (const tool of listed.tools) {
      assert.ok(tool.outputSchema, `${tool.name} has no outputSchema`);
      assert.equal(tool.outputSchema.$schema, undefined, tool.name);
      assert.doesNotThrow(() => ajv.compile(tool.inputSchema), tool.name);
      assert.doesNotThrow(() => ajv.compile(tool.outputSchema), tool.name);
      assert.doesNotThrow(() => sdkDefault.getValidator(tool.outputSchema), tool.name);
    }
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(warnings, []);
});
