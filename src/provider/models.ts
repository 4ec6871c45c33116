/**
 * The models the provider emulator serves: each model the pinned CLIs default to or are
 * configured with (codex 0.169.0, Claude Code 2.1.328, opencode 1.18.33 as fleetbench sets it up)
 * and each the vendors document as served through their APIs (a user's control plane names
 * those), with the context window and output cap its vendor publishes; OpenAI fine-tunes of them;
 * and the models a user adds. A request naming another model is refused as the vendor refuses it
 * (404 `not_found_error` / `model_not_found`); a request over the context window or asking for
 * more output than the cap gets the vendor's 400. Where each number comes from:
 * docs/provider-emulator.md, "Models".
 */

import { PROVIDER_LIMITS } from '../base/limits.ts';

export type ModelVendor = 'anthropic' | 'openai';

export interface ModelInfo {
  id: string;
  vendor: ModelVendor;
  /** Other names the API takes for it (Anthropic's dated ids and aliases). */
  aliases?: readonly string[];
  displayName: string;
  /** Tokens of input and output together. */
  contextWindow: number;
  /** The most input one request may carry (OpenAI states it apart: the window less the output cap). */
  maxInputTokens: number;
  /** The most output tokens one request may ask for (`max_tokens`, `max_output_tokens`). */
  maxOutputTokens: number;
  /** The shortest prefix the vendor caches, tokens. */
  minCacheTokens: number;
  /** OpenAI's `owned_by` in the model list when not the vendor's own (`openai`). */
  ownedBy?: string;
}

const anthropic = (
  id: string,
  displayName: string,
  contextWindow: number,
  maxOutputTokens: number,
  aliases: string[] = [],
): ModelInfo => ({
  id,
  vendor: 'anthropic',
  aliases,
  displayName,
  contextWindow,
  // Anthropic counts the prompt alone against the window (input + max_tokens over it is capped, not refused).
  maxInputTokens: contextWindow,
  maxOutputTokens,
  // Anthropic's documented minimum cacheable prompt for its Sonnet and Opus models.
  minCacheTokens: 1024,
});

/**
 * How an OpenAI model's window is shared between a request's input and its output. The GPT-5
 * family and later state a split: the input may fill the window less the output cap (GPT-5:
 * 400,000 = 272,000 in + 128,000 out; GPT-5.4 and later: 1,050,000 = 922,000 + 128,000). GPT-4o,
 * GPT-4.1 and the o-series state none, and the API counts the prompt alone against the whole
 * window (docs/provider-emulator.md, "Models").
 */
type OpenAIInput = 'window-less-output' | 'whole-window';

const openai = (
  id: string,
  displayName: string,
  contextWindow: number,
  maxOutputTokens: number,
  options: { aliases?: string[]; input?: OpenAIInput } = {},
): ModelInfo => ({
  id,
  vendor: 'openai',
  aliases: options.aliases ?? [],
  displayName,
  contextWindow,
  maxInputTokens: options.input === 'whole-window' ? contextWindow : contextWindow - maxOutputTokens,
  maxOutputTokens,
  // OpenAI caches prompts of 1,024 tokens and more.
  minCacheTokens: 1024,
});

/** The table; docs/provider-emulator.md lists it with the source of every number. */
export const MODELS: readonly ModelInfo[] = [
  // Claude Code 2.1.328's default for an API key with no model set.
  anthropic('claude-opus-5-5', 'Claude Opus 5.5', 1_000_000, 128_000),
  anthropic('claude-opus-5', 'Claude Opus 5', 1_000_000, 128_000),
  anthropic('claude-sonnet-5-5', 'Claude Sonnet 5.5', 1_000_000, 128_000),
  anthropic('claude-haiku-5-5', 'Claude Haiku 5.5', 1_000_000, 128_000),
  anthropic('claude-opus-4-7', 'Claude Opus 4.7', 1_000_000, 128_000),
  anthropic('claude-sonnet-4-6', 'Claude Sonnet 4.6', 1_000_000, 64_000),
  // fleetbench's agents run Claude Code with this one (src/agents/catalog.ts).
  anthropic('claude-sonnet-4-5-20250929', 'Claude Sonnet 4.5', 200_000, 64_000, ['claude-sonnet-4-5']),
  anthropic('claude-haiku-4-5-20251001', 'Claude Haiku 4.5', 200_000, 64_000, ['claude-haiku-4-5']),
  // codex 0.169.0's default with no model set.
  openai('gpt-6.1-sol', 'GPT-6.1 Sol', 1_050_000, 128_000),
  // fleetbench's agents run codex with this one (src/agents/catalog.ts).
  openai('gpt-5.5', 'GPT-5.5', 1_050_000, 128_000, { aliases: ['gpt-5.5-2026-04-23'] }),
  // What else the vendors document as served through their APIs, for control planes of any
  // kind (their SDKs, their models): each row's source in docs/provider-emulator.md, "Models".
  anthropic('claude-opus-4-8', 'Claude Opus 4.8', 1_000_000, 128_000),
  anthropic('claude-opus-4-6', 'Claude Opus 4.6', 1_000_000, 128_000),
  anthropic('claude-opus-4-5-20251101', 'Claude Opus 4.5', 200_000, 64_000, ['claude-opus-4-5']),
  anthropic('claude-sonnet-5', 'Claude Sonnet 5', 1_000_000, 128_000),
  openai('gpt-6.1-terra', 'GPT-6.1 Terra', 1_050_000, 128_000),
  openai('gpt-6-astra', 'GPT-6 Astra', 1_050_000, 128_000),
  openai('gpt-5.6-sol', 'GPT-5.6 Sol', 1_050_000, 128_000, { aliases: ['gpt-5.6'] }),
  openai('gpt-5.6-luna', 'GPT-5.6 Luna', 1_050_000, 128_000),
  openai('gpt-6-sol', 'GPT-6 Sol', 1_050_000, 128_000),
  openai('gpt-6-luna', 'GPT-6 Luna', 1_050_000, 128_000),
  openai('gpt-5.4', 'GPT-5.4', 1_050_000, 128_000),
  openai('gpt-5.4-mini', 'GPT-5.4 mini', 400_000, 128_000, { aliases: ['gpt-5.4-mini-2026-03-17'] }),
  openai('gpt-5.4-nano', 'GPT-5.4 nano', 400_000, 128_000, { aliases: ['gpt-5.4-nano-2026-03-17'] }),
  openai('gpt-5.3-codex', 'GPT-5.3-Codex', 400_000, 128_000),
  openai('gpt-5.2', 'GPT-5.2', 400_000, 128_000, { aliases: ['gpt-5.2-2025-12-11'] }),
  openai('gpt-5.1', 'GPT-5.1', 400_000, 128_000, { aliases: ['gpt-5.1-2025-11-13'] }),
  openai('gpt-5', 'GPT-5', 400_000, 128_000, { aliases: ['gpt-5-2025-08-07'] }),
  openai('gpt-5-mini', 'GPT-5 mini', 400_000, 128_000, { aliases: ['gpt-5-mini-2025-08-07'] }),
  openai('gpt-5-nano', 'GPT-5 nano', 400_000, 128_000, { aliases: ['gpt-5-nano-2025-08-07'] }),
  openai('o3', 'o3', 200_000, 100_000, { aliases: ['o3-2025-04-16'], input: 'whole-window' }),
  openai('gpt-4.1', 'GPT-4.1', 1_047_576, 32_768, { aliases: ['gpt-4.1-2025-04-14'], input: 'whole-window' }),
  openai('gpt-4.1-mini', 'GPT-4.1 mini', 1_047_576, 32_768, {
    aliases: ['gpt-4.1-mini-2025-04-14'],
    input: 'whole-window',
  }),
  openai('gpt-4o', 'GPT-4o', 128_000, 16_384, {
    aliases: ['gpt-4o-2024-08-06', 'gpt-4o-2024-11-20'],
    input: 'whole-window',
  }),
  openai('gpt-4o-mini', 'GPT-4o mini', 128_000, 16_384, {
    aliases: ['gpt-4o-mini-2024-07-18'],
    input: 'whole-window',
  }),
];

/**
 * fleetbench's own model name (opencode is configured with it, as any OpenAI-compatible
 * provider's model): no vendor's, with a window as large as the largest above.
 */
export const FLEETBENCH_MODEL: ModelInfo = {
  ...openai('fleetbench-model', 'fleetbench model', 1_050_000, 128_000),
  ownedBy: 'fleetbench',
};

const BY_NAME = new Map<string, ModelInfo>();
for (const model of [...MODELS, FLEETBENCH_MODEL]) {
  BY_NAME.set(model.id, model);
  for (const alias of model.aliases ?? []) BY_NAME.set(alias, model);
}

/** The model a request names, by id or alias; undefined when the table has none by that name. */
export function modelNamed(name: string): ModelInfo | undefined {
  return BY_NAME.get(name);
}

/**
 * An OpenAI fine-tune's model: `ft:BASE:ORG:SUFFIX:ID` (SUFFIX may be empty) is served with
 * BASE's limits when BASE is an OpenAI model of the table (by id or alias), as OpenAI serves a
 * fine-tune with its base's window and cap; undefined for any other name.
 */
function fineTuneOf(name: string, byName: ReadonlyMap<string, ModelInfo>): ModelInfo | undefined {
  // OpenAI's form: five parts, the suffix may be empty, the job's id not.
  const parts = name.split(':');
  if (parts.length !== 5 || parts[0] !== 'ft' || !parts[4]) return undefined;
  const [, base = '', org = ''] = parts;
  const model = byName.get(base);
  if (model?.vendor !== 'openai' || model === FLEETBENCH_MODEL) return undefined;
  return {
    ...model,
    id: name,
    aliases: [],
    displayName: `${model.displayName} fine-tune`,
    ownedBy: org || 'user',
  };
}

/**
 * A model the user adds (`provider serve --model`, a scenario's `provider.models`): one the
 * table lacks (a model released after this fleetbench, a fine-tune). Limits not given are a
 * fine-tune's base's, else the largest window of the table with no output cap below it.
 */
export interface ExtraModel {
  name: string;
  contextWindow?: number | undefined;
  maxOutputTokens?: number | undefined;
}

/** A name of printable characters, no space and no `=` (what separates the limits in a flag). */
const EXTRA_NAME = /^[!-<>-~]+$/;

/**
 * `NAME[=WINDOW[/CAP]]` as `--model` and `provider.models` take it, or the reason it is refused
 * (naming the bound, docs/limits.md).
 */
export function parseModelSpec(text: string): ExtraModel | string {
  const at = text.indexOf('=');
  const name = at < 0 ? text : text.slice(0, at);
  if (name.length === 0 || name.length > PROVIDER_LIMITS.maxModelNameChars || !EXTRA_NAME.test(name))
    return `expected NAME[=WINDOW[/CAP]], NAME 1 to ${PROVIDER_LIMITS.maxModelNameChars} printable characters without spaces or '=' (docs/limits.md)`;
  if (BY_NAME.has(name))
    return `${name} is already a model of the table, with its vendor's limits (docs/provider-emulator.md, "Models")`;
  if (at < 0) return { name };
  const [windowText = '', capText] = text.slice(at + 1).split('/', 2);
  const contextWindow = Number(windowText);
  const maxOutputTokens = capText === undefined ? contextWindow : Number(capText);
  const max = PROVIDER_LIMITS.maxModelContextWindow;
  if (!/^\d+$/.test(windowText) || contextWindow < 1 || contextWindow > max)
    return `WINDOW: expected a whole number of tokens from 1 to ${max} (docs/limits.md)`;
  if (
    capText !== undefined &&
    (!/^\d+$/.test(capText) || maxOutputTokens < 1 || maxOutputTokens > contextWindow)
  )
    return `CAP: expected a whole number of tokens from 1 to the window, ${contextWindow} (docs/limits.md)`;
  return { name, contextWindow, maxOutputTokens };
}

/**
 * Several `NAME[=WINDOW[/CAP]]`, or the first one's reason (with its index) and a name given twice
 * or too many refused: what `--model` and `provider.models` share.
 */
export function parseModelSpecs(texts: readonly string[]): ExtraModel[] | { index: number; reason: string } {
  if (texts.length > PROVIDER_LIMITS.maxAddedModels)
    return {
      index: PROVIDER_LIMITS.maxAddedModels,
      reason: `at most ${PROVIDER_LIMITS.maxAddedModels} models (docs/limits.md)`,
    };
  const models: ExtraModel[] = [];
  const seen = new Set<string>();
  for (const [index, text] of texts.entries()) {
    const model = parseModelSpec(text);
    if (typeof model === 'string') return { index, reason: model };
    if (seen.has(model.name)) return { index, reason: `${model.name} is given twice` };
    seen.add(model.name);
    models.push(model);
  }
  return models;
}

/**
 * The models one emulator serves: the table, the user's added models, and OpenAI fine-tunes of
 * the table's models. Any other name is the vendor's 404 (docs/provider-emulator.md, "Models").
 */
export class ModelTable {
  private readonly added = new Map<string, ModelInfo>();
  /** The model lists' `data`: the table's, then the added ones in the order given. */
  readonly listed: readonly ModelInfo[];

  constructor(extra: readonly ExtraModel[] = []) {
    if (extra.length > PROVIDER_LIMITS.maxAddedModels)
      throw new Error(`at most ${PROVIDER_LIMITS.maxAddedModels} added models (docs/limits.md)`);
    for (const spec of extra) {
      if (BY_NAME.has(spec.name)) throw new Error(`${spec.name} is already a model of the table`);
      this.added.set(spec.name, addedModel(spec));
    }
    this.listed = [...LISTED_MODELS, ...this.added.values()];
  }

  /** The model a request names, or undefined: the vendor's 404. */
  named(name: string): ModelInfo | undefined {
    return BY_NAME.get(name) ?? this.added.get(name) ?? fineTuneOf(name, BY_NAME);
  }
}

/** An added model: Anthropic's when its name is a Claude one, else OpenAI's. */
function addedModel(spec: ExtraModel): ModelInfo {
  const base = fineTuneOf(spec.name, BY_NAME);
  if (base && spec.contextWindow === undefined) return base;
  const contextWindow = spec.contextWindow ?? FLEETBENCH_MODEL.contextWindow;
  const maxOutputTokens = Math.min(spec.maxOutputTokens ?? contextWindow, contextWindow);
  const model = spec.name.startsWith('claude')
    ? anthropic(spec.name, spec.name, contextWindow, maxOutputTokens)
    : // Its split is not known: the prompt alone is counted against the window, so nothing a
      // real model might take is refused.
      openai(spec.name, spec.name, contextWindow, maxOutputTokens, { input: 'whole-window' });
  return { ...model, ownedBy: base?.ownedBy ?? 'fleetbench' };
}

/** Every model the table serves, in its order (the model lists' `data`). */
export const LISTED_MODELS: readonly ModelInfo[] = [...MODELS, FLEETBENCH_MODEL];

/**
 * The `created` / `created_at` every listed model reports: fleetbench's, not a vendor's release
 * date (the lists' clients read ids and limits, not dates).
 */
export const MODEL_CREATED = '2026-01-01T00:00:00Z';
