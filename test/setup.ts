// Runs before every test file (vitest.config.ts `setupFiles`), in whichever worker it lands.
import { afterAll } from 'vitest';
import { removeScratchDirs } from './helpers/tmp.ts';

afterAll(removeScratchDirs);
