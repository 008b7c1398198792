#!/usr/bin/env node
// Serves the project's Kafka-protocol test broker (test/kafka/broker/) as a process of its own, for
// trying the Kafka connectors and `millrace bench ... --kafka` without a Kafka installation.
// It keeps everything in memory, creates topics on request, and stops on SIGINT or SIGTERM.
// Usage: npm run build && node scripts/kafka-test-broker.mjs [--port 9092]
import { parseArgs } from 'node:util';
import { TestBroker } from '../dist/test/kafka/broker/index.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '9092' } } });
const broker = await TestBroker.start({ port: Number(values.port) });
console.log(`BOOTSTRAP ${broker.bootstrap}`);
const stop = () => {
  void broker.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
