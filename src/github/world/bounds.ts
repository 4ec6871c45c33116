/**
 * GitHub's bounds on what an issue or pull request holds: a title of at most 256 characters
 * ("title is too long (maximum is 256 characters)"), labels named in at most 50 ("name is too
 * long (maximum is 50 characters)"), at most 100 labels on one issue (GitHub's documentation on
 * applying labels), at most 10 assignees (REST "Add assignees to an issue": "Adds up to 10
 * assignees"; names past the tenth are dropped without an error, as GitHub does).
 */
export const ISSUE_BOUNDS = {
  maxTitleChars: 256,
  maxLabelNameChars: 50,
  maxLabels: 100,
  maxAssignees: 10,
  /**
   * An issue comment's body written through the API, in characters (code points): GitHub's
   * answer past it is `body is too long (maximum is 65536 characters)` (documented by its
   * answers, as the title's bound). The admin API and fixtures are not bounded: they build worlds.
   */
  maxCommentChars: 65_536,
} as const;

/** Whether `text` has more than `max` characters (code points), reading at most `max + 1` of them. */
export function longerThan(text: string, max: number): boolean {
  // A code point is one or two UTF-16 units: within `max` units it is within `max` characters.
  if (text.length <= max) return false;
  let count = 0;
  for (const _ of text) if (++count > max) return true;
  return false;
}

/**
 * A repository's labels: a description of at most 100 characters (GitHub's REST description:
 * "Must be 100 characters or fewer"), a six-hex-digit color; at most 1,000 labels in one
 * repository, the emulator's own bound (GitHub documents none; each is kept for the run).
 */
export const LABEL_BOUNDS = { maxDescriptionChars: 100, maxPerRepo: 1_000 } as const;

/**
 * A repository's milestones (docs/limits.md): a title of at most 255 characters, a description
 * of at most 65,536 and at most 10,000 milestones in one repository (the emulator's own: GitHub
 * documents none; each is kept for the run, and a repository's issues are read to count one's).
 */
export const MILESTONE_BOUNDS = {
  maxTitleChars: 255,
  maxDescriptionChars: 65_536,
  maxPerRepo: 10_000,
} as const;

/**
 * A repository's releases (docs/limits.md): a body of at most 125,000 characters (GitHub's
 * answer past it: `body is too long (maximum is 125000 characters)`); a name of at most 1,024
 * characters and at most 10,000 releases in one repository (the emulator's own: GitHub documents
 * neither; each release is kept for the run and the list is sorted on a change).
 */
export const RELEASE_BOUNDS = { maxBodyChars: 125_000, maxNameChars: 1_024, maxPerRepo: 10_000 } as const;

/**
 * What the contents and Git data APIs take and give (docs/limits.md, "GitHub emulator"):
 * - a blob of at most 100 MiB (GitHub's "Get a blob": "supports blobs up to 100 megabytes"; its
 *   contents API: "Greater than 100 MB: This endpoint is not supported"); a write's body is bounded
 *   far below by the emulator's 5 MiB request body;
 * - a file's `content` inline up to 1 MiB ("1 MB or smaller: All features of this endpoint are
 *   supported"; above, `content` is empty and `encoding` is `none`);
 * - a directory listed with at most 1,000 entries ("an upper limit of 1,000 files for a directory");
 * - a recursive tree of at most 100,000 entries and 7 MB ("The limit for the `tree` array is
 *   100,000 entries with a maximum size of 7 MB"), past which `truncated` is true;
 * - a path of at most 4,096 bytes and a name of at most 255 (git's and file systems' PATH_MAX and
 *   NAME_MAX: the emulator's own, GitHub documents none), at most 100,000 entries a created tree;
 * - one tree edit (a contents write, `POST git/trees`, `createCommitOnBranch`) reads and writes at
 *   most 1,000,000 tree entries, each tree counting 64 more (the emulator's own: the work of one
 *   request, bounded so it holds the event loop well under a second);
 * - a branch made through the API (`POST git/refs`, GraphQL `createRef`) only while the repository
 *   has fewer than 100,000 (the emulator's own: GitHub's "Repository limits" recommends at most
 *   5,000 branches; `git/matching-refs` lists them all, unpaged, and GraphQL aliases made 700 at a
 *   request without end);
 * - at most 1 GiB of objects the API made, across the world (the emulator's own: each is kept in
 *   memory for the run; GitHub recommends repositories under 1 GB), counted as memory keeps
 *   them (git-store.ts `keepingCost`: a tiny object costs hundreds of bytes, not its body's few).
 */
export const GIT_BOUNDS = {
  maxBlobBytes: 100 * 1024 * 1024,
  inlineContentBytes: 1024 * 1024,
  maxDirectoryEntries: 1_000,
  maxRecursiveEntries: 100_000,
  maxRecursiveBytes: 7 * 1000 * 1000,
  maxPathBytes: 4_096,
  maxNameBytes: 255,
  maxTreeEntries: 100_000,
  maxEditWork: 1_000_000,
  maxStoreBytes: 1024 * 1024 * 1024,
  /** A commit's parents through `POST git/commits` (the emulator's own; git has no limit, and the largest octopus merge in Linux has 66). */
  maxParents: 1_000,
  maxBranches: 100_000,
  /** Tags made through the API (`POST git/refs` of `refs/tags/…`), as branches are. */
  maxTags: 100_000,
  /**
   * Branches and tags one git push creates, moves or deletes (GitHub sets none by default; its
   * push policy, when a repository turns it on, refuses the whole push past its number, as this
   * does). git took 4-5 s for a push of 1,000 new branches here, through the per-ref hook.
   */
  maxPushRefUpdates: 1_000,
} as const;
