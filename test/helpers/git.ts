/**
 * The real git CLI as the tests run it: nothing of the machine's or the user's configuration, no
 * prompt, an author and a committer of its own, and asynchronous, since the server answering it
 * often runs in the test's own process.
 */
import { execFile } from 'node:child_process';

/** git's environment for a test whose scratch home is `home` (identities overridable). */
export function gitTestEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Agent',
    GIT_AUTHOR_EMAIL: 'agent@example.com',
    GIT_COMMITTER_NAME: 'Agent',
    GIT_COMMITTER_EMAIL: 'agent@example.com',
    ...extra,
  };
}

/** `git ARGS` in `cwd`: its standard output trimmed, or an error naming the command and git's stderr. */
export function runGit(args: string[], cwd: string, env: NodeJS.ProcessEnv, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('git', args, { cwd, env, timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`git ${args.join(' ')}: ${stderr}`)) : resolve(stdout.trim()),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}
