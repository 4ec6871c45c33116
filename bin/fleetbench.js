#!/usr/bin/env node
// Runs the TypeScript sources with no build step between a clone and a run: from a bundle of them
// cached under node_modules/.cache (rebuilt when a source changes), or through tsx's loader.
// See cli-bundle.js.
import { loadCli } from './cli-bundle.js';

const { main } = await loadCli();
const code = await main(process.argv.slice(2));
process.exitCode = code;
