import type { Command } from 'commander';
import { writeOutputFile } from '../base/safe-write.ts';
import type { CommandIo } from './output.ts';

/** What a model says about itself: where it came from, how well it fits, what it costs a session. */
async function describeModel(modelPath: string | undefined, model: import('../model/format.ts').Model) {
  const { modelOverrunRule, modelProvenanceLine } = await import('../model/words.ts');
  const { coverageLines } = await import('../model/coverage.ts');
  const lines = [modelProvenanceLine(model)];
  for (const t of model.provenance.traces)
    lines.push(
      `  trace ${t.file}: ${t.runId}, ${t.calls} calls, ${t.cycles} cycles${t.load ? `, load ${t.load.start.join(' ')} → ${t.load.end?.join(' ') ?? '?'} on ${t.load.cpus} cores` : ''}`,
    );
  const steady = model.sessions.cycles.filter((c) => c.from === c.to && c.from !== 'spawning');
  for (const c of steady.slice(0, 3))
    lines.push(
      `  a session in ${c.from}: ${c.calls.reduce((a, x) => a + x.mean, 0).toFixed(2)} calls a cycle (${c.calls.map((x) => `${x.operation} ${x.mean}`).join(', ')})`,
    );
  if (model.sessions.cycles.length > 0) for (const line of coverageLines(model)) lines.push(`  ${line}`);
  const tasks = model.tasks;
  if (tasks) {
    const calls = (list: typeof tasks.calls) => list.reduce((a, x) => a + x.mean, 0).toFixed(2);
    lines.push(
      `  a task (one after another, ${tasks.samples} of them): ${calls(tasks.calls)} calls (${tasks.calls.map((x) => `${x.operation} ${x.mean}`).join(', ')}), ${tasks.points} points${tasks.durationMs ? `, ${(tasks.durationMs.p50 / 1000).toFixed(1)} s from its first call to its last (p50)` : ''}; ${calls(tasks.unattributed)} calls of no session per task`,
    );
  }
  lines.push(
    `  loop: ${model.loop.scope === 'project' ? 'one per project' : 'one for all sessions'}, ${model.loop.parallel === 0 ? 'every session at once' : `${model.loop.parallel} sessions at once`}, ${modelOverrunRule(model) === 'skip' ? 'ticks during a cycle skipped' : 'the next cycle at once after an overrun'}; per call: ${model.cycleTime.launchMsPerCall} ms to start, ${model.cycleTime.cpuMsPerCall} ms of CPU shared on ${model.cycleTime.cores} cores at load ${model.cycleTime.load ?? 0}, ${model.cycleTime.waitMsPerCall} ms more`,
  );
  const f = model.fit;
  const pct = (v: number | null) => (v === null ? '–' : `${v > 0 ? '+' : ''}${v} %`);
  lines.push(
    `  fit: calls ${pct(f.calls.errorPct)}, calls/session/cycle ${pct(f.callsPerSessionCycle.errorPct)}, cycle p50 ${pct(f.cycleP50Ms.errorPct)}, p95 ${pct(f.cycleP95Ms.errorPct)}, each cycle ±${f.cycleMeanErrorPct ?? '–'} % on average; ${f.unmodelledCalls} calls left out`,
  );
  for (const note of f.notes) lines.push(`  note: ${note}`);
  if (modelPath)
    lines.push(
      `replay: fleetbench run S2-T1-50 --set polling.strategy=learned --set polling.model=${modelPath} (docs/model.md)`,
    );
  return `${lines.join('\n')}\n`;
}

export function register(program: Command, io: CommandIo): void {
  const command = program
    .command('model')
    .description(
      "a control plane's behaviour learned from its traces, replayed at any scale (docs/model.md)",
    );

  command
    .command('learn')
    .description('learn a model from real runs’ traces (api calls attributed to sessions and poll cycles)')
    .argument(
      '<traces...>',
      'trace files (JSONL, gzip or not): a run of `fleetbench run learn --target ao`, say',
    )
    .option('-o, --output <file>', 'the model to write (YAML); without it, the model goes to stdout')
    .option('--name <name>', 'what the model is called (default: the control plane the first trace names)')
    .action(async (traces: string[], flags: { output?: string; name?: string }) => {
      const { learnModel } = await import('../learn/learn.ts');
      const { modelToYaml } = await import('../model/words.ts');
      const { createLearnProgress } = await import('./progress.ts');
      const progress = createLearnProgress(io);
      let model: import('../model/format.ts').Model;
      try {
        model = await learnModel(traces, {
          ...(flags.name ? { name: flags.name } : {}),
          onProgress: (file, read, total) => progress.read(file, read, total),
        });
      } finally {
        progress.stop();
      }
      const yaml = modelToYaml(model);
      if (flags.output) {
        writeOutputFile(flags.output, yaml);
        io.stdout.write(`${await describeModel(flags.output, model)}written: ${flags.output}\n`);
      } else {
        io.stdout.write(yaml);
        io.notice(await describeModel(undefined, model));
      }
    });

  command
    .command('show')
    .description('check a model file and say what it is: provenance, per-session cost, loop, fit')
    .argument('<model>', 'a model file written by `fleetbench model learn`')
    .action(async (file: string) => {
      const { loadModelFile } = await import('../model/format.ts');
      io.stdout.write(await describeModel(file, loadModelFile(file)));
    });
}
