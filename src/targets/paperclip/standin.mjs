#!/usr/bin/env node
// The stand-in agent of the `paperclip` target (docs/paperclip.md): what Paperclip spawns for a
// run instead of a coding agent. It prints the event stream of `codex exec --json` (one JSON
// object a line: thread.started, turn.started, item.started / item.completed, turn.completed)
// with delays fleetbench chooses, so the provider's share of every figure is known and no model
// is called.
//
//   standin.mjs codex   <codex's own arguments: exec --json … [resume <thread id>] ->
//   standin.mjs process
//
// `codex` is the stand-in for the codex CLI under Paperclip's codex_local adapter (engine cli):
// `resume <id>` in its arguments is a saved session to load first (the session-load delay), and
// the thread id it prints is what Paperclip saves and hands back on the agent's next run.
// `process` is the stand-in under Paperclip's `process` adapter: the same stream, never resumed.
//
// Settings come as JSON in FLEETBENCH_STANDIN (delay ranges in ms, [min, max]):
//   { "bootMs": [a, b], "sessionLoadMs": [a, b], "firstEventMs": [a, b], "itemGapMs": [a, b],
//     "items": [a, b], "control": "/path/to/control.json" }
// The control file, read at start, holds {"slowdown": factor} while a provider slowdown lasts.
//
// Like a real CLI it dies when its output goes nowhere (the server that read it was killed): the
// first write after that fails (EPIPE) and it exits 1. It has no SIGTERM handler: a signal ends
// it as it would end a CLI that has none.
//
// Plain JavaScript with only node: imports on purpose: it is copied into the run's directory and
// run by Paperclip's own Node as Paperclip's user, apart from fleetbench's sources.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

const mode = process.argv[2];
const args = process.argv.slice(3);
let settings = {};
try {
  settings = JSON.parse(process.env.FLEETBENCH_STANDIN ?? '{}');
} catch {
  settings = {};
}
let slowdown = 1;
if (typeof settings.control === 'string') {
  try {
    const control = JSON.parse(readFileSync(settings.control, 'utf8'));
    if (typeof control.slowdown === 'number' && control.slowdown >= 1) slowdown = control.slowdown;
  } catch {
    // No control file: no slowdown.
  }
}

const draw = (range, fallback) => {
  const [min, max] = Array.isArray(range) && range.length === 2 ? range : fallback;
  return min + Math.random() * (max - min);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms * slowdown));

process.stdout.on('error', () => process.exit(1));
// The prompt arrives on stdin (codex's `-`); it is read and dropped so the writer never blocks.
process.stdin.on('error', () => undefined);
process.stdin.resume();

const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

async function main() {
  if (mode !== 'codex' && mode !== 'process') {
    process.stderr.write(`standin: unknown mode ${mode}; expected codex or process\n`);
    process.exit(2);
  }
  const resumeAt = mode === 'codex' ? args.indexOf('resume') : -1;
  const resumed = resumeAt >= 0 && typeof args[resumeAt + 1] === 'string' && args[resumeAt + 1] !== '-';
  await sleep(draw(settings.bootMs, [300, 800]));
  if (resumed) await sleep(draw(settings.sessionLoadMs, [500, 1500]));
  emit({ type: 'thread.started', thread_id: resumed ? args[resumeAt + 1] : randomUUID() });
  emit({ type: 'turn.started' });
  await sleep(draw(settings.firstEventMs, [200, 600]));
  emit({ type: 'item.started', item: { id: 'item_0', type: 'reasoning', text: '' } });
  await sleep(draw(settings.itemGapMs, [500, 1500]));
  emit({ type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: 'Planning the change.' } });
  const items = Math.round(draw(settings.items, [2, 4]));
  for (let i = 1; i <= items; i++) {
    const id = `item_${i}`;
    emit({
      type: 'item.started',
      item: { id, type: 'command_execution', command: `step ${i}`, status: 'in_progress' },
    });
    await sleep(draw(settings.itemGapMs, [500, 1500]));
    emit({
      type: 'item.completed',
      item: { id, type: 'command_execution', command: `step ${i}`, exit_code: 0, status: 'completed' },
    });
  }
  emit({ type: 'item.completed', item: { id: `item_${items + 1}`, type: 'agent_message', text: 'Done.' } });
  emit({ type: 'turn.completed', usage: { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 } });
  process.stdout.end(() => process.exit(0));
}

main().catch((error) => {
  process.stderr.write(`standin: ${error?.message ?? error}\n`);
  process.exit(1);
});
