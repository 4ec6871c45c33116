/**
 * GitHub's bounds on what an issue or pull request holds: a title of at most 256 characters
 * ("title is too long (maximum is 256 characters)"), labels named in at most 50 ("name is too
 * long (maximum is 50 characters)"), at most 100 labels on one issue (GitHub's documentation on
 * applying labels).
 */
export const ISSUE_BOUNDS = { maxTitleChars: 256, maxLabelNameChars: 50, maxLabels: 100 } as const;
