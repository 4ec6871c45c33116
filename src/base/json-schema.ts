/**
 * The JSON Schemas fleetbench publishes (trace lines, scenarios, profiles, baseline.json): zod's
 * draft 2020-12 rendering of the one schema that validates the file, under fleetbench's `$id`,
 * title and description, so the published text and the validator cannot disagree.
 */
import { z } from 'zod';

export interface PublishedSchemaMeta {
  /** The schema's name under https://fleetbench.dev/schemas/ (e.g. `scenario-1`). */
  id: string;
  title: string;
  description: string;
}

export function publishedJsonSchema(
  schema: z.ZodType,
  meta: PublishedSchemaMeta,
  options: { io?: 'input' | 'output'; unrepresentable?: 'any' | 'throw' } = {},
): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `https://fleetbench.dev/schemas/${meta.id}.json`,
    title: meta.title,
    description: meta.description,
    ...(z.toJSONSchema(schema, { target: 'draft-2020-12', ...options }) as Record<string, unknown>),
  };
}
