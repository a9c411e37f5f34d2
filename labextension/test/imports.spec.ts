/**
 * The import graph of labextension/src. No module reaches itself through its imports: a circle
 * makes load order matter and means no part of it can be read (or replaced) alone. And
 * tokens.ts, the contract other extensions consume, declares interfaces over external packages
 * and the generated protocol.ts only, so it never follows a concrete class. Type-only imports
 * count: a circle of types ties the modules together for a reader as much as any other.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const SRC = path.join(__dirname, '..', 'src');

/** For each module of src (its file name without `.ts`): the modules of src it imports, and the packages. */
interface IImports {
  local: Map<string, string[]>;
  external: Map<string, string[]>;
}

/** What each module of `dir` imports: `import`, `import type`, `export … from`, `import()`. */
function readImports(dir: string): IImports {
  const local = new Map<string, string[]>();
  const external = new Map<string, string[]>();
  for (const file of fs.readdirSync(dir).filter(f => f.endsWith('.ts')).sort()) {
    const name = file.slice(0, -'.ts'.length);
    const specifiers = ts
      .preProcessFile(fs.readFileSync(path.join(dir, file), 'utf8'), true, true)
      .importedFiles.map(f => f.fileName);
    local.set(
      name,
      specifiers
        .filter(s => s.startsWith('.'))
        .map(s => {
          const target = path.relative(dir, path.resolve(dir, s));
          if (target.startsWith('..') || target.includes(path.sep)) {
            throw new Error(`${file} imports ${s}: this check reads only the modules directly in ${dir}`);
          }
          return target.replace(/\.(ts|js)$/, '');
        })
    );
    external.set(name, specifiers.filter(s => !s.startsWith('.')));
  }
  return { local, external };
}

/** Modules that import each other in a circle: all of them, and one shortest circle. */
interface ICircle {
  members: string[];
  path: string[];
}

/**
 * The import circles of a graph, one per strongly connected component (Tarjan): its modules
 * and a path `[a, b, …, a]` through them, shortest from the first.
 */
function importCircles(graph: Map<string, string[]>): ICircle[] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) {
        components.push(component.sort());
      }
    }
  };
  for (const v of graph.keys()) {
    if (!index.has(v)) {
      visit(v);
    }
  }
  return components.map(members => ({ members, path: shortestCircle(graph, members) }));
}

/** The shortest path from a component's first module back to it, inside the component. */
function shortestCircle(graph: Map<string, string[]>, component: string[]): string[] {
  const start = component[0];
  const members = new Set(component);
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (w === start) {
        const circle = [start];
        for (let u: string | undefined = v; u !== start && u !== undefined; u = previous.get(u)) {
          circle.splice(1, 0, u);
        }
        return [...circle, start];
      }
      if (members.has(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...component, start];
}

describe('importCircles', () => {
  it('finds each circle once, as a path back to its start', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c', 'd']],
      ['c', ['a']],
      ['d', []],
      ['e', ['e']],
      ['f', ['g']],
      ['g', ['d']]
    ]);
    expect(importCircles(graph)).toEqual([
      { members: ['a', 'b', 'c'], path: ['a', 'b', 'c', 'a'] },
      { members: ['e'], path: ['e', 'e'] }
    ]);
  });

  it('finds none in a graph without one', () => {
    expect(
      importCircles(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []]
        ])
      )
    ).toEqual([]);
  });
});

describe('labextension/src', () => {
  const { local, external } = readImports(SRC);

  it('reads every module and what it imports', () => {
    // A guard on the reader: index.ts imports most modules, tokens.ts is among them.
    expect(local.size).toBeGreaterThan(20);
    expect(local.get('index')).toEqual(expect.arrayContaining(['tokens', 'commands', 'panel', 'session']));
    for (const targets of local.values()) {
      for (const t of targets) {
        expect(local.has(t)).toBe(true);
      }
    }
  });

  it('has no import circle', () => {
    const circles = importCircles(local).map(c => `${c.path.join(' -> ')} (among ${c.members.join(', ')})`);
    expect(circles).toEqual([]);
  });

  it('declares its tokens over external packages and the generated protocol only', () => {
    expect(local.get('tokens')).toEqual(['protocol']);
    expect(local.get('protocol')).toEqual([]);
    expect(external.get('tokens')!.every(s => /^@(jupyterlab|lumino)\//.test(s))).toBe(true);
  });
});
