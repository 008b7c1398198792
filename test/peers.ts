/**
 * Programs from outside npm that some tests run against, each looked for once per process. A test
 * that needs one takes `{ skip: missing(peer) }`: where the program is missing, the test is skipped
 * with one line that names the Debian package to install (scripts/test.mjs lists the skips at the
 * end of the run). With `MILLRACE_TEST_REQUIRE_PEERS=1` (set by .ci/run), a missing program is a
 * failure instead, naming the package, so CI never passes by skipping.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { kcatAvailable } from './kafka/kcat.js';
import { mockClusterAvailable } from './kafka/mock-cluster.js';
import { netnsUnavailable } from './kafka/netns.js';

export interface Peer {
  /** What the tests run: a command, a header, a capability. */
  readonly name: string;
  /** The Debian packages that provide it. */
  readonly packages: readonly string[];
  /** Why it cannot be used here, or false when it can. */
  readonly probe: () => string | false;
}

/** Whether `command` is an executable file on the PATH. */
export function onPath(command: string): boolean {
  if (command.includes('/')) return existsSync(command);
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && existsSync(join(dir, command)));
}

const command =
  (name: string, what = `${name} is not on the PATH`) =>
  (): string | false =>
    onPath(name) ? false : what;

/** The Prometheus server the metrics tests start and scrape with. */
export const PROMETHEUS: Peer = {
  name: 'prometheus',
  packages: ['prometheus'],
  probe: command('prometheus'),
};

/** Prometheus' own checker of rule and metric files. */
export const PROMTOOL: Peer = { name: 'promtool', packages: ['prometheus'], probe: command('promtool') };

/** The headless browser the web console tests drive (through playwright-core). */
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM: Peer = {
  name: 'chromium',
  packages: ['chromium'],
  probe: () => (existsSync(CHROMIUM_PATH) ? false : `${CHROMIUM_PATH} is not installed`),
};

/** An independent Kafka client, to cross-check what the engine wrote and read. */
export const KCAT: Peer = {
  name: 'kcat',
  packages: ['kcat'],
  probe: () => (kcatAvailable() ? false : 'kcat does not run here'),
};

/** librdkafka's mock cluster: its launcher built, or a C compiler and librdkafka's headers to build it. */
export const LIBRDKAFKA_MOCK: Peer = {
  name: "librdkafka's mock cluster",
  packages: ['gcc', 'librdkafka-dev'],
  probe: () => (mockClusterAvailable() ? false : 'no C compiler with librdkafka headers'),
};

/** Linux network namespaces (`ip netns`, as root), for hosts that reach each other only by address. */
export const NETNS: Peer = { name: 'ip netns', packages: ['iproute2'], probe: netnsUnavailable };

/** A C++ compiler, for the native ring baseline (native-bench/). */
export const CXX: Peer = {
  name: 'a C++ compiler',
  packages: ['g++'],
  probe: command(process.env.CXX || 'g++', `${process.env.CXX || 'g++'} is not on the PATH`),
};

const found = new Map<Peer, string | false>();

/** Whether peers are required (CI): a missing one fails instead of skipping. */
export function peersRequired(): boolean {
  return process.env.MILLRACE_TEST_REQUIRE_PEERS === '1';
}

/**
 * Why a test that needs `peers` cannot run here — a skip reason naming the packages to install —
 * or false when every one is present. Where peers are required, a missing one throws instead.
 */
export function missing(...peers: Peer[]): string | false {
  for (const peer of peers) {
    let why = found.get(peer);
    if (why === undefined) {
      why = peer.probe();
      found.set(peer, why);
    }
    if (why === false) continue;
    const line = `needs ${peer.name}: ${why} (apt-get install ${peer.packages.join(' ')})`;
    if (peersRequired()) throw new Error(`MILLRACE_TEST_REQUIRE_PEERS=1, and this test ${line}`);
    return line;
  }
  return false;
}
