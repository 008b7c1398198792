/**
 * Separate hosts for a test: Linux network namespaces (`ip netns`), each with only its loopback
 * and one veth pair to the test's own namespace, so a process started in one reaches the others
 * through an address of the test's namespace, as a process on another machine would.
 */
import { execFileSync } from 'node:child_process';

/** Why namespaces cannot be made here, or false when they can. */
export function netnsUnavailable(): string | false {
  if (process.platform !== 'linux') return 'network namespaces are Linux’s';
  if (process.getuid?.() !== 0) return 'making network namespaces needs root';
  const probe = `millrace-probe-${process.pid}`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return false;
  } catch (e) {
    return `ip netns does not work here: ${(e as Error).message.split('\n')[0]}`;
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
}

/** Namespaces made by {@link makeHosts}. */
export interface Hosts {
  /** The address of the test's namespace that every host reaches (a service there listens on it). */
  readonly address: string;
  /** The command prefix that runs a program on host `k` (1, 2, …). */
  command(k: number): string[];
  /** Host k's own address (its end of its link). */
  addressOf(k: number): string;
  /** Deletes the namespaces and their links. */
  close(): void;
}

/**
 * Makes `n` namespaces. Host k is joined to the test's namespace by a veth pair on subnet
 * 10.X.k.0/24 (X one that no address here uses yet): `.1` on the test's side,
 * `.2` in the namespace, whose default route goes through `.1`. Every host thus reaches
 * `10.X.1.1`, the test's side of the first link.
 */
export function makeHosts(n: number): Hosts {
  // A second octet no address of this machine uses yet.
  const used = execFileSync('ip', ['-o', '-4', 'addr'], { encoding: 'utf8' });
  const free = (c: number) => !used.includes(` 10.${c}.`);
  const x = Array.from({ length: 150 }, (_, i) => 100 + ((process.pid + i) % 150)).find(free);
  if (x === undefined) throw new Error('no free 10.X.0.0/16 subnet for the test hosts');
  const tag = process.pid % 100_000;
  const names: string[] = [];
  const links: string[] = [];
  const close = () => {
    for (const name of names) {
      try {
        ip('netns', 'del', name);
      } catch {}
    }
    for (const link of links) {
      try {
        ip('link', 'del', link);
      } catch {}
    }
  };
  try {
    for (let k = 1; k <= n; k++) {
      const name = `millrace-${process.pid}-${k}`;
      const outside = `mr${tag}h${k}`;
      const inside = `mr${tag}n${k}`;
      ip('netns', 'add', name);
      names.push(name);
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside);
      links.push(outside);
      ip('link', 'set', inside, 'netns', name);
      ip('addr', 'add', `10.${x}.${k}.1/24`, 'dev', outside);
      ip('link', 'set', outside, 'up');
      const inNs = (...args: string[]) => ip('netns', 'exec', name, 'ip', ...args);
      inNs('addr', 'add', `10.${x}.${k}.2/24`, 'dev', inside);
      inNs('link', 'set', inside, 'up');
      inNs('link', 'set', 'lo', 'up');
      inNs('route', 'add', 'default', 'via', `10.${x}.${k}.1`);
    }
  } catch (e) {
    close();
    throw e;
  }
  return {
    address: `10.${x}.1.1`,
    command: (k) => ['ip', 'netns', 'exec', names[k - 1]!],
    addressOf: (k) => `10.${x}.${k}.2`,
    close,
  };
}
