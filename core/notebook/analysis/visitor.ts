/**
 * The scoped visitor: what a cell declares at the top level (its writes), which names it uses
 * without declaring them (its reads, or globals), and the cell-level rules it breaks (see the list in
 * `index.ts`). Two passes over acorn-walk: declarations into the scope JavaScript puts them in, then
 * every reference resolved against the scopes around it — the way Observable Framework's
 * `src/javascript/references.ts` and marimo's `_ast/visitor.py` do.
 */
import type * as acorn from 'acorn';
import * as walk from 'acorn-walk';

export type ProblemKind =
  | 'syntax'
  | 'multiple-definitions'
  | 'cycle'
  | 'reassignment'
  | 'self-reference'
  | 'private'
  | 'mutation'
  | 'export';

export interface CellProblem {
  kind: ProblemKind;
  severity: 'error' | 'warning';
  message: string;
  /** 1-based line in the cell's source, when the problem has a position. */
  line?: number;
  column?: number;
  /** The variable the problem is about, when there is one. */
  name?: string;
  /** One-click fixes (`analysis/fix-offers.ts`, applied by `core/notebook/fixes.ts`). */
  fixes?: ProblemFix[];
}

export type FixAction = 'rename' | 'merge' | 'delete';

export interface ProblemFix {
  action: FixAction;
  label: string;
  /** rename: the new name. */
  to?: string;
  /** merge: the cell the code goes into. */
  into?: string;
}

/**
 * Helpers the kernel puts in every cell's scope (see `runtime-worker.ts`). They are treated as
 * globals so using them creates no dependency.
 */
export const KERNEL_HELPERS = ['display', 'html', 'svg', 'md', 'chart', 'table', 'image', 'notebookPath', 'Deno', 'ui'] as const;

/**
 * Globals: the ECMAScript/Node set the worker will have, captured from this realm plus a fixed
 * list so the answer does not depend on what a test runner happened to install.
 */
const GLOBALS = new Set<string>([
  ...Object.getOwnPropertyNames(globalThis),
  ...KERNEL_HELPERS,
  'undefined',
  'NaN',
  'Infinity',
  'globalThis',
  'console',
  'process',
  'Buffer',
  'URL',
  'URLSearchParams',
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'setImmediate',
  'clearImmediate',
  'queueMicrotask',
  'structuredClone',
  'fetch',
  'AbortController',
  'AbortSignal',
  'TextEncoder',
  'TextDecoder',
  'performance',
  'crypto',
  'require',
  'module',
  'exports',
  '__filename',
  '__dirname',
]);
// These are not real globals in the worker's module scope, and a cell might well define them.
for (const notGlobal of ['require', 'module', 'exports', '__filename', '__dirname']) GLOBALS.delete(notGlobal);

/** Method names that change their receiver: a call on another cell's value is a mutation. */
const MUTATORS = new Set([
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
  'set',
  'delete',
  'clear',
  'add',
  'assign',
]);

const PRIVATE = (name: string) => name.startsWith('_');

type Scope = acorn.Node;

const PATTERN_TYPES = new Set(['ObjectPattern', 'ArrayPattern', 'RestElement', 'AssignmentPattern', 'Property']);

function patternNames(pattern: acorn.Pattern | null | undefined, into: string[] = []): string[] {
  if (!pattern) return into;
  switch (pattern.type) {
    case 'Identifier':
      into.push(pattern.name);
      break;
    case 'ObjectPattern':
      for (const prop of pattern.properties) patternNames(prop.type === 'RestElement' ? prop : prop.value, into);
      break;
    case 'ArrayPattern':
      for (const element of pattern.elements) patternNames(element, into);
      break;
    case 'RestElement':
      patternNames(pattern.argument, into);
      break;
    case 'AssignmentPattern':
      patternNames(pattern.left, into);
      break;
    case 'MemberExpression':
      break;
  }
  return into;
}

const isFunction = (node: acorn.Node): node is acorn.Function =>
  node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression';

/** What a cell shares and uses, and the rules it breaks. */
export interface CellScope {
  /** Shared top-level names this cell defines, in order of declaration. */
  writes: string[];
  /** Free names this cell uses that are not globals, in order of first use. */
  reads: string[];
  /** Free names that resolve to globals today; a cell defining one of them shadows it. */
  globals: string[];
  /** Names declared at the top level that start with `_` (kept inside the cell). */
  privates: string[];
  problems: CellProblem[];
  /** Top-level names bound by an import: name → what it is (module and binding), to recognise the same import in two cells. */
  imports?: Record<string, string>;
}

/**
 * Resolve every name of a parsed cell. `lineMap` maps the JavaScript's lines back to the cell's
 * source (TypeScript cells); without it lines are the source's own, and columns are reported too.
 */
export function analyzeScopes(program: acorn.Program, lineMap?: number[]): CellScope {
  const toSourceLine = (line: number) => (lineMap ? lineMap[line - 1] : line);
  const scopes = new Map<Scope, Set<string>>();
  const imports: Record<string, string> = {};
  const declare = (scope: Scope, name: string) => {
    let set = scopes.get(scope);
    if (!set) scopes.set(scope, (set = new Set()));
    set.add(name);
  };
  const topLevel: string[] = [];
  const problems: CellProblem[] = [];
  const problem = (p: Omit<CellProblem, 'line' | 'column'>, node?: acorn.Node) => {
    const line = node?.loc ? toSourceLine(node.loc.start.line) : undefined;
    problems.push({
      ...p,
      ...(line !== undefined ? { line } : {}),
      ...(node?.loc && !lineMap ? { column: node.loc.start.column + 1 } : {}),
    });
  };

  // Pass 1: declarations, each into the scope JavaScript puts it in.
  const nearest = (ancestors: acorn.Node[], blockScoped: boolean): Scope => {
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const node = ancestors[i];
      if (isFunction(node) || node.type === 'Program' || node.type === 'StaticBlock') return node;
      if (
        blockScoped &&
        (node.type === 'BlockStatement' ||
          node.type === 'ForStatement' ||
          node.type === 'ForInStatement' ||
          node.type === 'ForOfStatement' ||
          node.type === 'SwitchStatement')
      ) {
        // A function's body block shares the function's scope for our purposes.
        const parent = ancestors[i - 1];
        if (node.type === 'BlockStatement' && parent && isFunction(parent)) return parent;
        return node;
      }
    }
    return program;
  };
  /** Initialiser ranges of top-level let/const declarations, by declared name (for self-reference). */
  const initialisers = new Map<string, Array<{ start: number; end: number }>>();
  walk.ancestor(program, {
    VariableDeclaration(node, _state, ancestors) {
      const scope = nearest(ancestors, node.kind !== 'var');
      for (const declarator of node.declarations)
        for (const name of patternNames(declarator.id)) {
          declare(scope, name);
          if (scope !== program) continue;
          topLevel.push(name);
          // Only let/const: `var` has no dead zone, and esbuild compiles `enum E` to `var E = ...(E || {})`.
          if (node.kind !== 'var' && declarator.init) {
            const list = initialisers.get(name) ?? [];
            list.push({ start: declarator.init.start, end: declarator.init.end });
            initialisers.set(name, list);
          }
        }
    },
    Function(node, _state, ancestors) {
      if (node.type === 'FunctionDeclaration' && node.id) {
        const scope = nearest(ancestors, true);
        declare(scope, node.id.name);
        if (scope === program) topLevel.push(node.id.name);
      } else if (node.type === 'FunctionExpression' && node.id) {
        declare(node, node.id.name);
      }
      for (const param of node.params) for (const name of patternNames(param)) declare(node, name);
      if (node.type !== 'ArrowFunctionExpression') declare(node, 'arguments');
    },
    Class(node, _state, ancestors) {
      if (!node.id) return;
      if (node.type === 'ClassDeclaration') {
        const scope = nearest(ancestors, true);
        declare(scope, node.id.name);
        if (scope === program) topLevel.push(node.id.name);
      } else declare(node, node.id.name);
    },
    CatchClause(node) {
      for (const name of patternNames(node.param)) declare(node, name);
    },
    ImportDeclaration(node) {
      for (const specifier of node.specifiers) {
        declare(program, specifier.local.name);
        topLevel.push(specifier.local.name);
        const binding =
          specifier.type === 'ImportSpecifier'
            ? specifier.imported.type === 'Identifier'
              ? specifier.imported.name
              : String(specifier.imported.value)
            : specifier.type === 'ImportDefaultSpecifier'
              ? 'default'
              : '*';
        imports[specifier.local.name] = `${String(node.source.value)} ${binding}`;
      }
    },
  });

  const resolve = (name: string, ancestors: acorn.Node[]): 'local' | 'top' | 'free' => {
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const node = ancestors[i];
      if (node !== program && scopes.get(node)?.has(name)) return 'local';
    }
    return scopes.get(program)?.has(name) ? 'top' : 'free';
  };

  const reads: string[] = [];
  const globals: string[] = [];
  const seenFree = new Set<string>();
  const reported = new Set<string>();
  const reportOnce = (key: string, p: Omit<CellProblem, 'line' | 'column'>, node: acorn.Node) => {
    if (reported.has(key)) return;
    reported.add(key);
    problem(p, node);
  };

  const useFree = (name: string, node: acorn.Node) => {
    if (PRIVATE(name)) {
      reportOnce(
        `private:${name}`,
        {
          kind: 'private',
          severity: 'error',
          name,
          message: `\`${name}\` is not defined in this cell; names starting with _ are private to the cell that declares them`,
        },
        node,
      );
      return;
    }
    if (seenFree.has(name)) return;
    seenFree.add(name);
    (GLOBALS.has(name) ? globals : reads).push(name);
  };

  /** `const x = x + 1`: a use of top-level `x` inside x's own initialiser, not behind a function. */
  const checkSelfReference = (name: string, node: acorn.Node, ancestors: acorn.Node[]) => {
    const range = initialisers.get(name)?.find((r) => node.start >= r.start && node.end <= r.end);
    if (!range) return;
    // Behind a function or class body defined inside the initialiser, the use runs later: fine.
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const a = ancestors[i];
      if (a.start < range.start) break;
      if (isFunction(a) || a.type === 'ClassBody') return;
    }
    reportOnce(
      `self:${name}`,
      {
        kind: 'self-reference',
        severity: 'error',
        name,
        message:
          `\`${name}\` is used in its own definition; in a cell it refers to this cell's \`${name}\`, ` +
          `which is not initialised yet. To build on another cell's \`${name}\`, give the result a new name`,
      },
      node,
    );
  };

  const reassignment = (name: string, node: acorn.Node) =>
    reportOnce(
      `assign:${name}`,
      {
        kind: 'reassignment',
        severity: 'error',
        name,
        message:
          `assigns to \`${name}\`, which this cell does not declare; a cell may only change the names it defines. ` +
          `Declare a new name instead (e.g. \`const ${name}2 = ...\`)`,
      },
      node,
    );

  const rootIdentifier = (node: acorn.Node): acorn.Identifier | undefined => {
    let current: acorn.Node = node;
    while (current.type === 'MemberExpression' || current.type === 'ChainExpression') {
      current =
        current.type === 'ChainExpression' ? (current as acorn.ChainExpression).expression : (current as acorn.MemberExpression).object;
    }
    return current.type === 'Identifier' ? (current as acorn.Identifier) : undefined;
  };
  const mutation = (target: acorn.Node, how: string, ancestors: acorn.Node[]) => {
    const root = rootIdentifier(target);
    if (!root || GLOBALS.has(root.name) || resolve(root.name, ancestors) !== 'free') return;
    reportOnce(
      `mutate:${root.name}`,
      {
        kind: 'mutation',
        severity: 'warning',
        name: root.name,
        message:
          `${how} \`${root.name}\`, which another cell defines; cells that read \`${root.name}\` will not re-run ` +
          `and re-running its cell undoes the change. Mutate it in the cell that defines it`,
      },
      target,
    );
  };

  // Pass 2: references, resolved against the scopes found above.
  walk.ancestor(program, {
    Identifier(node, _state, ancestors) {
      const parent = ancestors[ancestors.length - 2];
      const where = resolve(node.name, ancestors);
      if (where === 'top') checkSelfReference(node.name, node, ancestors);
      if (where !== 'free') return;
      if (parent?.type === 'UpdateExpression') reassignment(node.name, node);
      else if ((parent?.type === 'ForOfStatement' || parent?.type === 'ForInStatement') && parent.left === node) {
        reassignment(node.name, node);
      }
      if (node.name === 'arguments' && ancestors.some(isFunction)) return;
      useFree(node.name, node);
    },
    VariablePattern(node: acorn.Node, _state: unknown, ancestors: acorn.Node[]) {
      // Identifiers in binding position: declarations (skip) or assignment targets (a use + a write).
      const id = node as acorn.Identifier;
      let i = ancestors.length - 2;
      while (i >= 0 && PATTERN_TYPES.has(ancestors[i].type)) {
        // In `{ a = b }` only `a` is a target; `b` reaches us as an Identifier instead.
        i--;
      }
      const owner = ancestors[i];
      if (owner?.type !== 'AssignmentExpression') return;
      const where = resolve(id.name, ancestors);
      if (where === 'top') {
        checkSelfReference(id.name, id, ancestors);
        return;
      }
      if (where === 'free') {
        reassignment(id.name, id);
        useFree(id.name, id);
      }
    },
    AssignmentExpression(node, _state, ancestors) {
      if (node.left.type === 'MemberExpression') mutation(node.left, 'assigns to a property of', ancestors);
    },
    UpdateExpression(node, _state, ancestors) {
      if (node.argument.type === 'MemberExpression') mutation(node.argument, 'changes a property of', ancestors);
    },
    UnaryExpression(node, _state, ancestors) {
      if (node.operator === 'delete' && node.argument.type === 'MemberExpression') {
        mutation(node.argument, 'deletes a property of', ancestors);
      }
    },
    CallExpression(node, _state, ancestors) {
      const callee = node.callee;
      if (callee.type !== 'MemberExpression' || callee.computed || callee.property.type !== 'Identifier') return;
      if (MUTATORS.has(callee.property.name)) {
        mutation(callee.object, `calls .${callee.property.name}() on`, ancestors);
      }
    },
    // acorn-walk calls `VariablePattern` for identifiers in binding position; its types omit it.
  } as walk.AncestorVisitors<unknown>);

  // Module syntax: `export` is refused (imports are rewritten by codegen.ts).
  for (const statement of program.body) {
    if (
      statement.type === 'ExportNamedDeclaration' ||
      statement.type === 'ExportDefaultDeclaration' ||
      statement.type === 'ExportAllDeclaration'
    ) {
      problem(
        {
          kind: 'export',
          severity: 'error',
          message: '`export` is not needed in a cell: every top-level name is shared with the other cells already',
        },
        statement,
      );
    }
  }

  const writes: string[] = [];
  const privates: string[] = [];
  for (const name of topLevel) {
    const list = PRIVATE(name) ? privates : writes;
    if (!list.includes(name)) list.push(name);
  }
  return { writes, reads, globals, privates, problems, imports };
}
