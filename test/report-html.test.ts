import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import { judge, resolveBudgets } from '../src/judge/index.ts';
import { RUN_SUMMARY_VERSION, type RunSummary } from '../src/results/run-summary.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { CHROMIUM, launchChromium } from './helpers/browser.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-report-');
const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts');

interface Opened {
  page: Page;
  errors: string[];
  requests: string[];
}

/**
 * Opens the report as its own document with every request routed: anything that is not data:
 * or about: is recorded and refused, so a single network request fails the test.
 */
async function open(context: BrowserContext, html: string): Promise<Opened> {
  const page = await context.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => {
    if (!/^(data|about):/.test(r.url())) requests.push(r.url());
  });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (/^(data|about):/.test(url)) return route.continue();
    requests.push(url);
    return route.abort();
  });
  await page.setContent(html, { waitUntil: 'load' });
  // Browser-side code as text: this file is type-checked without the DOM library.
  await page.waitForFunction('window.fleetbenchReady === true');
  // Charts draw in microtasks after the page script: one more frame and they are there.
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => resolve(null)))');
  return { page, errors, requests };
}

interface ChartPixels {
  id: string;
  width: number;
  inked: number;
  plotted: number;
}

/**
 * Per chart: its id, how many pixels are painted, and how many of those are coloured (not the
 * grey of axes and grid): a series was drawn.
 */
const DRAWN_PIXELS = `[...document.querySelectorAll('[data-chart]')].map((holder) => {
  const canvas = holder.querySelector('canvas');
  if (!canvas) return { id: holder.dataset.chart, width: 0, inked: 0, plotted: 0 };
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  let inked = 0;
  let plotted = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] === 0) continue;
    inked++;
    const r = data[i], g = data[i + 1], b = data[i + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) > 40) plotted++;
  }
  return { id: holder.dataset.chart, width: canvas.width, inked, plotted };
})`;

function drawnPixels(page: Page): Promise<ChartPixels[]> {
  return page.evaluate(DRAWN_PIXELS) as Promise<ChartPixels[]>;
}

interface ChartLayout {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: string[];
}

/**
 * The page's layout rules, on what the page says it drew: every chart has a title and both axis
 * labels, at most 6 series (more become small multiples), human series names (no field paths
 * such as `window.rows.step.latency`), no two series with one name, and a painted canvas.
 */
async function expectReadableLayout(page: Page, drawn?: ChartPixels[]): Promise<ChartLayout[]> {
  const layout = (await page.evaluate('window.fleetbenchReport.layout')) as ChartLayout[];
  // Each canvas is read back once per test (Chromium warns on repeated readbacks).
  const pixels = new Map((drawn ?? (await drawnPixels(page))).map((c) => [c.id, c]));
  expect(layout.length).toBeGreaterThan(0);
  for (const chart of layout) {
    expect(chart.title, chart.id).not.toBe('');
    expect(chart.xLabel, chart.id).not.toBe('');
    expect(chart.yLabel, chart.id).not.toBe('');
    expect(chart.series.length, `${chart.id}: ${chart.series.join(' | ')}`).toBeLessThanOrEqual(6);
    expect(new Set(chart.series).size, chart.id).toBe(chart.series.length);
    for (const name of chart.series)
      expect(name, chart.id).not.toMatch(/\b(window|rows|operations)\.|\.latency\b|\{\w+=/);
    expect(pixels.get(chart.id)?.plotted ?? 0, `${chart.id}: empty canvas`).toBeGreaterThan(50);
  }
  // A latency axis never mixes units ("milliseconds" beside "1 min 40 s").
  for (const chart of layout.filter((c) => /log scale/.test(c.yLabel)))
    expect(chart.yLabel).toMatch(/^(milliseconds|seconds|minutes) \(log scale\)$/);
  return layout;
}

const chromium = systemTool(CHROMIUM, ['--version'], 'chromium');

describe.skipIf(chromium.skip)(
  'fleetbench report: one self-contained HTML file, in real Chromium',
  { timeout: 240_000 },
  () => {
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    const matrixDir = join(dir, 'matrix');

    beforeAll(async () => {
      chromium.require();
      mkdirSync(ARTIFACTS, { recursive: true });
      const m = await cli([
        'matrix',
        '--cells',
        'S2-T1-1,S2-T1-5,S2-T2-5,S4-T1-5',
        '--jobs',
        '1',
        '--out',
        matrixDir,
      ]);
      expect(m.code, m.stderr).toBe(0);
      browser = await launchChromium();
    }, 240_000);
    afterAll(async () => {
      await browser?.close();
    });

    it('a matrix report: no console errors, no requests, every chart drawn, verdicts in words', async () => {
      const r = await cli(['report', matrixDir]);
      expect(r.code, r.stderr).toBe(0);
      const file = join(matrixDir, 'report.html');
      expect(r.stdout).toContain(`fleetbench report: ${file}`);
      const html = readFileSync(file, 'utf8');
      expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|@import|url\(http/i);

      const { page, errors, requests } = await open(browser.context, html);
      await page.screenshot({ path: join(ARTIFACTS, 'report-matrix.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);

      const charts = await drawnPixels(page);
      const ids = charts.map((c) => c.id);
      // Scale curves only for S2 (run at 1 and 5 sessions; S4 ran at one scale: no curve),
      // then the first cell's charts.
      expect(ids).not.toContain('scale-S4');
      expect(ids).toEqual(
        expect.arrayContaining([
          'scale-S2',
          'calls',
          'burst',
          'per-session',
          'burn',
          'latency-api',
          'latency-spans',
          'gauge-0',
        ]),
      );
      for (const c of charts) {
        expect(c.width, c.id).toBeGreaterThan(300);
        expect(c.inked, c.id).toBeGreaterThan(2000);
        expect(c.plotted, `${c.id}: no coloured series pixels`).toBeGreaterThan(50);
      }
      // Legends show values in a static view (no cursor on any chart): not dashes.
      const legends = (await page.evaluate(
        `[...document.querySelectorAll('[data-chart]')].map((holder) => ({ id: holder.dataset.chart, values: [...holder.querySelectorAll('.u-legend .u-series:not(:first-child) .u-value')].map((v) => v.textContent.trim()) }))`,
      )) as Array<{ id: string; values: string[] }>;
      expect(legends.length).toBe(charts.length);
      for (const legend of legends)
        expect(
          legend.values.filter((v) => !['–', '--', ''].includes(v)),
          `${legend.id}: ${legend.values.join(' | ')}`,
        ).not.toEqual([]);
      const text = (await page.evaluate('document.body.innerText')) as string;
      expect(text).toContain('fleetbench matrix: 4 cells');
      expect(text).toContain('All 4 runs pass every Track B rule.');
      await expectReadableLayout(page, charts);
      expect(text).toContain('Budget verdicts per cell');
      expect(text).toContain('Scale curves per scenario');
      expect(text).toContain('Pruning');
      expect(text).toContain('No turnover in this run');
      expect(text).toContain('How to read this report');

      // Another cell and another scale metric redraw without errors.
      await page.selectOption('#unit-select', 'S4-T1-5');
      await page.selectOption('#scale-metric', 'peak');
      const again = await drawnPixels(page);
      expect(again.length).toBe(charts.length);
      for (const c of again) expect(c.plotted, c.id).toBeGreaterThan(50);
      expect((await page.evaluate("document.getElementById('unit-detail').innerText")) as string).toContain(
        'S4-T1-5: Review backlog burst, concentrated, 5 sessions',
      );
      await page.screenshot({ path: join(ARTIFACTS, 'report-matrix-s4.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      await page.close();
    });

    it('a single-run report explains the run and its verdict', async () => {
      const runDir = join(matrixDir, 'cells', 'S2-T1-5');
      const out = join(dir, 'run.html');
      const r = await cli(['report', runDir, '-o', out]);
      expect(r.code, r.stderr).toBe(0);
      const { page, errors, requests } = await open(browser.context, readFileSync(out, 'utf8'));
      await page.screenshot({ path: join(ARTIFACTS, 'report-run.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const charts = await drawnPixels(page);
      expect(charts.map((c) => c.id)).toEqual(
        expect.arrayContaining(['calls', 'burst', 'per-session', 'burn', 'latency-api']),
      );
      for (const c of charts) expect(c.plotted, c.id).toBeGreaterThan(50);
      const text = (await page.evaluate('document.body.innerText')) as string;
      // A cost run: its charts as before, no runs-and-recoveries pictures.
      expect(await page.evaluate('window.fleetbenchReport.pictures')).toEqual([]);
      expect(text).not.toContain('Runs and recoveries');
      expect(text).toMatch(/S2-T1-5 passes all 7 Track B rules/);
      expect(text).toContain('What this tells us: The polling floor');
      expect(text).toContain(
        'This run had 5 sessions: the two headroom rows project its per-session cost to 50 sessions',
      );
      await expectReadableLayout(page, charts);
      await page.close();
    });

    it('a chaos wave: small multiples of percentile spectra, restarts on the timelines, terminal verdict words', async () => {
      const runDir = join(dir, 'chaos');
      const run = await cli(['run', 'chaos-codex-c4', '--out', runDir, '--quiet']);
      expect(run.code, run.stderr).toBe(0);
      const { page, errors, requests } = await open(
        browser.context,
        readFileSync(join(runDir, 'report.html'), 'utf8'),
      );
      await page.screenshot({ path: join(ARTIFACTS, 'report-chaos.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const layout = await expectReadableLayout(page);
      const byId = new Map(layout.map((c) => [c.id, c]));
      // One chart per speed metric, series named by adapter and kind, percentiles on x.
      const recovery = byId.get('latency-speed-restart_recovery_control_plane')!;
      expect(recovery.title).toBe('Restart recovery: the control plane’s share');
      expect(recovery.xLabel).toBe('percentile');
      expect(recovery.series.slice(1)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^codex · hard restart \(\d+ samples\)$/)]),
      );
      // Runs over time: every run a bar, every restart's outage shaded, every recovery marked;
      // the recovery split: one bar per recovery, each with native-speed's line (codex p95, 4 s).
      const summary = JSON.parse(readFileSync(join(runDir, 'summary.json'), 'utf8'));
      const speed = summary.analysis.speed;
      const pictures = (await page.evaluate('window.fleetbenchReport.pictures')) as Array<{
        id: string;
        marks: Record<string, number>;
      }>;
      const marks = new Map(pictures.map((p) => [p.id, p.marks]));
      expect(marks.get('runs-over-time')).toMatchObject({
        run: speed.timeline.runs.length,
        outage: speed.restarts.length,
        recovered: speed.recoveries.length,
      });
      expect(marks.get('recovery-split')).toEqual({
        'control-plane': speed.recoveries.length,
        provider: speed.recoveries.length,
        limit: speed.recoveries.length,
      });
      const limitX = (await page.evaluate(
        `[...document.querySelectorAll('[data-picture="recovery-split"] line.limit')].map((l) => l.getAttribute('x1'))`,
      )) as string[];
      expect(new Set(limitX).size).toBe(1);
      await page
        .locator('[data-picture="runs-over-time"]')
        .screenshot({ path: join(ARTIFACTS, 'report-chaos-runs.png') });
      await page
        .locator('[data-picture="recovery-split"]')
        .screenshot({ path: join(ARTIFACTS, 'report-chaos-split.png') });
      const text = (await page.evaluate('document.body.innerText')) as string;
      expect(text).toContain('Dashed lines: restarts (red)');
      // Judged on its own budgets only: no Track B verdict or rule anywhere on the page.
      expect(text).toMatch(/chaos-codex-c4 holds all \d+ judged budgets/);
      expect(await page.locator('table.scorecard').count()).toBe(0);
      expect(text).not.toMatch(/Track B rules|Track B limits|REST core headroom|GraphQL headroom/);
      // Report-only rows say what the terminal says, never PASS/FAIL.
      const reportRows = (await page.evaluate(
        `[...document.querySelectorAll('tr')].filter((tr) => tr.innerText.includes('report only')).map((tr) => tr.lastElementChild.innerText)`,
      )) as string[];
      expect(reportRows.length).toBeGreaterThan(0);
      for (const verdict of reportRows) expect(['ok', 'over', 'reported']).toContain(verdict);
      await page.close();
    });

    it('a Paperclip run: runs over time with the lost run, its retry and the run never recovered; no GitHub charts', async () => {
      // The kept 25-minute Paperclip wave, as a run directory judged by native-speed.
      const runDir = join(dir, 'paperclip');
      mkdirSync(runDir, { recursive: true });
      const trace = join(import.meta.dirname, 'fixtures', 'paperclip', 'chaos-c4.trace.jsonl.gz');
      const { analysis } = await analyzeFile(trace);
      const { scenario } = resolveScenarioRef('paperclip-chaos-c4', []);
      const summary: RunSummary = {
        kind: 'fleetbench-run',
        schemaVersion: RUN_SUMMARY_VERSION,
        scenario: { ...scenario, hash: 'fixture' },
        outcome: {
          reason: 'completed',
          partial: false,
          endedAtMs: analysis.run.endMs,
          sessionsStarted: 4,
          sessionsDropped: 0,
          wallMs: 0,
          tracePath: trace,
          summaryPath: join(runDir, 'summary.json'),
        },
        analysis,
        budgets: [judge(resolveBudgets('native-speed'), [{ name: trace, analysis }])],
      };
      writeFileSync(join(runDir, 'summary.json'), JSON.stringify(summary));
      const r = await cli(['report', runDir]);
      expect(r.code, r.stderr).toBe(0);
      const { page, errors, requests } = await open(
        browser.context,
        readFileSync(join(runDir, 'report.html'), 'utf8'),
      );
      await page.screenshot({ path: join(ARTIFACTS, 'report-paperclip.png'), fullPage: true });
      await page
        .locator('[data-picture="runs-over-time"]')
        .screenshot({ path: join(ARTIFACTS, 'report-paperclip-runs.png') });
      await page
        .locator('[data-picture="recovery-split"]')
        .screenshot({ path: join(ARTIFACTS, 'report-paperclip-split.png') });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const pictures = (await page.evaluate('window.fleetbenchReport.pictures')) as Array<{
        id: string;
        marks: Record<string, number>;
      }>;
      const marks = new Map(pictures.map((p) => [p.id, p.marks]));
      // 178 runs, 3 restarts; the kill -9's run found lost and retried, the SIGTERM's retried, and
      // two cut runs never recovered (one failed on the SIGTERM, one still waiting at the end).
      expect(marks.get('runs-over-time')).toMatchObject({
        run: 178,
        outage: 3,
        lost: 1,
        retry: 2,
        recovered: 2,
        unrecovered: 2,
      });
      expect(marks.get('recovery-split')).toEqual({ 'control-plane': 2, provider: 2, limit: 2 });
      const text = (await page.evaluate('document.body.innerText')) as string;
      expect(text).toContain('Runs over time');
      expect(text).toContain('Recovery split');
      expect(text).toContain('s-0003 (codex_local, graceful restart): failed, adapter_failed');
      // No GitHub calls: no empty cost charts, no bracket.
      expect(text).toContain('This run made no GitHub API calls: there is no API cost to chart.');
      expect(text).not.toContain('Rate-limit bracket');
      const charts = (await drawnPixels(page)).map((c) => c.id);
      for (const id of ['calls', 'burst', 'per-session', 'burn']) expect(charts).not.toContain(id);
      await page.close();
    });

    it('a turnover run: judged and shown on its own budgets, its registered sessions counted', async () => {
      const runDir = join(dir, 'turnover');
      const run = await cli(['run', 'turnover', '--out', runDir, '--quiet']);
      expect(run.code, run.stderr).toBe(0);
      const { page, errors, requests } = await open(
        browser.context,
        readFileSync(join(runDir, 'report.html'), 'utf8'),
      );
      await page.screenshot({ path: join(ARTIFACTS, 'report-turnover.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      const text = (await page.evaluate('document.body.innerText')) as string;
      expect(text).toMatch(/turnover holds all \d+ judged budgets/);
      expect(await page.locator('table.scorecard').count()).toBe(0);
      expect(text).not.toMatch(/Track B rules|Track B limits|REST core headroom|GraphQL headroom/);
      const registered = /run time, sessions registered, repos\s+\S+, ([\d,]+),/.exec(text);
      expect(registered, text.slice(0, 2000)).not.toBeNull();
      expect(Number(registered![1]!.replace(/,/g, ''))).toBeGreaterThan(0);
      await page.close();
    });
  },
);
