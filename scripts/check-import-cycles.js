#!/usr/bin/env node
// Fails when the product's TypeScript imports itself in a circle: facts/, config/, constructs/ and
// main.ts. Run by scripts/lint.sh; eslint's no-restricted-imports (eslint.config.mjs) keeps each
// layer from importing the ones above it, and this check keeps files of one layer from tangling.
//
//   node scripts/check-import-cycles.js [ROOT]
//
// TypeScript's own scanner (ts.preProcessFile) reads each file's imports, type-only imports
// included; a relative one resolves to <path>.ts or <path>/index.ts. Every cycle found is one line:
// `a.ts → b.ts → a.ts`.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

/** The product's TypeScript, relative to the root: what the app is built from. */
const PRODUCT = ["main.ts", "facts", "config", "constructs"];

function productFiles(root) {
  const files = [];
  const walk = (relative) => {
    const absolute = path.join(root, relative);
    if (!fs.existsSync(absolute)) return;
    if (fs.statSync(absolute).isDirectory()) {
      for (const entry of fs.readdirSync(absolute).sort()) walk(path.join(relative, entry));
    } else if (relative.endsWith(".ts") && !relative.endsWith(".d.ts")) {
      files.push(relative);
    }
  };
  PRODUCT.forEach(walk);
  return files;
}

/** The product files `file` imports (relative imports only: packages and .gen cannot import back). */
function importsOf(root, file, known) {
  const text = fs.readFileSync(path.join(root, file), "utf8");
  const targets = [];
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!fileName.startsWith(".")) continue;
    const base = path.normalize(path.join(path.dirname(file), fileName));
    const target = [`${base}.ts`, path.join(base, "index.ts")].find((candidate) => known.has(candidate));
    if (target) targets.push(target);
  }
  return targets;
}

/** Every import cycle among the product files, each as the list of files around it. */
function importCycles(root) {
  const files = productFiles(root);
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, importsOf(root, file, known)]));
  // Tarjan's strongly connected components: each component of more than one file (or a file
  // importing itself) holds a cycle; one path around it is enough to name it.
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (file) => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file)) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file), low.get(target)));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file), index.get(target)));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file).includes(file)) cycles.push(cycleThrough(graph, new Set(component), file));
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return cycles;
}

/** A path from `start` back to itself inside one strongly connected component (breadth first). */
function cycleThrough(graph, component, start) {
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const target of graph.get(file)) {
      if (!component.has(target)) continue;
      if (target === start) {
        const cycle = [start];
        for (let at = file; at !== start; at = previous.get(at)) cycle.splice(1, 0, at);
        return [...cycle, start];
      }
      if (!previous.has(target)) {
        previous.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

function main() {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, ".."));
  const cycles = importCycles(root);
  for (const cycle of cycles) console.error(`import cycle: ${cycle.join(" → ")}`);
  if (cycles.length > 0) {
    console.error(
      "kube-on-os: the product's imports must not form a cycle: move what both files need into a lower layer (docs/architecture.md, Layers)",
    );
    process.exit(1);
  }
}

if (require.main === module) main();

module.exports = { importCycles };
