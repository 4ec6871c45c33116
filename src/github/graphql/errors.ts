/**
 * Query errors in GitHub's words. GitHub's GraphQL server (graphql-ruby) words syntax and
 * validation errors its own way, with a `code` and the names involved in `extensions` and the
 * document path of the offending field in `path` (`["query", "repository", "foo"]`); graphql-js,
 * which validates here, words the same findings differently. This turns the common ones into
 * GitHub's shape; any other keeps graphql-js's message.
 */
import {
  type ASTNode,
  type DocumentNode,
  type GraphQLError,
  Kind,
  type OperationDefinitionNode,
  visit,
} from 'graphql';

interface Rewritten {
  message: string;
  extensions?: Record<string, unknown>;
}

/** graphql-js message → GitHub's message and extensions, for the errors clients meet. */
const REWRITES: Array<[RegExp, (m: RegExpExecArray, node: ASTNode | undefined) => Rewritten]> = [
  [
    /^Cannot query field "(\w+)" on type "(\w+)"\./,
    (m) => ({
      message: `Field '${m[1]}' doesn't exist on type '${m[2]}'`,
      extensions: { code: 'undefinedField', typeName: m[2], fieldName: m[1] },
    }),
  ],
  [
    /^Field "(\w+)" argument "(\w+)" of type "([^"]+)" is required, but it was not provided\./,
    (m) => ({
      message: `Field '${m[1]}' is missing required arguments: ${m[2]}`,
      extensions: { code: 'missingRequiredArguments', className: 'Field', name: m[1], arguments: m[2] },
    }),
  ],
  [
    /^Unknown argument "(\w+)" on field "\w+\.(\w+)"\./,
    (m) => ({
      message: `Field '${m[2]}' doesn't accept argument '${m[1]}'`,
      extensions: { code: 'argumentNotAccepted', name: m[2], typeName: 'Field', argumentName: m[1] },
    }),
  ],
  [
    /^Field "(\w+)" must not have a selection since type "([^"]+)" has no subfields\./,
    (m, node) => {
      // graphql-js points at the selection set itself.
      const set =
        node?.kind === Kind.SELECTION_SET ? node : node?.kind === Kind.FIELD ? node.selectionSet : undefined;
      const selections = (set?.selections ?? []).map((s) => (s.kind === Kind.FIELD ? s.name.value : '...'));
      return {
        message: `Selections can't be made on scalars (field '${m[1]}' returns ${m[2]} but has selections [${selections.map((s) => `"${s}"`).join(', ')}])`,
        extensions: { code: 'selectionMismatch', nodeName: `field '${m[1]}'`, typeName: m[2] },
      };
    },
  ],
  [
    /^Field "(\w+)" of type "([^"]+)" must have a selection of subfields\./,
    (m) => ({
      message: `Field must have selections (field '${m[1]}' returns ${m[2]} but has no selections. Did you mean '${m[1]} { ... }'?)`,
      extensions: { code: 'selectionMismatch', nodeName: `field '${m[1]}'`, typeName: m[2] },
    }),
  ],
  [
    /^Unknown type "(\w+)"\./,
    (m, node) =>
      node?.kind === Kind.NAMED_TYPE
        ? {
            message: `No such type ${m[1]}, so it can't be a fragment condition`,
            extensions: { code: 'undefinedType', typeName: m[1] },
          }
        : {
            message: `${m[1]} isn't a defined input type`,
            extensions: { code: 'variableRequiresValidType', typeName: m[1] },
          },
  ],
  [
    /^Variable "\$(\w+)" is not defined(?: by operation "(\w+)")?\./,
    (m) => ({
      message: `Variable $${m[1]} is used by ${m[2] ?? 'anonymous query'} but not declared`,
      extensions: { code: 'variableNotDefined', variableName: m[1] },
    }),
  ],
  [
    /^Variable "\$(\w+)" is never used(?: in operation "(\w+)")?\./,
    (m) => ({
      message: `Variable $${m[1]} is declared by ${m[2] ?? 'anonymous query'} but not used`,
      extensions: { code: 'variableNotUsed', variableName: m[1] },
    }),
  ],
  [
    /^Unknown fragment "(\w+)"\./,
    (m) => ({
      message: `Fragment ${m[1]} was used, but not defined`,
      extensions: { code: 'useAndDefineFragment', fragmentName: m[1] },
    }),
  ],
  [
    /^Fragment "(\w+)" is never used\./,
    (m) => ({
      message: `Fragment ${m[1]} was defined, but not used`,
      extensions: { code: 'useAndDefineFragment', fragmentName: m[1] },
    }),
  ],
];

const TOKEN_KINDS: Record<string, string> = {
  '{': 'LCURLY',
  '}': 'RCURLY',
  '(': 'LPAREN',
  ')': 'RPAREN',
  '[': 'LBRACKET',
  ']': 'RBRACKET',
  ':': 'COLON',
  $: 'VAR_SIGN',
  '=': 'EQUALS',
  '!': 'BANG',
  '@': 'DIR_SIGN',
  '...': 'ELLIPSIS',
  '|': 'PIPE',
  '&': 'AMP',
};

/** graphql-js `Syntax Error: Expected Name, found "}".` → graphql-ruby's `Parse error on "}" (RCURLY) at [1, 10]`. */
function syntaxError(error: GraphQLError): Rewritten | undefined {
  if (!error.message.startsWith('Syntax Error:')) return undefined;
  const at = error.locations?.[0];
  const where = at ? ` at [${at.line}, ${at.column}]` : '';
  if (/<EOF>/.test(error.message)) return { message: `Unexpected end of document` };
  const found =
    /(?:found|Unexpected) (?:Name |Int |Float |String )?"([^"]*)"/.exec(error.message) ??
    /(?:found|Unexpected) (\S+?)\.?$/.exec(error.message);
  // Anything else (the token limit's "Document contains more than … tokens") keeps its words.
  if (!found) return undefined;
  const text = found[1]!;
  const kind =
    TOKEN_KINDS[text] ??
    (/^\d+$/.test(text) ? 'INT' : /^\d/.test(text) ? 'FLOAT' : /^\w+$/.test(text) ? 'IDENTIFIER' : 'STRING');
  return { message: `Parse error on "${text}" (${kind})${where}` };
}

/**
 * The document path of a node, as graphql-ruby reports it: the operation (`query`, `query Name`)
 * or fragment (`fragment Name`) it is in, then the fields (aliases as written) down to it.
 */
function pathOf(document: DocumentNode, target: ASTNode): string[] | undefined {
  let found: string[] | undefined;
  visit(document, {
    enter(node, _key, _parent, _path, ancestors) {
      if (found !== undefined) return false;
      if (node !== target) return undefined;
      const path: string[] = [];
      for (const a of [...(ancestors as ASTNode[]), node]) {
        if (!('kind' in a)) continue;
        if (a.kind === Kind.OPERATION_DEFINITION) {
          const op = a as OperationDefinitionNode;
          path.push(op.name ? `${op.operation} ${op.name.value}` : op.operation);
        } else if (a.kind === Kind.FRAGMENT_DEFINITION) path.push(`fragment ${a.name.value}`);
        else if (a.kind === Kind.FIELD) path.push(a.alias?.value ?? a.name.value);
      }
      found = path;
      return false;
    },
  });
  return found;
}

/** An error answer's entry in GitHub's shape; `document` (when it parsed) gives the path. */
export function githubQueryError(error: GraphQLError, document?: DocumentNode): Record<string, unknown> {
  const node = error.nodes?.[0];
  let rewritten = syntaxError(error);
  if (rewritten === undefined) {
    for (const [re, rewrite] of REWRITES) {
      const m = re.exec(error.message);
      if (m) {
        rewritten = rewrite(m, node);
        break;
      }
    }
  }
  const type = error.extensions?.type;
  const path = error.path ?? (document && node ? pathOf(document, node) : undefined);
  return {
    ...(typeof type === 'string' ? { type } : {}),
    ...(path ? { path } : {}),
    ...(rewritten?.extensions ? { extensions: rewritten.extensions } : {}),
    ...(error.locations ? { locations: error.locations } : {}),
    message: rewritten?.message ?? error.message,
  };
}
