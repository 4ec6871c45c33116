/**
 * Finding and loading session profiles: a built-in name (scenarios/profiles/NAME.yaml) or a
 * YAML file. Errors read `file:line: steps[2].ops[0].ingset: unknown operation 'ingset' (…)`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FleetbenchError, InputFileError } from '../../base/errors.ts';
import { readInputText } from '../../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES } from '../../base/limits.ts';
import { describeZodIssues } from '../../base/validation.ts';
import { parseYamlInput, yamlFileNames, yamlLineOf } from '../../base/yaml-input.ts';
import { type Profile, resolveProfile, userProfileSchema } from './schema.ts';

const PROFILE_DIR = fileURLToPath(new URL('../../../scenarios/profiles/', import.meta.url));

export function builtinProfileNames(): string[] {
  return yamlFileNames(PROFILE_DIR);
}

/** Parses profile YAML text; `file` names it in errors, `source` is recorded in the profile. */
export function parseProfileText(text: string, file: string, source = file): Profile {
  const { doc, lineCounter, error, value } = parseYamlInput(text);
  if (error) throw new InputFileError('E_PROFILE', file, error.line, `YAML: ${error.message}`);
  const raw = value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InputFileError('E_PROFILE', file, undefined, 'expected a YAML mapping (name:, steps:, ...)');
  }
  const parsed = userProfileSchema.safeParse(raw);
  if (!parsed.success) {
    // An unknown field first: a misspelt key also shows up as the missing one it was meant to be.
    const issues = [...parsed.error.issues].sort(
      (a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'),
    );
    const issue = issues[0]!;
    // An unknown key's own line, not its parent's.
    const lineOf = yamlLineOf(doc, lineCounter);
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new InputFileError(
      'E_PROFILE',
      file,
      lineOf(issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path),
      `${describeZodIssues([issue])[0]}${more}`,
      { hint: 'the session profile format is documented in docs/scenarios.md (Session profiles)' },
    );
  }
  return resolveProfile(parsed.data, source);
}

export function loadProfileFile(file: string): Profile {
  const text = readInputText(file, {
    maxBytes: MAX_CONFIG_FILE_BYTES,
    code: 'E_PROFILE',
    what: 'a session profile',
  });
  return parseProfileText(text, file);
}

/**
 * A profile by what a scenario says: a built-in name, or a path (absolute, relative to the
 * scenario file, or relative to the current directory, in that order).
 */
export function resolveProfileRef(
  ref: string,
  scenario: { file?: string; lineOf?: (path: readonly PropertyKey[]) => number | undefined } = {},
): Profile {
  const scenarioFile = scenario.file;
  if (builtinProfileNames().includes(ref)) {
    return parseProfileText(
      readFileSync(`${PROFILE_DIR}${ref}.yaml`, 'utf8'),
      `${PROFILE_DIR}${ref}.yaml`,
      'built-in',
    );
  }
  const candidates = isAbsolute(ref)
    ? [ref]
    : [...(scenarioFile ? [resolve(dirname(scenarioFile), ref)] : []), resolve(ref)];
  const found = candidates.find((c) => existsSync(c));
  if (found) return loadProfileFile(found);
  const reason = `turnover.profile: unknown profile '${ref}' (built-in: ${builtinProfileNames().join(', ')}; or the path of a profile YAML file)`;
  if (scenarioFile === undefined) throw new FleetbenchError('E_PROFILE', reason);
  throw new InputFileError('E_PROFILE', scenarioFile, scenario.lineOf?.(['turnover', 'profile']), reason);
}
