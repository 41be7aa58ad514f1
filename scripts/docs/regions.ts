// Generated regions of a Markdown file: the text between
//   <!-- BEGIN GENERATED name: npm run docs:generate -->
//   <!-- END GENERATED name -->
// belongs to the generator of `name` (scripts/docs/generate.ts); everything
// else is written by hand. A region's markers stay; only what is between them
// is replaced.

const begin = (name: string) => `<!-- BEGIN GENERATED ${name}: npm run docs:generate -->`;
const end = (name: string) => `<!-- END GENERATED ${name} -->`;

/** The names of the regions `text` has, in order. */
export function regionNames(text: string): string[] {
  return [...text.matchAll(/<!-- BEGIN GENERATED ([a-z0-9-]+):/g)].map((m) => m[1] as string);
}

/** `text` with region `name`'s body replaced by `body`; throws if the markers are missing or out of order. */
export function replaceRegion(text: string, name: string, body: string): string {
  const from = text.indexOf(begin(name));
  const to = text.indexOf(end(name));
  if (from < 0 || to < from) throw new Error(`no region ${name}: expected the lines ${begin(name)} and ${end(name)}, in that order`);
  if (text.indexOf(begin(name), from + 1) >= 0) throw new Error(`region ${name} is marked twice`);
  const head = text.slice(0, from + begin(name).length);
  return `${head}\n${body.trimEnd()}\n${text.slice(to)}`;
}

/** Region `name`'s body, without its markers. */
export function regionBody(text: string, name: string): string {
  const from = text.indexOf(begin(name));
  const to = text.indexOf(end(name));
  if (from < 0 || to < from) throw new Error(`no region ${name}`);
  return text.slice(from + begin(name).length, to).trim();
}

/** Text as one Markdown table cell: `|` escaped, and `<`, `>` outside code spans (GitHub would read a tag). */
export function tableCell(text: string): string {
  return text
    .replace(/\n/g, ' ')
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/</g, '&lt;').replace(/>/g, '&gt;')))
    .join('')
    .replace(/\|/g, '\\|');
}
