/**
 * The GraphQL subset, in GitHub's type and field names: what orchestrators ask for (repository,
 * pullRequest with state, mergeable, reviewDecision, commits → statusCheckRollup contexts,
 * reviewThreads, reviews, files; search; rateLimit) and what `gh pr list/view/checks/status` and
 * `gh issue list/view` query, and the mutations `gh pr create/comment/review/merge/close/edit/ready`
 * and `gh issue create/comment/edit` send, with GitHub's input and payload types. Fields a client might select but the
 * emulator has no data for resolve to empty values.
 */
export const SDL = /* GraphQL */ `
scalar DateTime
scalar URI
scalar GitObjectID
scalar HTML
scalar Date

type Query {
  repository(owner: String!, name: String!, followRenames: Boolean): Repository
  rateLimit(dryRun: Boolean): RateLimit
  viewer: User!
  user(login: String!): User
  repositoryOwner(login: String!): RepositoryOwner
  organization(login: String!): Organization
  node(id: ID!): Node
  nodes(ids: [ID!]!): [Node]!
  search(query: String!, type: SearchType!, first: Int, last: Int, after: String, before: String): SearchResultItemConnection!
}

enum SearchType { ISSUE ISSUE_ADVANCED REPOSITORY USER DISCUSSION }
union SearchResultItem = Issue | PullRequest | Repository | User | Organization
type TextMatchHighlight { beginIndice: Int!, endIndice: Int!, text: String! }
type TextMatch { fragment: String!, highlights: [TextMatchHighlight!]!, property: String! }
type SearchResultItemEdge { cursor: String!, node: SearchResultItem, textMatches: [TextMatch] }
type SearchResultItemConnection { codeCount: Int!, discussionCount: Int!, issueCount: Int!, repositoryCount: Int!, userCount: Int!, wikiCount: Int!, edges: [SearchResultItemEdge], nodes: [SearchResultItem], pageInfo: PageInfo! }

type Mutation {
  createPullRequest(input: CreatePullRequestInput!): CreatePullRequestPayload
  createIssue(input: CreateIssueInput!): CreateIssuePayload
  addComment(input: AddCommentInput!): AddCommentPayload
  updateIssueComment(input: UpdateIssueCommentInput!): UpdateIssueCommentPayload
  addReaction(input: AddReactionInput!): AddReactionPayload
  requestReviews(input: RequestReviewsInput!): RequestReviewsPayload
  removeReaction(input: RemoveReactionInput!): RemoveReactionPayload
  deleteIssueComment(input: DeleteIssueCommentInput!): DeleteIssueCommentPayload
  addPullRequestReview(input: AddPullRequestReviewInput!): AddPullRequestReviewPayload
  mergePullRequest(input: MergePullRequestInput!): MergePullRequestPayload
  closePullRequest(input: ClosePullRequestInput!): ClosePullRequestPayload
  reopenPullRequest(input: ReopenPullRequestInput!): ReopenPullRequestPayload
  updatePullRequest(input: UpdatePullRequestInput!): UpdatePullRequestPayload
  markPullRequestReadyForReview(input: MarkPullRequestReadyForReviewInput!): MarkPullRequestReadyForReviewPayload
  convertPullRequestToDraft(input: ConvertPullRequestToDraftInput!): ConvertPullRequestToDraftPayload
  enablePullRequestAutoMerge(input: EnablePullRequestAutoMergeInput!): EnablePullRequestAutoMergePayload
  disablePullRequestAutoMerge(input: DisablePullRequestAutoMergeInput!): DisablePullRequestAutoMergePayload
  addLabelsToLabelable(input: AddLabelsToLabelableInput!): AddLabelsToLabelablePayload
  removeLabelsFromLabelable(input: RemoveLabelsFromLabelableInput!): RemoveLabelsFromLabelablePayload
  updateIssue(input: UpdateIssueInput!): UpdateIssuePayload
  closeIssue(input: CloseIssueInput!): CloseIssuePayload
  reopenIssue(input: ReopenIssueInput!): ReopenIssuePayload
  createRef(input: CreateRefInput!): CreateRefPayload
  updateRef(input: UpdateRefInput!): UpdateRefPayload
  deleteRef(input: DeleteRefInput!): DeleteRefPayload
  createCommitOnBranch(input: CreateCommitOnBranchInput!): CreateCommitOnBranchPayload
}

scalar Base64String
input CreateRefInput { repositoryId: ID!, name: String!, oid: GitObjectID!, clientMutationId: String }
type CreateRefPayload { clientMutationId: String, ref: Ref }
input UpdateRefInput { refId: ID!, oid: GitObjectID!, force: Boolean, clientMutationId: String }
type UpdateRefPayload { clientMutationId: String, ref: Ref }
input DeleteRefInput { refId: ID!, clientMutationId: String }
type DeleteRefPayload { clientMutationId: String }
input CommittableBranch { id: ID, repositoryNameWithOwner: String, branchName: String }
input CommitMessage { headline: String!, body: String }
input FileAddition { path: String!, contents: Base64String! }
input FileDeletion { path: String! }
input FileChanges { additions: [FileAddition!], deletions: [FileDeletion!] }
input CreateCommitOnBranchInput { branch: CommittableBranch!, expectedHeadOid: GitObjectID!, message: CommitMessage!, fileChanges: FileChanges, clientMutationId: String }
type CreateCommitOnBranchPayload { clientMutationId: String, commit: Commit, ref: Ref }

input CreatePullRequestInput { repositoryId: ID!, baseRefName: String!, headRefName: String!, headRepositoryId: ID, title: String!, body: String, maintainerCanModify: Boolean, draft: Boolean, clientMutationId: String }
type CreatePullRequestPayload { clientMutationId: String, pullRequest: PullRequest }
input CreateIssueInput { repositoryId: ID!, title: String!, body: String, assigneeIds: [ID!], labelIds: [ID!], milestoneId: ID, projectIds: [ID!], projectV2Ids: [ID!], issueTemplate: String, issueTypeId: ID, parentIssueId: ID, clientMutationId: String }
type CreateIssuePayload { clientMutationId: String, issue: Issue }

input AddCommentInput { body: String!, clientMutationId: String, subjectId: ID! }
type AddCommentPayload { clientMutationId: String, commentEdge: IssueCommentEdge, subject: Node, timelineEdge: IssueTimelineItemEdge }
input UpdateIssueCommentInput { body: String!, clientMutationId: String, id: ID! }
type UpdateIssueCommentPayload { clientMutationId: String, issueComment: IssueComment }
input DeleteIssueCommentInput { clientMutationId: String, id: ID! }
input AddReactionInput { clientMutationId: String, content: ReactionContent!, subjectId: ID! }
input RequestReviewsInput { clientMutationId: String, pullRequestId: ID!, userIds: [ID!], teamIds: [ID!], botIds: [ID!], union: Boolean }
type RequestReviewsPayload { clientMutationId: String, pullRequest: PullRequest }
input RemoveReactionInput { clientMutationId: String, content: ReactionContent!, subjectId: ID! }
type AddReactionPayload { clientMutationId: String, reaction: Reaction, subject: Node }
type RemoveReactionPayload { clientMutationId: String, reaction: Reaction, subject: Node }
type Reaction implements Node { id: ID!, databaseId: Int, content: ReactionContent!, createdAt: DateTime!, user: User }
type DeleteIssueCommentPayload { clientMutationId: String }
type IssueTimelineItemEdge { cursor: String!, node: IssueComment }

enum PullRequestReviewEvent { APPROVE COMMENT DISMISS REQUEST_CHANGES }
input DraftPullRequestReviewComment { path: String!, position: Int!, body: String! }
input DraftPullRequestReviewThread { path: String!, line: Int!, body: String!, side: DiffSide, startLine: Int, startSide: DiffSide }
input AddPullRequestReviewInput { pullRequestId: ID!, body: String, event: PullRequestReviewEvent, commitOID: GitObjectID, comments: [DraftPullRequestReviewComment], threads: [DraftPullRequestReviewThread], clientMutationId: String }
type AddPullRequestReviewPayload { clientMutationId: String, pullRequestReview: PullRequestReview, reviewEdge: PullRequestReviewEdge }

enum PullRequestMergeMethod { MERGE SQUASH REBASE }
input MergePullRequestInput { pullRequestId: ID!, mergeMethod: PullRequestMergeMethod, commitHeadline: String, commitBody: String, expectedHeadOid: GitObjectID, authorEmail: String, clientMutationId: String }
type MergePullRequestPayload { clientMutationId: String, pullRequest: PullRequest, actor: Actor }
input ConvertPullRequestToDraftInput { pullRequestId: ID!, clientMutationId: String }
type ConvertPullRequestToDraftPayload { clientMutationId: String, pullRequest: PullRequest }
input EnablePullRequestAutoMergeInput { pullRequestId: ID!, mergeMethod: PullRequestMergeMethod, commitHeadline: String, commitBody: String, expectedHeadOid: GitObjectID, authorEmail: String, clientMutationId: String }
type EnablePullRequestAutoMergePayload { clientMutationId: String, pullRequest: PullRequest, actor: Actor }
input DisablePullRequestAutoMergeInput { pullRequestId: ID!, clientMutationId: String }
type DisablePullRequestAutoMergePayload { clientMutationId: String, pullRequest: PullRequest, actor: Actor }

input ClosePullRequestInput { pullRequestId: ID!, clientMutationId: String }
type ClosePullRequestPayload { clientMutationId: String, pullRequest: PullRequest }
input ReopenPullRequestInput { pullRequestId: ID!, clientMutationId: String }
type ReopenPullRequestPayload { clientMutationId: String, pullRequest: PullRequest }

enum PullRequestUpdateState { OPEN CLOSED }
input UpdatePullRequestInput { pullRequestId: ID!, title: String, body: String, baseRefName: String, state: PullRequestUpdateState, maintainerCanModify: Boolean, assigneeIds: [ID!], labelIds: [ID!], milestoneId: ID, projectIds: [ID!], clientMutationId: String }
type UpdatePullRequestPayload { clientMutationId: String, pullRequest: PullRequest, actor: Actor }

input MarkPullRequestReadyForReviewInput { pullRequestId: ID!, clientMutationId: String }
type MarkPullRequestReadyForReviewPayload { clientMutationId: String, pullRequest: PullRequest }

interface Labelable { labels(first: Int, last: Int, after: String, before: String, orderBy: LabelOrder): LabelConnection }
input AddLabelsToLabelableInput { labelableId: ID!, labelIds: [ID!]!, clientMutationId: String }
type AddLabelsToLabelablePayload { clientMutationId: String, labelable: Labelable }
input RemoveLabelsFromLabelableInput { labelableId: ID!, labelIds: [ID!]!, clientMutationId: String }
type RemoveLabelsFromLabelablePayload { clientMutationId: String, labelable: Labelable }

input UpdateIssueInput { id: ID!, title: String, body: String, state: IssueState, assigneeIds: [ID!], labelIds: [ID!], milestoneId: ID, projectIds: [ID!], clientMutationId: String }
type UpdateIssuePayload { clientMutationId: String, issue: Issue, actor: Actor }
enum IssueClosedStateReason { COMPLETED NOT_PLANNED }
input CloseIssueInput { issueId: ID!, stateReason: IssueClosedStateReason, clientMutationId: String }
type CloseIssuePayload { clientMutationId: String, issue: Issue }
input ReopenIssueInput { issueId: ID!, clientMutationId: String }
type ReopenIssuePayload { clientMutationId: String, issue: Issue }

interface Node { id: ID! }

interface Actor {
  login: String!
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
}

interface RepositoryOwner {
  id: ID!
  login: String!
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
  repositories(first: Int, last: Int, after: String, before: String, privacy: RepositoryPrivacy, isFork: Boolean, ownerAffiliations: [RepositoryAffiliation], affiliations: [RepositoryAffiliation], orderBy: RepositoryOrder): RepositoryConnection!
}
enum RepositoryPrivacy { PUBLIC PRIVATE }
enum RepositoryAffiliation { OWNER COLLABORATOR ORGANIZATION_MEMBER }
enum RepositoryOrderField { CREATED_AT UPDATED_AT PUSHED_AT NAME STARGAZERS }
input RepositoryOrder { field: RepositoryOrderField!, direction: OrderDirection! }
type RepositoryConnection { totalCount: Int!, nodes: [Repository], edges: [RepositoryEdge], pageInfo: PageInfo! }
type RepositoryEdge { cursor: String!, node: Repository }

type User implements Node & Actor & RepositoryOwner {
  id: ID!
  databaseId: Int
  login: String!
  name: String
  email: String!
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
  repositories(first: Int, last: Int, after: String, before: String, privacy: RepositoryPrivacy, isFork: Boolean, ownerAffiliations: [RepositoryAffiliation], affiliations: [RepositoryAffiliation], orderBy: RepositoryOrder): RepositoryConnection!
}

type Organization implements Node & Actor & RepositoryOwner {
  id: ID!
  databaseId: Int
  login: String!
  name: String
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
  repositories(first: Int, last: Int, after: String, before: String, privacy: RepositoryPrivacy, isFork: Boolean, ownerAffiliations: [RepositoryAffiliation], affiliations: [RepositoryAffiliation], orderBy: RepositoryOrder): RepositoryConnection!
  teams(first: Int, last: Int, after: String, before: String, query: String, orderBy: TeamOrder): TeamConnection!
}
type TeamConnection { totalCount: Int!, nodes: [Team], pageInfo: PageInfo! }

type Bot implements Node & Actor {
  id: ID!
  databaseId: Int
  login: String!
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
}

type Mannequin implements Node & Actor {
  id: ID!
  login: String!
  avatarUrl(size: Int): URI!
  url: URI!
  resourcePath: URI!
}

type Team implements Node {
  id: ID!
  name: String!
  slug: String!
  organization: Organization!
}

type RateLimit {
  limit: Int!
  cost: Int!
  remaining: Int!
  used: Int!
  resetAt: DateTime!
  nodeCount: Int!
}

type PageInfo {
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
  endCursor: String
}

enum OrderDirection { ASC DESC }
enum IssueOrderField { CREATED_AT UPDATED_AT COMMENTS }
enum LabelOrderField { NAME CREATED_AT }
input LabelOrder { field: LabelOrderField!, direction: OrderDirection! }
input IssueOrder { field: IssueOrderField!, direction: OrderDirection! }
enum TeamOrderField { NAME }
enum ReleaseOrderField { CREATED_AT NAME }
input ReleaseOrder { field: ReleaseOrderField!, direction: OrderDirection! }
input TeamOrder { field: TeamOrderField!, direction: OrderDirection! }
enum PullRequestState { OPEN CLOSED MERGED }
enum IssueState { OPEN CLOSED }
enum IssueStateReason { COMPLETED NOT_PLANNED REOPENED }
enum MergeableState { MERGEABLE CONFLICTING UNKNOWN }
enum MergeStateStatus { BEHIND BLOCKED CLEAN DIRTY DRAFT HAS_HOOKS UNKNOWN UNSTABLE }
enum PullRequestReviewDecision { CHANGES_REQUESTED APPROVED REVIEW_REQUIRED }
enum PullRequestReviewState { PENDING COMMENTED APPROVED CHANGES_REQUESTED DISMISSED }
enum StatusState { ERROR EXPECTED FAILURE PENDING SUCCESS }
enum CheckStatusState { REQUESTED QUEUED IN_PROGRESS COMPLETED WAITING PENDING }
enum CheckConclusionState { ACTION_REQUIRED TIMED_OUT CANCELLED FAILURE SUCCESS NEUTRAL SKIPPED STARTUP_FAILURE STALE }
enum CommentAuthorAssociation { MEMBER OWNER MANNEQUIN COLLABORATOR CONTRIBUTOR FIRST_TIME_CONTRIBUTOR FIRST_TIMER NONE }
enum RepositoryPermission { ADMIN MAINTAIN WRITE TRIAGE READ }
enum RepositoryVisibility { PRIVATE PUBLIC INTERNAL }
enum ReactionContent { THUMBS_UP THUMBS_DOWN LAUGH HOORAY CONFUSED HEART ROCKET EYES }
enum CheckRunType { ALL LATEST }
enum DiffSide { LEFT RIGHT }
enum PullRequestReviewThreadSubjectType { LINE FILE }
enum ProjectCardArchivedState { ARCHIVED NOT_ARCHIVED }

input IssueFilters { assignee: String, createdBy: String, labels: [String!], mentioned: String, milestone: String, since: DateTime, states: [IssueState!] }

type Ref implements Node {
  id: ID!
  name: String!
  prefix: String!
  target: Commit
  branchProtectionRule: BranchProtectionRule
}

type BranchProtectionRule implements Node {
  id: ID!
  pattern: String!
  requiresApprovingReviews: Boolean!
  requiredApprovingReviewCount: Int
  requiresStatusChecks: Boolean!
  requiresStrictStatusChecks: Boolean!
  requiresCodeOwnerReviews: Boolean!
  isAdminEnforced: Boolean!
}

type License { key: String!, name: String!, nickname: String }

type Repository implements Node {
  id: ID!
  databaseId: Int
  name: String!
  nameWithOwner: String!
  owner: RepositoryOwner!
  url: URI!
  sshUrl: String!
  description: String
  homepageUrl: URI
  isPrivate: Boolean!
  isFork: Boolean!
  isArchived: Boolean!
  isInOrganization: Boolean!
  isEmpty: Boolean!
  isTemplate: Boolean!
  isMirror: Boolean!
  isSecurityPolicyEnabled: Boolean
  visibility: RepositoryVisibility!
  hasIssuesEnabled: Boolean!
  hasWikiEnabled: Boolean!
  hasProjectsEnabled: Boolean!
  hasDiscussionsEnabled: Boolean!
  mergeCommitAllowed: Boolean!
  autoMergeAllowed: Boolean!
  squashMergeAllowed: Boolean!
  rebaseMergeAllowed: Boolean!
  deleteBranchOnMerge: Boolean!
  viewerPermission: RepositoryPermission
  viewerCanAdminister: Boolean!
  createdAt: DateTime!
  updatedAt: DateTime!
  pushedAt: DateTime
  stargazerCount: Int!
  forkCount: Int!
  parent: Repository
  licenseInfo: License
  defaultBranchRef: Ref
  ref(qualifiedName: String!): Ref
  pullRequest(number: Int!): PullRequest
  pullRequests(states: [PullRequestState!], labels: [String!], headRefName: String, baseRefName: String, orderBy: IssueOrder, first: Int, last: Int, after: String, before: String): PullRequestConnection!
  issue(number: Int!): Issue
  issues(states: [IssueState!], labels: [String!], filterBy: IssueFilters, orderBy: IssueOrder, first: Int, last: Int, after: String, before: String): IssueConnection!
  issueOrPullRequest(number: Int!): IssueOrPullRequest
  labels(first: Int, last: Int, after: String, before: String, query: String, orderBy: LabelOrder): LabelConnection
  label(name: String!): Label
  assignableUsers(first: Int, last: Int, after: String, before: String, query: String): UserConnection!
  mentionableUsers(first: Int, last: Int, after: String, before: String, query: String): UserConnection!
  milestones(first: Int, last: Int, after: String, before: String): MilestoneConnection
  releases(first: Int, last: Int, after: String, before: String, orderBy: ReleaseOrder): ReleaseConnection!
  release(tagName: String!): Release
  latestRelease: Release
  projects(first: Int, last: Int, after: String, before: String): ProjectConnection!
}

union IssueOrPullRequest = Issue | PullRequest

type PullRequestConnection { totalCount: Int!, nodes: [PullRequest], edges: [PullRequestEdge], pageInfo: PageInfo! }
type PullRequestEdge { cursor: String!, node: PullRequest }
type IssueConnection { totalCount: Int!, nodes: [Issue], edges: [IssueEdge], pageInfo: PageInfo! }
type IssueEdge { cursor: String!, node: Issue }
type UserConnection { totalCount: Int!, nodes: [User], edges: [UserEdge], pageInfo: PageInfo! }
type UserEdge { cursor: String!, node: User }
type LabelConnection { totalCount: Int!, nodes: [Label], edges: [LabelEdge], pageInfo: PageInfo! }
type LabelEdge { cursor: String!, node: Label }
type ReleaseConnection { totalCount: Int!, nodes: [Release], edges: [ReleaseEdge], pageInfo: PageInfo! }
type ReleaseEdge { cursor: String!, node: Release }
type Release implements Node { id: ID!, databaseId: Int, name: String, tagName: String!, description: String, isDraft: Boolean!, isPrerelease: Boolean!, isLatest: Boolean!, createdAt: DateTime!, publishedAt: DateTime, updatedAt: DateTime!, url: URI!, author: User }
type MilestoneConnection { totalCount: Int!, nodes: [Milestone], pageInfo: PageInfo! }
type ProjectConnection { totalCount: Int!, nodes: [Project], pageInfo: PageInfo! }
type ProjectCardConnection { totalCount: Int!, nodes: [ProjectCard], pageInfo: PageInfo! }
type ProjectV2ItemConnection { totalCount: Int!, nodes: [ProjectV2Item], pageInfo: PageInfo! }
type ReviewRequestConnection { totalCount: Int!, nodes: [ReviewRequest], pageInfo: PageInfo! }
type IssueCommentConnection { totalCount: Int!, nodes: [IssueComment], edges: [IssueCommentEdge], pageInfo: PageInfo! }
type IssueCommentEdge { cursor: String!, node: IssueComment }
type PullRequestReviewConnection { totalCount: Int!, nodes: [PullRequestReview], edges: [PullRequestReviewEdge], pageInfo: PageInfo! }
type PullRequestReviewEdge { cursor: String!, node: PullRequestReview }
type PullRequestReviewThreadConnection { totalCount: Int!, nodes: [PullRequestReviewThread], edges: [PullRequestReviewThreadEdge], pageInfo: PageInfo! }
type PullRequestReviewThreadEdge { cursor: String!, node: PullRequestReviewThread }
type PullRequestReviewCommentConnection { totalCount: Int!, nodes: [PullRequestReviewComment], edges: [PullRequestReviewCommentEdge], pageInfo: PageInfo! }
type PullRequestReviewCommentEdge { cursor: String!, node: PullRequestReviewComment }
type PullRequestCommitConnection { totalCount: Int!, nodes: [PullRequestCommit], edges: [PullRequestCommitEdge], pageInfo: PageInfo! }
type PullRequestCommitEdge { cursor: String!, node: PullRequestCommit }
type StatusCheckRollupContextConnection { totalCount: Int!, nodes: [StatusCheckRollupContext], edges: [StatusCheckRollupContextEdge], pageInfo: PageInfo!, checkRunCount: Int!, statusContextCount: Int!, checkRunCountsByState: [CheckRunStateCount!], statusContextCountsByState: [StatusContextStateCount!] }
type StatusCheckRollupContextEdge { cursor: String!, node: StatusCheckRollupContext }
type CheckRunStateCount { state: CheckRunState!, count: Int! }
type StatusContextStateCount { state: StatusState!, count: Int! }
enum CheckRunState { ACTION_REQUIRED CANCELLED COMPLETED FAILURE IN_PROGRESS NEUTRAL PENDING QUEUED SKIPPED STALE STARTUP_FAILURE SUCCESS TIMED_OUT WAITING }
type ReactingUserConnection { totalCount: Int! }

type Label implements Node { id: ID!, name: String!, color: String!, description: String, url: URI! }
type Milestone implements Node { id: ID!, number: Int!, title: String!, description: String, dueOn: DateTime }
type Project implements Node { id: ID!, name: String! }
type ProjectColumn { name: String! }
type ProjectCard implements Node { id: ID!, project: Project!, column: ProjectColumn }
type ProjectV2 implements Node { id: ID!, title: String! }
type ProjectV2Item implements Node { id: ID!, project: ProjectV2! }
type ReactionGroup { content: ReactionContent!, users(first: Int, last: Int): ReactingUserConnection!, viewerHasReacted: Boolean! }
union RequestedReviewer = User | Team | Mannequin | Bot
type ReviewRequest implements Node { id: ID!, requestedReviewer: RequestedReviewer }
type AutoMergeRequest { enabledAt: DateTime, enabledBy: Actor, authorEmail: String, commitBody: String, commitHeadline: String, mergeMethod: PullRequestMergeMethod! }

interface Comment {
  id: ID!
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  url: URI!
}

type Issue implements Node & Comment & Labelable {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  bodyText: String!
  state: IssueState!
  stateReason: IssueStateReason
  url: URI!
  closed: Boolean!
  closedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  repository: Repository!
  labels(first: Int, last: Int, after: String, before: String, orderBy: LabelOrder): LabelConnection
  assignees(first: Int, last: Int, after: String, before: String): UserConnection!
  comments(first: Int, last: Int, after: String, before: String): IssueCommentConnection!
  milestone: Milestone
  projectCards(first: Int, last: Int, after: String, before: String, archivedStates: [ProjectCardArchivedState]): ProjectCardConnection!
  projectItems(first: Int, last: Int, after: String, before: String, includeArchived: Boolean): ProjectV2ItemConnection!
  reactionGroups: [ReactionGroup!]
  viewerCanUpdate: Boolean!
  isPinned: Boolean
  timelineItems(first: Int, last: Int, after: String, before: String, since: DateTime, skip: Int, itemTypes: [IssueTimelineItemsItemType!]): IssueTimelineItemsConnection!
  closedByPullRequestsReferences(first: Int, last: Int, after: String, before: String, includeClosedPrs: Boolean = false, orderByState: Boolean = false, userLinkedOnly: Boolean = false): PullRequestConnection
}

type PullRequest implements Node & Comment & Labelable {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  bodyText: String!
  state: PullRequestState!
  url: URI!
  permalink: URI!
  closed: Boolean!
  merged: Boolean!
  isDraft: Boolean!
  locked: Boolean!
  createdAt: DateTime!
  updatedAt: DateTime!
  closedAt: DateTime
  mergedAt: DateTime
  mergedBy: Actor
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  mergeable: MergeableState!
  mergeStateStatus: MergeStateStatus!
  reviewDecision: PullRequestReviewDecision
  maintainerCanModify: Boolean!
  headRefName: String!
  headRefOid: GitObjectID!
  headRef: Ref
  baseRefName: String!
  baseRefOid: GitObjectID!
  baseRef: Ref
  headRepository: Repository
  headRepositoryOwner: RepositoryOwner
  isCrossRepository: Boolean!
  repository: Repository!
  additions: Int!
  deletions: Int!
  changedFiles: Int!
  autoMergeRequest: AutoMergeRequest
  potentialMergeCommit: Commit
  mergeCommit: Commit
  commits(first: Int, last: Int, after: String, before: String): PullRequestCommitConnection!
  reviewThreads(first: Int, last: Int, after: String, before: String): PullRequestReviewThreadConnection!
  reviews(first: Int, last: Int, after: String, before: String, states: [PullRequestReviewState!], author: String): PullRequestReviewConnection
  latestReviews(first: Int, last: Int, after: String, before: String): PullRequestReviewConnection
  latestOpinionatedReviews(first: Int, last: Int, after: String, before: String, writersOnly: Boolean): PullRequestReviewConnection
  reviewRequests(first: Int, last: Int, after: String, before: String): ReviewRequestConnection
  comments(first: Int, last: Int, after: String, before: String): IssueCommentConnection!
  labels(first: Int, last: Int, after: String, before: String, orderBy: LabelOrder): LabelConnection
  assignees(first: Int, last: Int, after: String, before: String): UserConnection!
  closingIssuesReferences(first: Int, last: Int, after: String, before: String): IssueConnection
  milestone: Milestone
  projectCards(first: Int, last: Int, after: String, before: String, archivedStates: [ProjectCardArchivedState]): ProjectCardConnection!
  projectItems(first: Int, last: Int, after: String, before: String, includeArchived: Boolean): ProjectV2ItemConnection!
  reactionGroups: [ReactionGroup!]
  statusCheckRollup: StatusCheckRollup
  viewerCanUpdate: Boolean!
  files(first: Int, last: Int, after: String, before: String): PullRequestChangedFileConnection
  timelineItems(first: Int, last: Int, after: String, before: String, since: DateTime, skip: Int, itemTypes: [PullRequestTimelineItemsItemType!]): PullRequestTimelineItemsConnection!
}

enum IssueTimelineItemsItemType { ISSUE_COMMENT CLOSED_EVENT REOPENED_EVENT LABELED_EVENT UNLABELED_EVENT ASSIGNED_EVENT UNASSIGNED_EVENT RENAMED_TITLE_EVENT CROSS_REFERENCED_EVENT }
enum PullRequestTimelineItemsItemType { ISSUE_COMMENT CLOSED_EVENT REOPENED_EVENT LABELED_EVENT UNLABELED_EVENT ASSIGNED_EVENT UNASSIGNED_EVENT RENAMED_TITLE_EVENT CROSS_REFERENCED_EVENT MERGED_EVENT HEAD_REF_DELETED_EVENT HEAD_REF_FORCE_PUSHED_EVENT READY_FOR_REVIEW_EVENT REVIEW_REQUESTED_EVENT REVIEW_REQUEST_REMOVED_EVENT CONVERT_TO_DRAFT_EVENT AUTO_MERGE_ENABLED_EVENT AUTO_MERGE_DISABLED_EVENT PULL_REQUEST_COMMIT PULL_REQUEST_REVIEW }
union IssueTimelineItems = IssueComment | ClosedEvent | ReopenedEvent | LabeledEvent | UnlabeledEvent | AssignedEvent | UnassignedEvent | RenamedTitleEvent | CrossReferencedEvent
union PullRequestTimelineItems = IssueComment | ClosedEvent | ReopenedEvent | LabeledEvent | UnlabeledEvent | AssignedEvent | UnassignedEvent | RenamedTitleEvent | CrossReferencedEvent | MergedEvent | HeadRefDeletedEvent | HeadRefForcePushedEvent | ReadyForReviewEvent | ReviewRequestedEvent | ReviewRequestRemovedEvent | ConvertToDraftEvent | AutoMergeEnabledEvent | AutoMergeDisabledEvent | PullRequestCommit | PullRequestReview
type IssueTimelineItemsEdge { cursor: String!, node: IssueTimelineItems }
type IssueTimelineItemsConnection { totalCount: Int!, filteredCount: Int!, pageCount: Int!, updatedAt: DateTime!, nodes: [IssueTimelineItems], edges: [IssueTimelineItemsEdge], pageInfo: PageInfo! }
type PullRequestTimelineItemsEdge { cursor: String!, node: PullRequestTimelineItems }
type PullRequestTimelineItemsConnection { totalCount: Int!, filteredCount: Int!, pageCount: Int!, updatedAt: DateTime!, nodes: [PullRequestTimelineItems], edges: [PullRequestTimelineItemsEdge], pageInfo: PageInfo! }
union Closable = Issue | PullRequest
union Closer = Commit | PullRequest
union ReferencedSubject = Issue | PullRequest
union Assignee = Bot | Mannequin | Organization | User
type ClosedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, closable: Closable!, closer: Closer, stateReason: IssueStateReason, url: URI!, resourcePath: URI! }
type ReopenedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, closable: Closable! }
type LabeledEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, label: Label!, labelable: Labelable! }
type UnlabeledEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, label: Label!, labelable: Labelable! }
type AssignedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, assignee: Assignee }
type UnassignedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, assignee: Assignee }
type RenamedTitleEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, previousTitle: String!, currentTitle: String! }
type CrossReferencedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, referencedAt: DateTime!, source: ReferencedSubject!, target: ReferencedSubject!, isCrossRepository: Boolean!, willCloseTarget: Boolean!, url: URI!, resourcePath: URI! }
type MergedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, commit: Commit, mergeRef: Ref, mergeRefName: String!, pullRequest: PullRequest!, url: URI!, resourcePath: URI! }
type HeadRefDeletedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, headRefName: String!, pullRequest: PullRequest! }
type HeadRefForcePushedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, pullRequest: PullRequest! }
type ReadyForReviewEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, pullRequest: PullRequest!, url: URI!, resourcePath: URI! }
type ReviewRequestedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, pullRequest: PullRequest!, requestedReviewer: RequestedReviewer }
type ConvertToDraftEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, pullRequest: PullRequest!, url: URI!, resourcePath: URI! }
type AutoMergeEnabledEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, enabler: User, pullRequest: PullRequest }
type AutoMergeDisabledEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, disabler: User, pullRequest: PullRequest }
type ReviewRequestRemovedEvent implements Node { id: ID!, actor: Actor, createdAt: DateTime!, pullRequest: PullRequest!, requestedReviewer: RequestedReviewer }

enum PatchStatus { ADDED CHANGED COPIED DELETED MODIFIED RENAMED }
enum FileViewedState { DISMISSED UNVIEWED VIEWED }
type PullRequestChangedFile { path: String!, additions: Int!, deletions: Int!, changeType: PatchStatus!, viewerViewedState: FileViewedState! }
type PullRequestChangedFileConnection { totalCount: Int!, nodes: [PullRequestChangedFile], edges: [PullRequestChangedFileEdge], pageInfo: PageInfo! }
type PullRequestChangedFileEdge { cursor: String!, node: PullRequestChangedFile }

type PullRequestCommit implements Node {
  id: ID!
  commit: Commit!
  url: URI!
}

type GitActor { name: String, email: String, date: DateTime, user: User }

type Commit implements Node {
  id: ID!
  oid: GitObjectID!
  abbreviatedOid: String!
  message: String!
  messageHeadline: String!
  messageBody: String!
  committedDate: DateTime!
  authoredDate: DateTime!
  url: URI!
  author: GitActor
  committer: GitActor
  authors(first: Int, last: Int): GitActorConnection!
  statusCheckRollup: StatusCheckRollup
  status: Status
  checkSuites(first: Int, last: Int, after: String, before: String): CheckSuiteConnection
}

type GitActorConnection { totalCount: Int!, nodes: [GitActor] }

type Status implements Node {
  id: ID!
  state: StatusState!
  contexts: [StatusContext!]!
}

type StatusCheckRollup implements Node {
  id: ID!
  state: StatusState!
  contexts(first: Int, last: Int, after: String, before: String): StatusCheckRollupContextConnection!
}

union StatusCheckRollupContext = CheckRun | StatusContext

type StatusContext implements Node {
  id: ID!
  context: String!
  state: StatusState!
  description: String
  targetUrl: URI
  avatarUrl(size: Int): URI
  createdAt: DateTime!
  isRequired(pullRequestNumber: Int, pullRequestId: ID): Boolean!
  creator: Actor
}

type App implements Node { id: ID!, name: String!, slug: String!, logoUrl(size: Int): URI! }
type Workflow implements Node { id: ID!, name: String! }
type WorkflowRun implements Node { id: ID!, databaseId: Int, runNumber: Int!, event: String!, url: URI!, workflow: Workflow! }
type CheckSuite implements Node {
  id: ID!
  databaseId: Int
  status: CheckStatusState!
  conclusion: CheckConclusionState
  app: App
  workflowRun: WorkflowRun
}
type CheckSuiteConnection { totalCount: Int!, nodes: [CheckSuite], pageInfo: PageInfo! }

type CheckRun implements Node {
  id: ID!
  databaseId: Int
  name: String!
  status: CheckStatusState!
  conclusion: CheckConclusionState
  startedAt: DateTime
  completedAt: DateTime
  detailsUrl: URI
  url: URI!
  permalink: URI!
  title: String
  summary: String
  text: String
  isRequired(pullRequestNumber: Int, pullRequestId: ID): Boolean!
  checkSuite: CheckSuite!
}

type PullRequestReview implements Node & Comment {
  id: ID!
  databaseId: Int
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  state: PullRequestReviewState!
  submittedAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
  url: URI!
  commit: Commit
  includesCreatedEdit: Boolean!
  reactionGroups: [ReactionGroup!]
  comments(first: Int, last: Int, after: String, before: String): PullRequestReviewCommentConnection!
}

type PullRequestReviewThread implements Node {
  id: ID!
  isResolved: Boolean!
  isOutdated: Boolean!
  isCollapsed: Boolean!
  path: String!
  line: Int
  originalLine: Int
  startLine: Int
  diffSide: DiffSide!
  subjectType: PullRequestReviewThreadSubjectType!
  resolvedBy: User
  viewerCanResolve: Boolean!
  comments(first: Int, last: Int, after: String, before: String, skip: Int): PullRequestReviewCommentConnection!
}

type PullRequestReviewComment implements Node & Comment {
  id: ID!
  databaseId: Int
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  bodyText: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  url: URI!
  path: String!
  line: Int
  originalLine: Int
  diffHunk: String!
  outdated: Boolean!
  isMinimized: Boolean!
  replyTo: PullRequestReviewComment
  pullRequestReview: PullRequestReview
  commit: Commit
}

type IssueComment implements Node & Comment {
  id: ID!
  databaseId: Int
  author: Actor
  authorAssociation: CommentAuthorAssociation!
  body: String!
  bodyText: String!
  createdAt: DateTime!
  updatedAt: DateTime!
  url: URI!
  isMinimized: Boolean!
  minimizedReason: String
  includesCreatedEdit: Boolean!
  viewerDidAuthor: Boolean!
  reactionGroups: [ReactionGroup!]
}
`;
