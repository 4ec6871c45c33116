import type { Command } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import type { CommandIo } from './output.ts';

/** `gh-trace.jsonl` → `gh-trace.fleetbench.jsonl` beside it. */
function defaultOutput(input: string): string {
  return `${input.replace(/\.(jsonl|json|ndjson)(\.gz)?$/, '')}.fleetbench.jsonl`;
}

export function register(program: Command, io: CommandIo): void {
  const command = program
    .command('import')
    .description("turn other tools' records into a canonical fleetbench trace");

  command
    .command('ao-gh')
    .description('agent-orchestrator AO_GH_TRACE_FILE rows (one per gh call) → api records')
    .argument('<file>', 'the AO gh trace (JSONL)')
    .option('-o, --output <file>', 'canonical trace to write (default: <file>.fleetbench.jsonl)')
    .option('--cycle-ms <ms>', 'assign poll cycles as floor(start / ms) (AO rows carry none; e.g. 30000)')
    .option('--lenient', 'skip bad rows (counted) instead of stopping at the first')
    .option(
      '--bracket-before <file>',
      "the runbook's /rate_limit capture before the run (gh api /rate_limit --jq '{ core: .resources.core, captured_at: now | todate }')",
    )
    .option('--bracket-after <file>', 'the same capture after the run')
    .action(
      async (
        file: string,
        flags: {
          output?: string;
          cycleMs?: string;
          lenient?: boolean;
          bracketBefore?: string;
          bracketAfter?: string;
        },
      ) => {
        let cycleMs: number | undefined;
        if (flags.cycleMs !== undefined) {
          cycleMs = Number(flags.cycleMs);
          if (!Number.isFinite(cycleMs) || cycleMs <= 0)
            throw new FleetbenchError(
              'E_USAGE',
              `--cycle-ms: expected a positive number of milliseconds, got '${flags.cycleMs}'`,
            );
        }
        const output = flags.output ?? defaultOutput(file);
        // Loaded on use: the importers' schemas are not needed by other commands.
        const { importAoGh } = await import('../trace/importers/ao-gh.ts');
        const result = await importAoGh(file, output, {
          cycleMs,
          lenient: flags.lenient,
          bracketBefore: flags.bracketBefore,
          bracketAfter: flags.bracketAfter,
        });
        const brackets = [flags.bracketBefore && 'before', flags.bracketAfter && 'after'].filter(Boolean);
        io.stdout.write(
          `imported ${result.records} calls (${result.opaque} opaque)${brackets.length > 0 ? ` and the ${brackets.join(' and ')} rate-limit bracket` : ''} from ${file} → ${output}\n` +
            (result.skipped > 0
              ? `skipped ${result.skipped} bad rows:\n${result.skippedReasons.map((r) => `  ${r}`).join('\n')}\n`
              : ''),
        );
      },
    );

  command
    .command('otlp')
    .description('OpenTelemetry OTLP trace export (JSON or protobuf, gzip or not) → span (and event) records')
    .argument(
      '<file>',
      'OTLP export: JSON (one document or JSON Lines) or protobuf (one request or the Collector file stream)',
    )
    .option('-o, --output <file>', 'canonical trace to write (default: <file>.fleetbench.jsonl)')
    .option('--labels <keys>', 'comma-separated attribute keys to keep as labels (default: all)')
    .action(async (file: string, flags: { output?: string; labels?: string }) => {
      const output = flags.output ?? defaultOutput(file);
      const labelKeys = flags.labels
        ?.split(',')
        .map((k) => k.trim())
        .filter((k) => k.length > 0);
      const { importOtlp } = await import('../trace/importers/otlp.ts');
      const result = await importOtlp(file, output, { labelKeys });
      io.stdout.write(
        `imported ${result.spans} spans and ${result.events} events from ${file} → ${output}\n`,
      );
    });
}
