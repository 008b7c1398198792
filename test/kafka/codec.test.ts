import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeValue } from '../../src/connectors/kafka/codec.js';

describe('Kafka encodings', () => {
  it("write bytes as they are, and refuse any other value under 'buffer' with RECORD_NOT_ENCODABLE", () => {
    assert.deepEqual(encodeValue(Uint8Array.of(1, 2), 'buffer'), Buffer.from([1, 2]));
    assert.equal(encodeValue(null, 'buffer'), null);
    assert.throws(() => encodeValue('text', 'buffer'), {
      name: 'MillraceError',
      code: 'RECORD_NOT_ENCODABLE',
      message: "a 'buffer' encoding needs a Buffer or Uint8Array, got string",
    });
  });
});
