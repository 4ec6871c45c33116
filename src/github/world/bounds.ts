/**
 * GitHub's bounds on what an issue or pull request holds: a title of at most 256 characters
 * ("title is too long (maximum is 256 characters)"), labels named in at most 50 ("name is too
 * long (maximum is 50 characters)"), at most 100 labels on one issue (GitHub's documentation on
 * applying labels).
 */
export const ISSUE_BOUNDS = { maxTitleChars: 256, maxLabelNameChars: 50, maxLabels: 100 } as const;

/**
 * A repository's labels: a description of at most 100 characters (GitHub's REST description:
 * "Must be 100 characters or fewer"), a six-hex-digit color; at most 1,000 labels in one
 * repository, the emulator's own bound (GitHub documents none; each is kept for the run).
 */
export const LABEL_BOUNDS = { maxDescriptionChars: 100, maxPerRepo: 1_000 } as const;
