/**
 * fleetbench's share of a run's CPU as a run reports it: the `harness.cpu` event read into
 * analysis.harness, the warning over the bound, the Speed table's last line, and absurd figures
 * in a hand-made trace kept within sense.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/index.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const lines = readFileSync(new URL('../examples/sample-trace.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n');

/** The sample trace with one harness.cpu event before its footer (its counts told). */
function withHarnessEvent(name: string, data: Record<string, unknown>): string {
  const footer = JSON.parse(lines.at(-1)!) as { counts: { event: number } };
  footer.counts.event++;
  const event = { kind: 'event', name: 'harness.cpu', t: 1000, labels: {}, data };
  const path = join(dir, name);
  writeFileSync(
    path,
    `${[...lines.slice(0, -1), JSON.stringify(event), JSON.stringify(footer)].join('\n')}\n`,
  );
  return path;
}

const figures = (harness: number, controlPlane: number, agents: number) => ({
  windowMs: 300_000,
  samples: 300,
  intervalMs: 1000,
  cpuMs: { harness, controlPlane, agents, other: 0 },
  harnessSharePct: (100 * harness) / (harness + controlPlane + agents),
  boundPct: 5,
});

describe('the harness share', () => {
  it('is read into analysis.harness, within its bound without a warning', async () => {
    const { analysis } = await analyzeFile(withHarnessEvent('ok.jsonl', figures(2_000, 60_000, 18_000)));
    expect(analysis.harness).toEqual({
      cpuS: { harness: 2, controlPlane: 60, agents: 18, other: 0 },
      sharePct: 2.5,
      boundPct: 5,
      over: false,
      windowS: 300,
      samples: 300,
    });
    expect(analysis.warnings.join('\n')).not.toMatch(/observer/);
  });

  it('over its bound, warns that the observer disturbed the observed, and the terminal shows it', async () => {
    const path = withHarnessEvent('over.jsonl', figures(8_000, 60_000, 12_000));
    const { analysis } = await analyzeFile(path);
    expect(analysis.harness?.over).toBe(true);
    expect(analysis.warnings.join('\n')).toMatch(/observer disturbed the observed: .* 10 % of the run's CPU/);
    const out = await cli(['analyze', path]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      /harness share.*fleetbench 8 CPU-s of 80 \(10 %, bound 5 %\); control plane 60, agents 12/,
    );
    expect(out.stdout).toMatch(/observer disturbed the observed/);
    // 8 CPU-s over 300 s: a small load, beside a control plane that used little more.
    expect(analysis.warnings.join('\n')).toMatch(
      /\(8 CPU-s, 0\.03 of a core over the run's 300 s\), over the 5 % bound; a share this large at so small a load means the control plane and agents used little CPU/,
    );
  });

  it('over its bound at a real load (0.4 of a core), says the harness was loading the machine', async () => {
    const { analysis } = await analyzeFile(
      withHarnessEvent('loaded.jsonl', figures(120_000, 600_000, 300_000)),
    );
    expect(analysis.warnings.join('\n')).toMatch(
      /\(120 CPU-s, 0\.4 of a core over the run's 300 s\), over the 5 % bound; the control plane and agents ran on a machine the harness was loading/,
    );
  });

  it('keeps absurd figures of a hand-made trace within sense', async () => {
    const { analysis } = await analyzeFile(
      withHarnessEvent('absurd.jsonl', {
        windowMs: -5,
        samples: 1e13 + 0.5,
        cpuMs: { harness: 1e300, controlPlane: -1, agents: 'many' },
        harnessSharePct: 1e13,
        boundPct: -3,
      }),
    );
    expect(analysis.harness).toMatchObject({
      cpuS: { harness: 1e9, controlPlane: 0, agents: 0, other: 0 },
      sharePct: 100,
      boundPct: 0,
      windowS: 0,
      samples: 0,
    });
  });

  it('is absent from a trace without the event', async () => {
    const path = join(dir, 'plain.jsonl');
    writeFileSync(path, `${lines.join('\n')}\n`);
    expect((await analyzeFile(path)).analysis.harness).toBeUndefined();
  });
});
