/**
 * `target: {kind: command}` against control planes that misbehave (small shell scripts written
 * here): one that is never ready, one that floods its output before it says it is ready, a
 * scenario whose ready pattern is not a regular expression. Each runs `fleetbench run` as a
 * process on the real clock, in the world's sandbox, which needs bwrap (Debian package
 * bubblewrap): off CI its absence skips the suite with one line.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastLines } from '../src/targets/command/target.ts';
import { COMMAND_TARGET_BOUNDS, commandTargetSchema } from '../src/workload/command-target.ts';
import { type CliProcessRun, runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { proxyWorldTool, systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const proxyWorld = proxyWorldTool();

type Run = CliProcessRun & { dir: string };

/**
 * `fleetbench run FILE --clock real` as a process in a process group of its own; `interruptWhen`
 * sends SIGINT to the whole group (as Ctrl-C does) once that file exists.
 */
async function run(
  dir: string,
  scenario: string,
  options: { interruptWhen?: string; timeoutMs?: number } = {},
): Promise<Run> {
  const file = join(dir, 'scenario.yaml');
  writeFileSync(file, scenario);
  const out = join(dir, 'out');
  const result = await runCliProcess(['run', file, '--clock', 'real', '--out', out], {
    cwd: dir,
    traceDir: out,
    ...options,
  });
  return { ...result, dir: out };
}

const named = (r: Run, name: string) => r.records.filter((x) => x.name === name);

/** A scenario whose control plane is `sh SCRIPT`, one session given as an issue. */
function scenario(script: string, fields: { ready?: string; readyTimeout?: string; duration?: string } = {}) {
  return `
name: hostile
duration: ${fields.duration ?? '6s'}
seed: 3
topology: { owner: fleetbench }
sessions: { count: 1 }
executors:
  - type: fixed
    count: 1
target:
  kind: command
  start: sh ${script}
  ready: ${fields.ready ?? '{ log: cp ready }'}
  ready-timeout: ${fields.readyTimeout ?? '20s'}
  work: { issue: { labels: [agent] } }
  agents: none
`;
}

describe.skipIf(bwrap.skip)('the command target: a hostile control plane', () => {
  it('never ready by the run’s end: the run fails, exit 3 (it completed with exit 0 and no work given)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'silent.sh');
    writeFileSync(script, 'while true; do sleep 1; done\n');
    const result = await run(dir, scenario(script, { duration: '4s', readyTimeout: '60s' }));
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout + result.stderr).toContain('never became ready');
    expect(named(result, 'run.failed').length).toBe(1);
    expect(result.records.at(-1)).toMatchObject({ kind: 'end', reason: 'failed' });
  });

  it('ready by its log line after 3 MB of output: ready, and its work given (only the first MiB was read)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'noisy.sh');
    // 3 MB of one line with no newline, then the ready line: whatever comes first, it is read.
    writeFileSync(
      script,
      "head -c 3000000 /dev/zero | tr '\\0' x\necho\necho cp ready\nwhile true; do sleep 1; done\n",
    );
    const result = await run(dir, scenario(script, { duration: '6s', readyTimeout: '60s' }));
    expect(result.code, result.stderr).toBe(0);
    expect(named(result, 'controlplane.ready').length).toBe(1);
    expect(named(result, 'work.created').length).toBe(1);
  });

  it('a ready pattern that is not a regular expression: exit 2 naming the line and field, before anything starts (it was an internal error)', async () => {
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'cp.sh');
    writeFileSync(script, 'echo cp ready; while true; do sleep 1; done\n');
    const result = await run(dir, scenario(script, { ready: '{ log: "(cp ready" }' }), { timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/scenario\.yaml:\d+: target\.ready\.log: not a regular expression/);
    expect(result.stderr).not.toContain('internal error');
    expect(result.records).toEqual([]);
  });
});

/** Whether a process is still there (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('the command target: a stop that its first process survives', () => {
  it.each(['proxy', 'sandbox'])(
    '%s: the run’s end takes its whole process group, a child that ignores SIGTERM included (it ran on after the run)',
    async (mode) => {
      const needs = mode === 'sandbox' ? bwrap : proxyWorld;
      if (needs.skip) return;
      needs.require();
      const dir = scratchDir('fleetbench-command-hostile-');
      const script = join(dir, 'stubborn.sh');
      const pidFile = join(dir, 'child.pid');
      // The first process (sh) ends at SIGTERM; the child it started ignores it.
      writeFileSync(
        script,
        `sh -c 'trap "" TERM; echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; while true; do sleep 0.2; done' &\necho cp ready\nwait\n`,
      );
      const yaml = scenario(script, { duration: '3s' }).replace(
        '  agents: none',
        `  agents: none\n  world: { mode: ${mode} }\n  stop: { signal: SIGTERM, grace: 1s }`,
      );
      const result = await run(dir, yaml);
      expect(result.code, result.stderr).toBe(0);
      const inner = Number(readFileSync(pidFile, 'utf8'));
      // Seen from here: in the sandbox the file holds its pid inside the world, so look it up by
      // its command line instead.
      const pids =
        mode === 'proxy'
          ? [inner]
          : readdirSync('/proc')
              .filter((name) => /^\d+$/.test(name))
              .map(Number)
              .filter((pid) => {
                try {
                  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(pidFile);
                } catch {
                  return false;
                }
              });
      const survivors = pids.filter(alive);
      for (const pid of survivors) process.kill(pid, 'SIGKILL');
      expect(survivors).toEqual([]);
    },
  );
});

describe.skipIf(bwrap.skip)('the command target: a graceful restart', () => {
  it('takes the whole process group before the next start (a child that ignored SIGTERM ran on beside it)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'stubborn.sh');
    const pidFile = join(dir, 'child.pid');
    const overlap = join(dir, 'overlap');
    writeFileSync(
      script,
      [
        // The next start looks for the child the last one left (the world's pid namespace is one).
        `if [ -f ${pidFile} ] && kill -0 "$(cat ${pidFile})" 2>/dev/null; then echo "$(cat ${pidFile})" >> ${overlap}; fi`,
        `sh -c 'trap "" TERM; echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; while true; do sleep 0.2; done' &`,
        'echo cp ready',
        'wait',
        '',
      ].join('\n'),
    );
    const yaml = `${scenario(script, { duration: '5s' }).replace(
      '  agents: none',
      '  agents: none\n  stop: { signal: SIGTERM, grace: 1s }',
    )}faults:\n  - { type: restart, kind: graceful, at: 1s }\n`;
    const result = await run(dir, yaml);
    expect(result.code, result.stderr).toBe(0);
    expect(named(result, 'controlplane.ready').length).toBe(2);
    expect(existsSync(overlap) ? readFileSync(overlap, 'utf8') : '').toBe('');
  });
});

describe('the command target: a hard restart with kill: process', () => {
  it.each([
    ['proxy', ''],
    ['sandbox', ''],
    // A shell that became the command (exec, or a sh that is bash): what it started runs on.
    ['sandbox', 'exec '],
  ])(
    '%s, start "%ssh crashes.sh": kills the control plane a start line runs, not only its sh -c (it ran on beside the next start)',
    async (mode, prefix) => {
      const needs = mode === 'sandbox' ? bwrap : proxyWorld;
      if (needs.skip) return;
      needs.require();
      const dir = scratchDir('fleetbench-command-hostile-');
      const script = join(dir, 'crashes.sh');
      const starts = join(dir, 'starts');
      const overlap = join(dir, 'overlap');
      const worker = join(dir, 'worker');
      writeFileSync(
        script,
        [
          // What it starts (an agent) is left running by a crash, and says so after the restart.
          `if [ ! -f ${starts} ]; then sh -c 'while true; do sleep 0.2; [ "$(wc -l < ${starts})" -gt 1 ] && echo alive > ${worker}; done' & fi`,
          `echo $$ >> ${starts}`,
          'echo cp ready',
          // The first start, still running once a later one began: the crash did not take it.
          `while true; do [ "$(tail -n 1 ${starts})" = "$$" ] || echo $$ >> ${overlap}; sleep 0.1; done`,
          '',
        ].join('\n'),
      );
      const yaml = `${scenario(script, { duration: '5s' })
        .replace(`start: sh ${script}`, `start: ${prefix}sh ${script}`)
        .replace(
          '  agents: none',
          `  agents: none\n  kill: process\n  world: { mode: ${mode} }`,
        )}faults:\n  - { type: restart, kind: hard, at: 1500ms }\n`;
      const result = await run(dir, yaml);
      expect(result.code, result.stderr).toBe(0);
      expect(named(result, 'controlplane.ready').length).toBe(2);
      expect(readFileSync(starts, 'utf8').trim().split('\n').length).toBe(2);
      expect(existsSync(overlap) ? readFileSync(overlap, 'utf8') : '').toBe('');
      expect(existsSync(worker), 'what the first start started ran on after the crash').toBe(true);
    },
  );
});

describe.skipIf(bwrap.skip)('the command target: a control plane whose output is hostile', () => {
  it('dies with terminal escapes in its last lines: the failure shows them escaped (they reached the terminal raw)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'escapes.sh');
    writeFileSync(script, 'echo cp ready; sleep 1; printf "\\033]0;pwned\\007\\033[2Jgone\\r\\n"; exit 4\n');
    const result = await run(dir, scenario(script, { duration: '20s' }));
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toContain('\\x1b]0;pwned\\x07\\x1b[2Jgone');
    expect(result.stdout + result.stderr).not.toContain('\u001b]0;pwned');
    const summary = readFileSync(join(result.dir, 'summary.json'), 'utf8');
    expect(summary).not.toContain('\\u001b');
  });
});

describe.skipIf(bwrap.skip)('the command target: a ready probe answered a byte at a time', () => {
  it('fails at its ready-timeout, naming the probe (the probe waited for ever, past the timeout)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const server = join(dir, 'dribble.mjs');
    // 200 at once, then a byte every 300 ms, never the end: each silence is short.
    writeFileSync(
      server,
      `import { createServer } from 'node:http';
createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  const timer = setInterval(() => res.write('.'), 300);
  req.on('close', () => clearInterval(timer));
}).listen(7788, '127.0.0.1');
`,
    );
    const started = performance.now();
    const result = await run(
      dir,
      scenario(server, {
        duration: '60s',
        readyTimeout: '4s',
        ready: '{ http: "http://127.0.0.1:7788/ready" }',
      }).replace(`start: sh ${server}`, `start: node ${server}`),
    );
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toContain(
      'not ready within 4 s (GET http://127.0.0.1:7788/ready never answered 2xx)',
    );
    expect(performance.now() - started).toBeLessThan(40_000);
  });
});

describe.skipIf(bwrap.skip)('the command target: a control plane that writes without end', () => {
  it('fills command.log up to its bound and no further, and runs on (it filled the disk)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-hostile-');
    const script = join(dir, 'flood.sh');
    const bound = COMMAND_TARGET_BOUNDS.maxOutputBytes;
    writeFileSync(
      script,
      `echo cp ready\nhead -c ${bound + 50_000_000} /dev/zero\nwhile true; do sleep 1; done\n`,
    );
    const result = await run(dir, scenario(script, { duration: '8s' }));
    expect(result.code, result.stderr).toBe(0);
    const log = join(result.dir, 'command.log');
    const size = statSync(log).size;
    expect(size).toBeGreaterThanOrEqual(bound);
    expect(size).toBeLessThan(bound + 1_000);
    const end = readFileSync(log).subarray(-200).toString('utf8');
    expect(end).toContain(`output past ${bound} bytes dropped`);
    rmSync(log);
  });
});

describe('the command target: the end of its output in a failure', () => {
  it('never holds a control character, whatever the control plane wrote', () => {
    const dir = scratchDir('fleetbench-command-tail-');
    const log = join(dir, 'command.log');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3_000 }), (bytes) => {
        writeFileSync(log, bytes);
        const tail = lastLines(log, 0);
        expect(tail).not.toMatch(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the command target: its ready pattern', () => {
  it('is accepted exactly when it compiles as a regular expression', () => {
    const patterns = fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }),
      fc.stringMatching(/^[()[\]{}*+?.\\|^$a-z0-9]{1,20}$/),
    );
    fc.assert(
      fc.property(patterns, (pattern) => {
        let compiles = true;
        try {
          new RegExp(pattern);
        } catch {
          compiles = false;
        }
        const parsed = commandTargetSchema.safeParse({ start: 'true', ready: { log: pattern } });
        expect(parsed.success).toBe(compiles);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the command target: a start with no program', () => {
  it('is refused exactly when its program is empty or blank, as a line or as a list (it was started, and died)', () => {
    const blank = fc.stringMatching(/^[ \t\n]{0,6}$/);
    const word = fc.string({ maxLength: 12 });
    const start = fc.oneof(
      blank,
      fc.string({ minLength: 1, maxLength: 20 }),
      fc.tuple(blank, fc.array(word, { maxLength: 3 })).map(([first, rest]) => [first, ...rest]),
      fc.array(word, { minLength: 1, maxLength: 4 }),
    );
    fc.assert(
      fc.property(start, (value) => {
        const program = Array.isArray(value) ? value[0] : value;
        const parsed = commandTargetSchema.safeParse({ start: value });
        expect(parsed.success).toBe(/\S/.test(program ?? ''));
      }),
      { numRuns: 500 },
    );
  });
});

describe('the command target: directories it cannot make', () => {
  it.each([
    [
      'cwd',
      'a file',
      (dir: string) => {
        const file = join(dir, 'a-file');
        writeFileSync(file, '');
        return file;
      },
    ],
    ['state', 'under /proc', () => `/proc/fleetbench-nope-${process.pid}`],
  ])(
    'target.%s %s: exit 2 naming the field, at once (an internal error; under /proc a spin at full CPU for ever)',
    async (field, _what, path) => {
      const dir = scratchDir('fleetbench-command-hostile-');
      const script = join(dir, 'cp.sh');
      writeFileSync(script, 'echo cp ready; while true; do sleep 1; done\n');
      const started = performance.now();
      const result = await run(
        dir,
        scenario(script).replace('  agents: none', `  agents: none\n  ${field}: ${path(dir)}`),
        { timeoutMs: 30_000 },
      );
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`target.${field}: cannot make the directory`);
      expect(result.stderr).not.toContain('internal error');
      expect(performance.now() - started).toBeLessThan(25_000);
    },
  );
});
