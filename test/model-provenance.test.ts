/**
 * A learned model names each trace it was learned from by the sha256 of the file's bytes (the
 * compressed bytes for gzip), hashed in the pass that reads the trace (docs/model.md): the same
 * digest a second read of the file gives, for a plain trace and a gzip one.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { learnModel } from '../src/learn/learn.ts';
import { scratchDir } from './helpers/tmp.ts';

const GZ = new URL('./fixtures/ao/S4-T1-5.trace.jsonl.gz', import.meta.url).pathname;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('model learn provenance', () => {
  it("names each trace by its file's sha256, plain and gzip", async () => {
    const plain = join(scratchDir('fleetbench-provenance-'), 'trace.jsonl');
    writeFileSync(plain, gunzipSync(readFileSync(GZ)));
    const model = await learnModel([GZ, plain]);
    expect(model.provenance.traces.map((t) => t.sha256)).toEqual([
      sha256(readFileSync(GZ)),
      sha256(readFileSync(plain)),
    ]);
  });
});
