// Runs before every test file (vitest.config.ts `setupFiles`), in whichever worker it lands.
import { afterAll } from 'vitest';
import { takeParityProblems } from './helpers/openapi.ts';
import { removeScratchDirs } from './helpers/tmp.ts';

afterAll(removeScratchDirs);

// Every REST answer an emulator made by test/helpers/github.ts gave in this file fits GitHub's
// OpenAPI description (test/helpers/openapi.ts), or the file fails here, naming what did not.
afterAll(() => {
  const problems = takeParityProblems();
  if (problems.length > 0)
    throw new Error(
      `${problems.length} REST answer(s) outside GitHub's OpenAPI description:\n${problems
        .slice(0, 20)
        .map((p) => `  ${p.request} → ${p.status}: ${p.problem}`)
        .join('\n')}`,
    );
});
