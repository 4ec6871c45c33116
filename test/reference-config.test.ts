import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultRestartOutage, servedConfig, servedConfigSchema } from '../src/reference/config.ts';
import { startReferenceServer } from '../src/reference/server.ts';
import { referenceConfigFor } from '../src/targets/reference-config.ts';
import { loadScenarioFile } from '../src/workload/load.ts';
import { inProcess, serve } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';

const ROOT = join(import.meta.dirname, '..');

describe('referenceConfigFor: one scenario → reference config mapping', () => {
  it('maps a chaos scenario and a turnover scenario; the served control plane reads back the same settings', () => {
    for (const file of ['scenarios/chaos-codex-c4.yaml', 'scenarios/turnover.yaml']) {
      const scenario = loadScenarioFile(join(ROOT, file));
      const config = referenceConfigFor(scenario);
      // `ao-gh: auto` is resolved to this machine's gh for the ao-0.2 strategy only; elsewhere it means nothing.
      const { aoGh: _resolvedForAo02, ...polling } = scenario.polling;
      expect(config.polling).toEqual(polling);
      expect(config.cacheSizes).toEqual(scenario.caches);
      expect(config.spawnTime).toEqual(scenario.sessions.spawnTime);
      expect(config.runs?.providers).toEqual(scenario.providers);
      expect(config.runs?.controlPlane.recoveryConcurrency).toBe(scenario.controlPlane.recoveryConcurrency);
      expect(config.actors === undefined).toBe(scenario.turnover === undefined);
      // What an http target sends is what a served control plane accepts and uses.
      const wire = JSON.parse(JSON.stringify(config));
      expect(servedConfigSchema.safeParse(wire).success).toBe(true);
      expect(servedConfig(servedConfigSchema.parse(wire))).toEqual({
        ...config,
        restartOutage: defaultRestartOutage,
      });
    }
  });
});

describe('the served control plane validates a run’s config', () => {
  it('POST /v1/run with a malformed config is a 400 naming the field; a good one starts the run', async () => {
    const dir = scratchDir('fleetbench-reference-config-');
    const { emulator } = inProcess();
    const github = await serve(emulator);
    const server = await startReferenceServer({ stateDir: dir, emit: () => undefined });
    const post = (config: unknown) =>
      fetch(`http://127.0.0.1:${server.port}/v1/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          protocol: 'fleetbench-target/1',
          runId: 'r1',
          epochMs: Date.now(),
          timeScale: 1,
          seed: 1,
          scenario: 'x',
          github: { url: github.url, token: emulator.defaultToken },
          config,
        }),
      });
    try {
      const bad = await post({ polling: { intervalMs: 'soon' } });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
        /^config\.polling\.intervalMs: /,
      );
      const badKind = await post({ spawnTime: { kind: 'gaussian', mean: 3 } });
      expect(badKind.status).toBe(400);
      expect(((await badKind.json()) as { error: { message: string } }).error.message).toMatch(
        /^config\.spawnTime/,
      );
      const good = await post({ polling: { intervalMs: 5_000 } });
      expect(good.status, await good.clone().text()).toBe(200);
    } finally {
      await server.close();
    }
  });
});
