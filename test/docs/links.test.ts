// Every relative link in README.md and docs/*.md leads somewhere: the file or
// directory exists in this checkout, and a #anchor names a heading of the
// page it points into (GitHub's heading ids, made by github-slugger as GitHub
// makes them). Links in code blocks and code spans are not links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The page's lines outside fenced code blocks (those inside are blank, so line numbers hold). */
function outsideFences(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** The #ids of a page's headings, as GitHub renders them: a code span keeps its text, a link its label. */
function anchors(file: string): Set<string> {
  const slugger = new GithubSlugger();
  return new Set(
    outsideFences(readFileSync(file, 'utf8')).flatMap((line) => {
      const m = /^#{1,6}\s+(.*?)\s*$/.exec(line);
      return m ? [slugger.slug((m[1] as string).replace(/[`*]/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'))] : [];
    }),
  );
}

interface Link {
  page: string;
  line: number;
  target: string;
}

function relativeLinks(page: string): Link[] {
  const lines = outsideFences(readFileSync(join(ROOT, page), 'utf8')).map((l) => l.replace(/`[^`]*`/g, ''));
  return lines.flatMap((text, i) =>
    [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
      .map((m) => m[1] as string)
      .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t))
      .map((target) => ({ page, line: i + 1, target })),
  );
}

/** Why the link does not resolve, or undefined when it does. */
function problem(link: Link): string | undefined {
  const [path, anchor] = link.target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? join(ROOT, link.page) : join(ROOT, dirname(link.page), decodeURIComponent(path));
  if (!existsSync(file)) return `${relative(ROOT, file)} does not exist`;
  if (anchor === undefined) return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `#${anchor} points into ${relative(ROOT, file)}, which has no headings`;
  return anchors(file).has(anchor) ? undefined : `${relative(ROOT, file)} has no heading #${anchor}`;
}

test('README.md and docs/*.md have relative links to check', () => {
  assert.ok(relativeLinks('README.md').length >= 10, 'the README links to docs/, bench/, examples/ and its own sections');
});

for (const page of PAGES) {
  test(`every relative link in ${page} resolves (file and #anchor)`, () => {
    const broken = relativeLinks(page).flatMap((l) => {
      const p = problem(l);
      return p ? [`${l.page}:${l.line}: (${l.target}): ${p}`] : [];
    });
    assert.deepEqual(broken, []);
  });
}
