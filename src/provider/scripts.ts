/**
 * Agent scripts: what the emulated model answers, turn by turn. A turn is an optional line of
 * text, the shell commands the agent runs (one tool call per model response, in order) and a
 * final message; a conversation's turn N follows the script's turn N (cycling when the script is
 * shorter). The answer to a request is decided from where the request stands in its
 * conversation (src/provider/conversation.ts) and the script, so a retry gets the same answer
 * and a resumed session goes on where its history ends (docs/provider-emulator.md).
 */
import { z } from 'zod';
import { FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES, PROVIDER_LIMITS } from '../base/limits.ts';
import type { Rng } from '../base/rng.ts';
import { describeZodIssues } from '../base/validation.ts';
import { parseYamlInput, yamlLineOf } from '../base/yaml-input.ts';
import type { Position, ToolDeclaration } from './conversation.ts';

export interface ScriptTurn {
  /** Said before the first command (with it, in the same response). */
  text?: string | undefined;
  /** Shell commands, one tool call each. */
  commands: string[];
  /** The turn's last message. */
  final: string;
  /** Pad the final message with seeded filler words to about this many tokens. */
  finalTokens?: number | undefined;
}

export interface AgentScript {
  name: string;
  turns: ScriptTurn[];
}

const { maxScripts, maxTurns, maxCommands, maxCommandBytes, maxTextBytes, maxFinalTokens } = PROVIDER_LIMITS;

const boundedText = (field: string) =>
  z.string().max(maxTextBytes, { error: `${field}: at most ${maxTextBytes} characters (docs/limits.md)` });

const turnSchema = z
  .object({
    text: boundedText('text').optional(),
    commands: z
      .array(
        z
          .string()
          .min(1)
          .max(maxCommandBytes, { error: `at most ${maxCommandBytes} characters (docs/limits.md)` }),
      )
      .max(maxCommands, { error: `at most ${maxCommands} commands a turn (docs/limits.md)` })
      .default([]),
    final: boundedText('final'),
    finalTokens: z.number().int().min(1).max(maxFinalTokens).optional(),
  })
  .strict();

const scriptSchema = z
  .object({
    turns: z
      .array(turnSchema)
      .min(1, { error: 'expected at least one turn' })
      .max(maxTurns, { error: `at most ${maxTurns} turns (docs/limits.md)` }),
  })
  .strict();

/** A scripts file: `scripts: { NAME: { turns: [...] } }` (docs/provider-emulator.md). */
export const scriptsFileSchema = z
  .object({
    scripts: z
      .record(
        z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, { error: 'names are 1-64 of A-Z a-z 0-9 . _ -' }),
        scriptSchema,
      )
      .refine((scripts) => Object.keys(scripts).length <= maxScripts, {
        error: `at most ${maxScripts} scripts (docs/limits.md)`,
      }),
    default: z.string().optional(),
  })
  .strict();

export type ScriptsFile = z.infer<typeof scriptsFileSchema>;

/**
 * The built-in scripts. Their commands only read: a user's own scripts run whatever they say,
 * on the machine the agents run on.
 */
export const BUILTIN_SCRIPTS: Record<string, AgentScript> = {
  hello: {
    name: 'hello',
    turns: [{ commands: [], final: 'Hello from the fleetbench provider emulator.' }],
  },
  'tool-call': {
    name: 'tool-call',
    turns: [
      {
        text: 'Checking the workspace.',
        commands: ['echo fleetbench-tool-ok'],
        final: 'The command ran: fleetbench-tool-ok.',
      },
    ],
  },
  coding: {
    name: 'coding',
    turns: [
      {
        text: 'I will look at the repository first.',
        commands: ['ls -la', 'git status --short'],
        final: 'I looked at the repository and its status; the change is ready for review.',
        finalTokens: 120,
      },
      {
        text: 'Reading the files the review mentions.',
        commands: ['ls', 'git log --oneline -5'],
        final: 'I addressed the review comments.',
        finalTokens: 80,
      },
    ],
  },
  // Each turn adds a few thousand tokens to the session (a long command output, a long answer):
  // a session's saved history, and so its resume, grows by that much a wake.
  'long-history': {
    name: 'long-history',
    turns: [
      {
        text: 'Reading the build log.',
        commands: ['seq 1 1500'],
        final: 'Summarised the build log and the failing steps.',
        finalTokens: 300,
      },
    ],
  },
};

export const DEFAULT_SCRIPT = 'coding';

/**
 * The script a session follows when its key names none: the one chosen (a flag, a scenario's
 * `provider.script`), else the scripts file's `default`, else `fallback` (a target's own).
 */
export function defaultScriptName(
  chosen: string | undefined,
  file: ScriptsFile | undefined,
  fallback: string = DEFAULT_SCRIPT,
): string {
  return chosen ?? file?.default ?? fallback;
}

/** Scripts from a validated file, over the built-ins (a file may redefine a built-in name). */
export function scriptLibrary(file: ScriptsFile | undefined): {
  scripts: Map<string, AgentScript>;
  fallback: string;
} {
  const scripts = new Map<string, AgentScript>(Object.entries(BUILTIN_SCRIPTS));
  for (const [name, script] of Object.entries(file?.scripts ?? {}))
    scripts.set(name, {
      name,
      turns: script.turns.map((turn) => ({ ...turn, commands: turn.commands ?? [] })),
    });
  const fallback = defaultScriptName(undefined, file);
  if (!scripts.has(fallback))
    throw new FleetbenchError(
      'E_PROVIDER',
      `scripts: default: no script named '${fallback}' (have: ${[...scripts.keys()].join(', ')})`,
    );
  return { scripts, fallback };
}

/** `fleetbench-script: NAME` in a prompt picks the script (a control plane can pass it in a task). */
const DIRECTIVE = /fleetbench-script[:=]\s*([A-Za-z0-9._-]{1,64})/;

export function scriptNamedIn(prompt: string): string | undefined {
  return DIRECTIVE.exec(prompt)?.[1];
}

/** How each CLI's shell tool takes a command, by the tool's declared name. */
const SHELL_TOOLS: Array<{ name: string; args: (command: string) => Record<string, unknown> }> = [
  { name: 'exec_command', args: (cmd) => ({ cmd }) }, // codex
  { name: 'shell', args: (cmd) => ({ command: ['bash', '-lc', cmd] }) }, // older codex
  { name: 'Bash', args: (command) => ({ command, description: 'Run the scripted command' }) }, // Claude Code
  { name: 'bash', args: (command) => ({ command }) }, // opencode (its schema has no description)
];

export type Reply =
  | { kind: 'tool-call'; text: string | undefined; tool: string; args: string; command: string }
  | { kind: 'text'; text: string; toolMissing?: boolean; tokens: number };

const FILLER = [
  'the',
  'change',
  'keeps',
  'tests',
  'green',
  'and',
  'updates',
  'docs',
  'for',
  'review',
  'with',
  'small',
  'commits',
  'that',
  'explain',
  'why',
];

/**
 * A turn's final message, padded to about its `finalTokens` with seeded filler, and its token
 * count. The emulator pads each turn once and every stream shares the text.
 */
export function padFinal(
  turn: ScriptTurn,
  countTokens: (text: string) => number,
  rng: Rng,
): { text: string; tokens: number } {
  const words: string[] = [turn.final];
  // Each filler word is one token after a space: add words until the count is reached.
  let have = countTokens(turn.final);
  const tokens = turn.finalTokens;
  for (let i = 0; tokens !== undefined && have < tokens && i < tokens; i++) {
    words.push(rng.pick(FILLER));
    have += 1;
  }
  return { text: words.join(' '), tokens: have };
}

/**
 * The reply to a request at `position` of a conversation that declared `tools`. Without a shell
 * tool among them (a title request, a plain API client) the turn's commands cannot be called:
 * the reply is the final message, marked `toolMissing` when the turn wanted commands.
 */
export function planReply(
  script: AgentScript,
  position: Position,
  tools: readonly ToolDeclaration[],
  finalOf: (turn: ScriptTurn) => { text: string; tokens: number },
): Reply {
  const turn = script.turns[(position.turn - 1) % script.turns.length] as ScriptTurn;
  const shell = SHELL_TOOLS.find((candidate) => tools.some((tool) => tool.name === candidate.name));
  if (position.step < turn.commands.length && shell) {
    const command = turn.commands[position.step] as string;
    return {
      kind: 'tool-call',
      text: position.step === 0 ? turn.text : undefined,
      tool: shell.name,
      args: JSON.stringify(shell.args(command)),
      command,
    };
  }
  const final = finalOf(turn);
  return turn.commands.length > 0 && !shell && tools.length > 0
    ? { kind: 'text', ...final, toolMissing: true }
    : { kind: 'text', ...final };
}

/** Reads and validates a scripts file (YAML or JSON); errors read `file:line: path: reason`. */
export function loadScriptsFile(file: string): ScriptsFile {
  const text = readInputText(file, {
    maxBytes: MAX_CONFIG_FILE_BYTES,
    code: 'E_PROVIDER',
    what: 'a scripts file',
  });
  const { doc, lineCounter, error, value } = parseYamlInput(text);
  if (error) throw new InputFileError('E_PROVIDER', file, error.line, error.message);
  const parsed = scriptsFileSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    throw new InputFileError(
      'E_PROVIDER',
      file,
      yamlLineOf(doc, lineCounter)(issue.path),
      describeZodIssues([issue], 1)[0] as string,
    );
  }
  try {
    scriptLibrary(parsed.data);
  } catch (problem) {
    throw new InputFileError(
      'E_PROVIDER',
      file,
      yamlLineOf(doc, lineCounter)(['default']),
      (problem as Error).message,
    );
  }
  return parsed.data;
}
