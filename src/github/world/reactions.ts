/**
 * Reactions on issues, pull requests (their issue) and issue comments, as a bot acknowledges the
 * work it takes (👀 on the issue, or on the comment that asked): GitHub keeps one reaction of each
 * content per user on a subject, so adding one twice gives back the first. Each subject holds at
 * most one reaction per user and content, so the world's users bound them.
 */
import { GitHubStateError, nodeId, type User } from './objects.ts';
import type { WorldTime } from './time.ts';

/** GitHub's eight reaction contents, in the order its rollup lists them. */
export const REACTION_CONTENTS = [
  '+1',
  '-1',
  'laugh',
  'confused',
  'heart',
  'hooray',
  'rocket',
  'eyes',
] as const;
export type ReactionContent = (typeof REACTION_CONTENTS)[number];

export interface Reaction {
  id: number;
  nodeId: string;
  user: User;
  content: ReactionContent;
  createdAt: number;
}

/** What reactions are held on: an issue (or pull request) or an issue comment. */
export type ReactionSubject = object;

/** GraphQL's name of each content (`ReactionContent`), in GitHub's order of the enum. */
export const GRAPHQL_REACTIONS: ReadonlyArray<readonly [string, ReactionContent]> = [
  ['THUMBS_UP', '+1'],
  ['THUMBS_DOWN', '-1'],
  ['LAUGH', 'laugh'],
  ['HOORAY', 'hooray'],
  ['CONFUSED', 'confused'],
  ['HEART', 'heart'],
  ['ROCKET', 'rocket'],
  ['EYES', 'eyes'],
];

export function isReactionContent(value: unknown): value is ReactionContent {
  return typeof value === 'string' && (REACTION_CONTENTS as readonly string[]).includes(value);
}

export class Reactions {
  private readonly bySubject = new WeakMap<ReactionSubject, Reaction[]>();

  constructor(private readonly time: WorldTime) {}

  /** The subject's reactions, oldest first. */
  of(subject: ReactionSubject): readonly Reaction[] {
    return this.bySubject.get(subject) ?? [];
  }

  /** Adds `user`'s `content` reaction; the one already there when they gave it before (`created` false). */
  add(
    subject: ReactionSubject,
    user: User,
    content: ReactionContent,
  ): { reaction: Reaction; created: boolean } {
    const list = this.bySubject.get(subject) ?? [];
    const had = list.find((r) => r.user === user && r.content === content);
    if (had !== undefined) return { reaction: had, created: false };
    const id = this.time.id();
    const reaction: Reaction = { id, nodeId: nodeId('REA', id), user, content, createdAt: this.time.now() };
    list.push(reaction);
    this.bySubject.set(subject, list);
    return { reaction, created: true };
  }

  /** Deletes `user`'s `content` reaction; the one deleted, or undefined when they had none. */
  remove(subject: ReactionSubject, user: User, content: ReactionContent): Reaction | undefined {
    const list = this.bySubject.get(subject) ?? [];
    const at = list.findIndex((r) => r.user === user && r.content === content);
    return at < 0 ? undefined : list.splice(at, 1)[0];
  }

  /** Deletes the subject's reaction `id` (404 when it has none of that id). */
  delete(subject: ReactionSubject, id: number): void {
    const list = this.bySubject.get(subject) ?? [];
    const at = list.findIndex((r) => r.id === id);
    if (at < 0) throw new GitHubStateError(404, 'Not Found');
    list.splice(at, 1);
  }

  /** GitHub's rollup of a subject's reactions (`reactions` on an issue or comment). */
  rollup(subject: ReactionSubject, url: string): Record<string, unknown> {
    const counts: Record<string, number> = Object.fromEntries(REACTION_CONTENTS.map((c) => [c, 0]));
    const list = this.of(subject);
    for (const r of list) counts[r.content] = (counts[r.content] ?? 0) + 1;
    return {
      url,
      total_count: list.length,
      '+1': counts['+1'],
      '-1': counts['-1'],
      laugh: counts.laugh,
      hooray: counts.hooray,
      confused: counts.confused,
      heart: counts.heart,
      rocket: counts.rocket,
      eyes: counts.eyes,
    };
  }
}
