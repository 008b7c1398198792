import type { CliIO } from './io.js';

/**
 * One line at the bottom of a terminal, redrawn in place, with ordinary lines printed above it.
 * On a pipe it draws nothing (`enabled` false) and ordinary lines are printed as they come.
 */
export class StatusLine {
  private text = '';

  constructor(
    private readonly io: CliIO,
    readonly enabled: boolean,
  ) {}

  /** Replaces the status text. */
  update(text: string): void {
    if (!this.enabled) return;
    this.text = text;
    this.io.out(`\r\x1b[2K${text}`);
  }

  /** Prints a line above the status line. */
  print(line: string, stream: 'stdout' | 'stderr' = 'stdout'): void {
    if (this.enabled) this.io.out('\r\x1b[2K');
    if (stream === 'stderr') this.io.err(`${line}\n`);
    else this.io.out(`${line}\n`);
    if (this.enabled && this.text) this.io.out(this.text);
  }

  /** Leaves the status line on screen and moves below it. */
  end(): void {
    if (this.enabled && this.text) this.io.out('\n');
    this.text = '';
  }
}
