// Issue 16's code-shape rules hold for native/src (scripts/code-shape.ts): no
// file over 600 lines, no function over 80 lines without a comment saying why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { check, functions, problems, sources } from '../../scripts/code-shape.js';

const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i};  // "{" in a comment and '}' in a literal`).join('\n');

test('the scan finds functions, methods and constructors, not the blocks, lambdas and classes around or inside them', () => {
  const source = `namespace a {
struct S {
  int get() const { return 1; }
};
S::S(int v) : v_(v) {
  if (v) {
    auto f = [&](int y) { return y; };
  }
}
int f(int x) noexcept {
  for (;;) { break; }
  return x;
}
}  // namespace a
`;
  assert.deepEqual(
    functions(source).map((f) => [f.name, f.first, f.last]),
    [
      ['get', 3, 3],
      ['S::S', 5, 9],
      ['f', 10, 13],
    ],
  );
});

test('a function over 80 lines is reported unless a "// long because:" comment above it says why', () => {
  const long = `int f() {\n${body(85)}\n}\n`;
  assert.deepEqual(problems('x.cc', long), ['x.cc:1: f is 87 lines (at most 80 without a "// long because:" comment)']);
  assert.deepEqual(problems('x.cc', `// long because: one case per record type.\n${long}`), []);
  assert.deepEqual(problems('x.cc', `int f() {\n${body(78)}\n}\n`), []);
  assert.deepEqual(problems('big.h', `${'\n'.repeat(601)}`), ['big.h:1: 601 lines (at most 600): split it by job']);
});

test('native/src has no file over 600 lines and no function over 80 without a reason', () => {
  assert.ok(sources().length > 100, `scanned ${sources().length} files of native/src`);
  assert.deepEqual(check(), []);
});
