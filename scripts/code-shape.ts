// The code-shape rules of issue 16's "done when", as a check: no source file
// of native/src or src/ (TypeScript; the generated src/declared/*.ts are data
// and left out) over MAX_FILE_LINES lines, and no function over
// MAX_FUNCTION_LINES without a `// long because:` comment on one of the three
// lines above it. TypeScript functions are the compiler's own parse
// (typescript's createSourceFile). C++ functions are found by a brace-matching scan (comments,
// strings and character literals blanked first): a `{` whose statement so far
// ends in a parameter list (`) const noexcept -> T {`, a constructor's
// initializer list included) and is no control statement or lambda opens one;
// what is nested inside a function (lambdas, local classes) counts as its body.
// `node dist/scripts/code-shape.js` prints what breaks the rules, exit 1 if any.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_FILE_LINES = 600;
export const MAX_FUNCTION_LINES = 80;
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface FunctionSpan {
  name: string;
  /** 1-based lines of the opening and closing brace. */
  first: number;
  last: number;
}

/** `text` with comments, string and character literals replaced by spaces (newlines kept). */
export function blank(text: string): string {
  return text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|R"([^(]*)\([\s\S]*?\)\1"|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g, (m) =>
    m.replace(/[^\n]/g, ' '),
  );
}

const CONTROL = /^(?:if|for|while|switch|catch|do|else|return|namespace|class|struct|union|enum)\b/;

/** The head of a statement `{` opens a function body for, or undefined. */
function functionName(head: string): string | undefined {
  const h = head.replace(/\s+/g, ' ').trim();
  if (h === '' || h.startsWith('#') || CONTROL.test(h) || /\]\s*\(/.test(h) || /[=,(]\s*\[/.test(h)) return undefined;
  // `f(args) const noexcept override -> T`, or a constructor `C(args) : a_(x), b_{y}`.
  const m = /([~\w:<>]+)\s*\([^]*\)\s*(?:const|noexcept|override|final|mutable|&|->\s*[\w:<>,\s*&]+|\s)*(?::[^]*)?$/.exec(h);
  if (!m) return undefined;
  if (/^(?:if|for|while|switch|catch)$/.test(m[1] as string)) return undefined;
  return m[1];
}

/** The outermost functions of one C++ source text. */
export function functions(source: string): FunctionSpan[] {
  const text = blank(source);
  const out: FunctionSpan[] = [];
  const stack: { fn?: FunctionSpan }[] = [];
  let line = 1;
  let head = '';
  for (const ch of text) {
    if (ch === '\n') line++;
    if (ch === '{') {
      const inFunction = stack.some((s) => s.fn !== undefined);
      const name = inFunction ? undefined : functionName(head);
      stack.push(name === undefined ? {} : { fn: { name, first: line, last: line } });
      head = '';
    } else if (ch === '}') {
      const open = stack.pop();
      if (open?.fn) {
        open.fn.last = line;
        out.push(open.fn);
      }
      head = '';
    } else if (ch === ';') {
      head = '';
    } else if (ch === '\n' && /^\s*#/.test(head.split('\n').pop() ?? '')) {
      head = head.slice(0, head.lastIndexOf('\n') + 1);
    } else {
      head += ch;
    }
  }
  return out;
}

/** A TypeScript function's name: its own, its variable's or property's, or `(anonymous)`. */
function tsName(node: ts.SignatureDeclaration, file: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name !== undefined) return node.name.getText(file);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) {
    return parent.name.getText(file);
  }
  return '(anonymous)';
}

/** The outermost functions (declarations, methods, accessors, constructors, arrows, expressions) of one TypeScript text. */
export function tsFunctions(source: string): FunctionSpan[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const out: FunctionSpan[] = [];
  const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      out.push({ name: tsName(node, file), first: line(node.getStart(file)), last: line(node.getEnd()) });
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/** What in one file breaks the rules, as `path:line: message` lines. */
export function problems(path: string, source: string): string[] {
  const lines = source.split('\n');
  const out: string[] = [];
  const count = source.endsWith('\n') ? lines.length - 1 : lines.length;
  if (count > MAX_FILE_LINES) out.push(`${path}:1: ${count} lines (at most ${MAX_FILE_LINES}): split it by job`);
  for (const f of path.endsWith('.ts') ? tsFunctions(source) : functions(source)) {
    const length = f.last - f.first + 1;
    if (length <= MAX_FUNCTION_LINES) continue;
    const above = lines.slice(Math.max(0, f.first - 4), f.first).join('\n');
    if (/\/\/ long because:/.test(above)) continue;
    out.push(`${path}:${f.first}: ${f.name} is ${length} lines (at most ${MAX_FUNCTION_LINES} without a "// long because:" comment)`);
  }
  return out;
}

/** Every .h/.cc/.cpp file under `dir`, as paths relative to the repository. */
export function sources(dir = join(ROOT, 'native/src')): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(?:h|cc|cpp)$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort();
}

/** Generated modules (src/declared/*.ts) say so on their first line: they are data, not code to shape. */
export const GENERATED = /^\/\/ Generated by /;

/** Every hand-written .ts file under `dir`, as paths relative to the repository. */
export function tsSources(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((p) => !GENERATED.test(readFileSync(join(ROOT, p), 'utf8')))
    .sort();
}

export function check(): string[] {
  return [...sources(), ...tsSources()].flatMap((p) => problems(p, readFileSync(join(ROOT, p), 'utf8')));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = check();
  for (const p of found) process.stdout.write(`${p}\n`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
