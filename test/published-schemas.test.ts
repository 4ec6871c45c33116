/**
 * Every JSON Schema `fleetbench schema FORMAT` prints is published as docs/FORMAT.schema.json
 * (README, docs/trace-format.md, docs/scenarios.md): the committed file must be what the code
 * generates today, or an editor validating a scenario against it accepts what a run refuses.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonSchemas } from '../src/cli/schema.ts';

describe('the published JSON Schemas', () => {
  for (const format of Object.keys(jsonSchemas))
    it(`docs/${format}.schema.json is what \`fleetbench schema ${format}\` prints`, async () => {
      const committed = JSON.parse(
        readFileSync(new URL(`../docs/${format}.schema.json`, import.meta.url), 'utf8'),
      );
      expect(committed).toEqual(JSON.parse(JSON.stringify(await jsonSchemas[format]!())));
    });
});
