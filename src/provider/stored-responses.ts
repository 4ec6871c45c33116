/**
 * The Responses API's stored responses (docs/provider-emulator.md, "Stored responses"). OpenAI
 * keeps a response made with `store` (its default) so that a later request can go on from it
 * with `previous_response_id` instead of sending the conversation again, refer to its output
 * items (`item_reference`), and read it back (`GET /v1/responses/{id}`) or delete it. Going on
 * from a response costs as much input as sending its whole context again: the vendor counts the
 * previous turns as the request's input.
 *
 * Each response keeps only its own items (its request's input, without its `instructions`, which
 * OpenAI does not carry over, and its output) and a link to the response it went on from, so a
 * long chain is not copied at every turn. Bounded (PROVIDER_LIMITS.storedResponses) in responses
 * kept and in what they hold: each response's items are counted once (their characters and
 * ITEM_OVERHEAD each), however many later responses reach them, and stay until no kept response
 * does. The least recently used is forgotten first (going on from a response uses it).
 */
import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { ConversationItem } from './conversation.ts';
import type { RenderInput } from './render.ts';

/** What an item costs the bound beyond its characters: it is an object, not only its text. */
export const ITEM_OVERHEAD = 64;

export interface StoredResponse {
  id: string;
  /** The response it went on from (undefined: the first of its chain). */
  previous: StoredResponse | undefined;
  /** Its request's own items (no instructions), then its output. */
  items: ConversationItem[];
  /** What its own items count against the bound. */
  ownChars: number;
  /** Items in its chain, this response's and every one's before it. */
  chainItems: number;
  /** What renders it whole again, for `GET /v1/responses/{id}`. */
  render: RenderInput;
  /** Its output items by their ids (what an `item_reference` names). */
  outputs: ReadonlyArray<[string, ConversationItem]>;
  /** Kept responses and later responses that reach it: held while any is. */
  holders: number;
}

/** Characters an item holds, and its overhead: what the bound counts. */
function itemChars(item: ConversationItem): number {
  switch (item.kind) {
    case 'tool-call':
      return ITEM_OVERHEAD + item.name.length + item.args.length + item.callId.length;
    case 'tool-result':
      return ITEM_OVERHEAD + item.callId.length + item.text.length;
    default:
      return ITEM_OVERHEAD + item.text.length;
  }
}

export class StoredResponses {
  /** The kept responses, least recently used first. */
  private readonly byId = new Map<string, StoredResponse>();
  /** The kept responses' output items by their ids (`msg_…`, `fc_…`), for `item_reference`. */
  private readonly items = new Map<string, ConversationItem>();
  /** What every held response (kept, or reached by a kept one) counts against the bound. */
  private held = 0;
  private readonly maxResponses: number;
  private readonly maxChars: number;

  constructor(limits: { maxResponses: number; maxChars: number } = PROVIDER_LIMITS.storedResponses) {
    this.maxResponses = limits.maxResponses;
    this.maxChars = limits.maxChars;
  }

  /** A kept response; `use` marks it the most recently used (a request goes on from it). */
  get(id: string, use = false): StoredResponse | undefined {
    const response = this.byId.get(id);
    if (response !== undefined && use) {
      this.byId.delete(id);
      this.byId.set(id, response);
    }
    return response;
  }

  /** An output item of a kept response, by its id. */
  item(id: string): ConversationItem | undefined {
    return this.items.get(id);
  }

  /** What the held responses count against the bound (for the tests). */
  heldChars(): number {
    return this.held;
  }

  /**
   * Keeps a response. One whose own items alone are over the bound is not kept (a later request
   * naming it is told it is not found, as for one made with `store: false`).
   */
  put(
    id: string,
    previous: StoredResponse | undefined,
    items: ConversationItem[],
    render: RenderInput,
    outputs: ReadonlyArray<[string, ConversationItem]> = [],
  ): void {
    let ownChars = 0;
    for (const item of items) ownChars += itemChars(item);
    if (ownChars > this.maxChars) return;
    this.delete(id);
    const response: StoredResponse = {
      id,
      previous,
      items,
      ownChars,
      chainItems: (previous?.chainItems ?? 0) + items.length,
      render,
      outputs,
      holders: 1,
    };
    if (previous !== undefined) previous.holders += 1;
    this.byId.set(id, response);
    for (const [itemId, item] of outputs) this.items.set(itemId, item);
    this.held += ownChars;
    for (const oldest of this.byId.keys()) {
      if (this.byId.size <= this.maxResponses && this.held <= this.maxChars) break;
      this.delete(oldest);
    }
  }

  /** Forgets a response (and its output items); false when it was not kept. */
  delete(id: string): boolean {
    const response = this.byId.get(id);
    if (response === undefined) return false;
    this.byId.delete(id);
    for (const [itemId] of response.outputs) this.items.delete(itemId);
    this.release(response);
    return true;
  }

  /** One holder fewer: a response no kept one reaches any more is let go, and so on back its chain. */
  private release(response: StoredResponse): void {
    for (let r: StoredResponse | undefined = response; r !== undefined; r = r.previous) {
      r.holders -= 1;
      if (r.holders > 0) return;
      this.held -= r.ownChars;
    }
  }
}
