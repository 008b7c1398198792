import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sources } from '../../src/connectors/index.js';
import { platformaticUnsupported } from '../../src/connectors/kafka/platformatic-membership.js';
import { platformaticSettings } from '../../src/connectors/kafka/platformatic-reader.js';
import { checkLibrary } from '../../src/connectors/kafka/readers.js';

const base = { brokers: '127.0.0.1:9092', topic: 'payments' };
const unsupported = platformaticUnsupported();

describe("sources.kafka's library option", () => {
  it('reads with kafkajs when no library is named, and keeps the spec as it was', () => {
    const spec = sources.kafka(base) as unknown as Record<string, unknown>;
    assert.equal('library' in spec, false);
    assert.equal(checkLibrary('sources.kafka', undefined), 'kafkajs');
  });

  it('refuses a library it does not know with INVALID_ARGUMENT, naming the ones it does', () => {
    assert.throws(() => sources.kafka({ ...base, library: 'node-rdkafka' as never }), {
      code: 'INVALID_ARGUMENT',
      message: /library must be 'kafkajs' or '@platformatic\/kafka', got "node-rdkafka"/,
    });
  });

  it('refuses @platformatic/kafka on a Node line older than 22.22, and names the Node it needs', () => {
    assert.match(
      platformaticUnsupported('20.19.5') ?? '',
      /needs Node 22\.22 or later, and this is Node 20\.19\.5/,
    );
    assert.equal(platformaticUnsupported('22.22.0'), null);
    assert.equal(platformaticUnsupported('24.1.0'), null);
    if (unsupported === null) {
      const spec = sources.kafka({ ...base, library: '@platformatic/kafka' }) as unknown as Record<
        string,
        unknown
      >;
      assert.equal(spec.library, '@platformatic/kafka');
    } else {
      assert.throws(() => sources.kafka({ ...base, library: '@platformatic/kafka' }), {
        code: 'INVALID_ARGUMENT',
        message: /needs Node 22\.22 or later.*use library 'kafkajs' here/,
      });
    }
  });

  it("carries kafkajs' connection settings over to @platformatic/kafka", () => {
    const settings = platformaticSettings('sources.kafka', {
      clientId: 'fraud',
      connectionTimeout: 2500,
      requestTimeout: 9000,
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
    });
    assert.deepEqual(settings, {
      clientId: 'fraud',
      connectTimeout: 2500,
      requestTimeout: 9000,
      tls: {},
      sasl: { mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' },
    });
    assert.deepEqual(platformaticSettings('sources.kafka', undefined), { clientId: 'millrace' });
  });

  it('refuses the client settings @platformatic/kafka cannot honour with INVALID_ARGUMENT', () => {
    assert.throws(() => platformaticSettings('sources.kafka', { socketFactory: (() => {}) as never }), {
      code: 'INVALID_ARGUMENT',
      message: /client\.socketFactory is a kafkajs setting/,
    });
    assert.throws(
      () =>
        platformaticSettings('sources.kafka', {
          sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: 't' }) } as never,
        }),
      { code: 'INVALID_ARGUMENT', message: /client\.sasl\.mechanism "oauthbearer" is not supported/ },
    );
  });
});
