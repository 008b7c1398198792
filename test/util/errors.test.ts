import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { deserializeError, isErrorCode, serializeError } from '../../src/errors.js';
import { ErrorCode, MillraceError } from '../../src/index.js';

const apiDocs = new URL('../../../docs/api.md', import.meta.url);

/** The codes the first column of docs/api.md's error table names. */
function documentedCodes(): Set<string> {
  const text = readFileSync(apiDocs, 'utf8');
  const table = text.slice(text.indexOf('## Error codes'));
  const codes = new Set<string>();
  for (const line of table.split('\n')) {
    if (!line.startsWith('| `')) continue;
    for (const m of line.split('|')[1]!.matchAll(/`([A-Z_]+)`/g)) codes.add(m[1]!);
  }
  return codes;
}

describe('error codes', () => {
  it('are each documented in the error table of docs/api.md, and the table names no other', () => {
    assert.deepEqual([...documentedCodes()].sort(), Object.values(ErrorCode).sort());
  });

  it('tell the engine codes from any other', () => {
    assert.equal(isErrorCode('TASK_FAILED'), true);
    assert.equal(isErrorCode('ENOENT'), false);
    assert.equal(isErrorCode(undefined), false);
  });

  it('survive the trip from a worker: an engine error keeps its code, with where it happened', () => {
    const sent = serializeError(new MillraceError('CHECKPOINT_CORRUPT', 'checkpoint file f is corrupt'), {
      operator: { id: 2, kind: 'aggregate' },
      partition: 1,
    });
    const e = deserializeError(sent);
    assert.equal(e.code, 'CHECKPOINT_CORRUPT');
    assert.equal(e.message, 'checkpoint file f is corrupt (operator aggregate#2, partition 1)');
  });

  it('make an error without an engine code TASK_FAILED, its own code kept on the cause', () => {
    const system = Object.assign(new Error("ENOENT: no such file or directory, open 'x'"), {
      code: 'ENOENT',
    });
    const e = deserializeError(serializeError(system, { partition: 0 }));
    assert.equal(e.code, 'TASK_FAILED');
    assert.match(e.message, /^ENOENT: no such file or directory, open 'x' \(partition 0\)$/);
    assert.equal((e.cause as { code?: string }).code, 'ENOENT');
    const plain = deserializeError(serializeError(new TypeError('x is not a function')));
    assert.equal(plain.code, 'TASK_FAILED');
    assert.equal((plain.cause as Error).name, 'TypeError');
  });

  it('of user code stay on the cause of TASK_FAILED, even when they are engine codes', () => {
    const e = deserializeError(
      serializeError(new MillraceError('INVALID_ROW', 'event time column ts holds "soon"'), {
        userCode: true,
      }),
    );
    assert.equal(e.code, 'TASK_FAILED');
    assert.equal((e.cause as { code?: string }).code, 'INVALID_ROW');
  });
});
