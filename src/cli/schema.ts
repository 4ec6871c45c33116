import type { Command } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import type { CommandIo } from './output.ts';

/**
 * Published JSON Schemas, generated from the same zod schemas that validate input. Loaded on
 * use: zod is slow to load and the other commands do not need it.
 */
export const jsonSchemas: Record<string, () => Promise<Record<string, unknown>>> = {
  trace: async () => (await import('../trace/schema.ts')).traceJsonSchema(),
  analysis: async () => (await import('../analyze/schema.ts')).analysisJsonSchema(),
  scenario: async () => (await import('../workload/scenario.ts')).scenarioJsonSchema(),
  profile: async () => (await import('../workload/profiles/schema.ts')).profileJsonSchema(),
  baseline: async () => (await import('../results/baseline.ts')).baselineJsonSchema(),
  model: async () => (await import('../model/format.ts')).modelJsonSchema(),
};

export function register(program: Command, io: CommandIo): void {
  program
    .command('schema')
    .description('print the JSON Schema of a format (trace, analysis, scenario, profile, baseline, model)')
    .argument('<format>', `one of: ${Object.keys(jsonSchemas).join(', ')}`)
    .action(async (format: string) => {
      const make = jsonSchemas[format];
      if (!make) {
        throw new FleetbenchError(
          'E_USAGE',
          `unknown format '${format}' (known: ${Object.keys(jsonSchemas).join(', ')})`,
        );
      }
      io.stdout.write(`${JSON.stringify(await make(), null, 2)}\n`);
    });
}
