// The public API (package.json "exports"; its types are src/index.ts, compiled to dist/types/):
// from an installed package the compiled module in dist/, from a checkout the sources, loaded as
// the CLI is (cli-bundle.js). Its values are re-exported by name; test/e2e/packaging.test.ts
// checks that they are all of src/index.ts's.
import { loadEntry } from './cli-bundle.js';

const api = await loadEntry('index');
export const { ATTRIBUTION_HEADERS, TARGET_PROTOCOL, eventToRecord } = api;
