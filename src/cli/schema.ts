import type { Command } from 'commander';
import { analysisJsonSchema } from '../analyze/schema.ts';
import { FleetbenchError } from '../errors.ts';
import { traceJsonSchema } from '../trace/schema.ts';

/** Published JSON Schemas, generated from the same zod schemas that validate input. */
export const jsonSchemas: Record<string, () => Record<string, unknown>> = {
  trace: traceJsonSchema,
  analysis: analysisJsonSchema,
};

export function register(program: Command): void {
  program
    .command('schema')
    .description('print the JSON Schema of a format (trace, analysis)')
    .argument('<format>', `one of: ${Object.keys(jsonSchemas).join(', ')}`)
    .action((format: string) => {
      const make = jsonSchemas[format];
      if (!make) {
        throw new FleetbenchError(
          'E_USAGE',
          `unknown format '${format}' (known: ${Object.keys(jsonSchemas).join(', ')})`,
        );
      }
      process.stdout.write(`${JSON.stringify(make(), null, 2)}\n`);
    });
}
