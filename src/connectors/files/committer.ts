import { mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { SinkCommitter } from '../contract.js';
import type { SinkCommitMessage } from '../sink-runtime.js';
import type { FilesSinkSpec } from '../spec.js';
import { MANIFEST_DIR, type ManifestFile, readManifest, writeManifest } from './manifest.js';

/** What a files sink partition reports at an epoch's end: the file it wrote, if it had rows. */
export interface FilesCommitMessage extends SinkCommitMessage {
  readonly file: ManifestFile | null;
}

/**
 * The driver's half of the files sink: at each epoch's commit, writes `_manifest/<epoch>` listing
 * the files the partitions wrote. An epoch that already has a manifest (its commit was interrupted
 * after the manifest, and the epoch was redone: a micro-batch, or a real-time epoch of a checkpoint
 * whose offsets do not say what its commit holds; others are finished at the restart, not redone)
 * keeps it: the redo's files are removed, so the output holds the epoch once.
 */
export class FilesSinkCommitter implements SinkCommitter {
  private ready = false;

  constructor(
    private readonly spec: FilesSinkSpec,
    private readonly mode: 'append' | 'complete',
  ) {}

  async commit(epoch: number, messages: SinkCommitMessage[]): Promise<void> {
    const files = (messages as FilesCommitMessage[])
      .map((m) => m.file)
      .filter((f): f is ManifestFile => f !== null && f !== undefined)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (!this.ready) {
      await mkdir(join(this.spec.path, MANIFEST_DIR), { recursive: true });
      this.ready = true;
    }
    const existing = await readManifest(this.spec.path, epoch);
    if (existing !== undefined) {
      const kept = new Set(existing.files.map((f) => f.name));
      await Promise.all(
        files
          .filter((f) => !kept.has(f.name))
          .map((f) => unlink(join(this.spec.path, f.name)).catch(() => {})),
      );
      return;
    }
    await writeManifest(this.spec.path, { epoch, mode: this.mode, format: this.spec.format, files });
  }
}
