/**
 * Serves the Kafka-protocol test broker as a process of its own, for trying Millrace's Kafka
 * connectors (and `millrace bench ... --kafka`) without a Kafka installation:
 *
 *   node dist/test/kafka/broker/serve.js [--port 9092]
 *
 * It prints `BOOTSTRAP 127.0.0.1:<port>` once it listens, creates topics on request (CreateTopics,
 * or on first use), and stops on SIGINT or SIGTERM. It keeps everything in memory.
 */
import { parseArgs } from 'node:util';
import { TestBroker } from './index.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '9092' } } });
const broker = await TestBroker.start({ port: Number(values.port) });
process.stdout.write(`BOOTSTRAP ${broker.bootstrap}\n`);
const stop = () => {
  void broker.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
