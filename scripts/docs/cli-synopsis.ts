// The README's CLI synopsis, from the commander definition the CLI runs
// (createProgram, src/gateway/cli.ts): one entry per command with its
// arguments and every option, as --help names them (an option given a list
// as its default is repeatable, `...`; a required one has no brackets), then
// a table of what each command does, its --help description.
import type { Argument, Option } from 'commander';
import { createProgram } from '../../src/gateway/cli.js';
import { tableCell } from './regions.js';

const WIDTH = 100;

/** The synopsis in a fenced block, then the commands' table. */
export function cliSynopsis(): string {
  const program = createProgram(() => {});
  const lines = program.commands.flatMap((c) => wrap([`qpgate ${c.name()}`, ...c.registeredArguments.map(argument), ...c.options.map(option)]));
  return [
    '```',
    ...lines,
    'qpgate --version | --help',
    '```',
    '',
    '| command | what |',
    '|---|---|',
    ...program.commands.map((c) => `| \`${c.name()}\` | ${tableCell(c.description())} |`),
  ].join('\n');
}

function argument(a: Argument): string {
  const name = `${a.name()}${a.variadic ? '...' : ''}`;
  return a.required ? `<${name}>` : `[${name}]`;
}

function option(o: Option): string {
  const value = /(<[^>]+>|\[[^\]]+\])/.exec(o.flags)?.[1];
  const text = `${o.long ?? o.short}${value ? ` ${value}` : ''}`;
  const repeatable = Array.isArray(o.defaultValue) ? '...' : '';
  return o.mandatory ? `${text}${repeatable}` : `[${text}]${repeatable}`;
}

/** Words joined into lines of at most WIDTH characters, continuation lines indented under the command. */
function wrap(words: string[]): string[] {
  const indent = ' '.repeat(words[0]!.length + 1);
  const lines: string[] = [];
  let line = words[0]!;
  for (const w of words.slice(1)) {
    if (line.length + 1 + w.length > WIDTH) {
      lines.push(line);
      line = indent + w;
    } else line += ` ${w}`;
  }
  return [...lines, line];
}
