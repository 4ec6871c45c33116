/**
 * A repository's labels: a table of their own, as on GitHub, created over REST
 * (`POST …/labels`), declared in fixtures, or made by naming a new one on an issue. Renaming or
 * recolouring a label changes every issue that carries it (the issue holds the label object);
 * deleting one takes it off them. Names are case-insensitive, as GitHub's: `Bug` finds `bug`, and
 * creating `BUG` beside `bug` is `already_exists`.
 */
import { ISSUE_BOUNDS, LABEL_BOUNDS } from './bounds.ts';
import { GitHubStateError, type Issue, type Label, nodeId, type Repo } from './objects.ts';
import type { WorldTime } from './time.ts';

/** The color GitHub gives a label made by naming it on an issue. */
export const NAMED_LABEL_COLOR = 'ededed';

/** A refusal REST answers with `Validation Failed` and GitHub's error code (`already_exists`, `invalid`). */
function refused(message: string, field: string, code: string): GitHubStateError {
  return new GitHubStateError(422, message, field, code);
}

/** A label name GitHub takes: 1 to 50 characters, not blank. */
export function checkLabelName(name: string, field: string): void {
  if (name.trim() === '') throw new GitHubStateError(422, "name can't be blank", field);
  if (name.length > ISSUE_BOUNDS.maxLabelNameChars)
    throw new GitHubStateError(
      422,
      `name is too long (maximum is ${ISSUE_BOUNDS.maxLabelNameChars} characters)`,
      field,
    );
}

/** A color as GitHub takes it: six hex digits, a leading `#` dropped. */
function checkColor(color: string): string {
  const bare = color.startsWith('#') ? color.slice(1) : color;
  if (!/^[0-9a-fA-F]{6}$/.test(bare)) throw refused('color is invalid', 'color', 'invalid');
  return bare;
}

function checkDescription(description: string | null): string | null {
  if (description !== null && description.length > LABEL_BOUNDS.maxDescriptionChars)
    throw refused(
      `description is too long (maximum is ${LABEL_BOUNDS.maxDescriptionChars} characters)`,
      'description',
      'invalid',
    );
  return description;
}

export interface LabelInput {
  name: string;
  color?: string;
  description?: string | null;
}

export class Labels {
  constructor(private readonly time: WorldTime) {}

  find(repo: Repo, name: string): Label | undefined {
    return repo.labels.get(name.toLowerCase());
  }

  /** A new label in the repository's table; 422 `already_exists` for a name it has in any case. */
  create(repo: Repo, input: LabelInput, defaultColor = NAMED_LABEL_COLOR): Label {
    checkLabelName(input.name, 'name');
    if (this.find(repo, input.name)) throw refused('Name has already been taken', 'name', 'already_exists');
    if (repo.labels.size >= LABEL_BOUNDS.maxPerRepo)
      throw refused(`a repository can have at most ${LABEL_BOUNDS.maxPerRepo} labels`, 'name', 'invalid');
    const id = this.time.id();
    const label: Label = {
      id,
      nodeId: nodeId('LA', id),
      name: input.name,
      color: checkColor(input.color ?? defaultColor),
      description: checkDescription(input.description ?? null),
    };
    repo.labels.set(label.name.toLowerCase(), label);
    repo.labelsVersion = this.time.bump();
    return label;
  }

  /** The labels of these names, the missing ones made (by default in GitHub's color for a label named on an issue). */
  ensure(
    repo: Repo,
    names: readonly string[],
    colorOf: (name: string) => string = () => NAMED_LABEL_COLOR,
  ): Label[] {
    return names.map((name) => this.find(repo, name) ?? this.create(repo, { name }, colorOf(name)));
  }

  /** A label renamed, recoloured or redescribed; returns the issues carrying it (their bodies change). */
  update(repo: Repo, label: Label, input: Partial<LabelInput>): Issue[] {
    const color = input.color === undefined ? label.color : checkColor(input.color);
    const description =
      input.description === undefined ? label.description : checkDescription(input.description);
    if (input.name !== undefined && input.name !== label.name) {
      checkLabelName(input.name, 'name');
      const other = this.find(repo, input.name);
      if (other && other !== label) throw refused('Name has already been taken', 'name', 'already_exists');
      repo.labels.delete(label.name.toLowerCase());
      label.name = input.name;
      repo.labels.set(label.name.toLowerCase(), label);
    }
    label.color = color;
    label.description = description;
    repo.labelsVersion = this.time.bump();
    return carrying(repo, label);
  }

  /** A label deleted from the repository and taken off every issue; returns those issues. */
  delete(repo: Repo, label: Label): Issue[] {
    repo.labels.delete(label.name.toLowerCase());
    const issues = carrying(repo, label);
    for (const issue of issues) issue.labels = issue.labels.filter((l) => l !== label);
    repo.labelsVersion = this.time.bump();
    return issues;
  }
}

function carrying(repo: Repo, label: Label): Issue[] {
  return [...repo.issues.values()].filter((issue) => issue.labels.includes(label));
}
