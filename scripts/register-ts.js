// Runs the TypeScript app without a build step, as fast as a build would: `node --require
// ./scripts/register-ts.js main.ts` (cdktf.json's app). Each .ts file is transpiled as ts-node's
// transpile-only mode does (TypeScript's transpileModule with tsconfig.json's options; `npm run
// typecheck` and the tests type-check), and the JavaScript is kept in
// node_modules/.cache/kube-on-os-ts/, named by a hash of the file's content, the options and
// TypeScript's version. An edited file is transpiled again on its next run; an unchanged one
// never is. TypeScript itself (some 400 ms to load) is loaded only when a file needs it.
//
// Why not ts-node: it transpiles every file on every run, the generated OpenStack bindings (.gen/,
// megabytes of TypeScript) included, which was half of a synth's time. Why not a compiled build/:
// one that is not rebuilt after an edit would deploy stale code.
"use strict";

const { Buffer } = require("node:buffer");
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const CACHE = path.join(ROOT, "node_modules", ".cache", "kube-on-os-ts");

const GENERATED = path.join(ROOT, ".gen") + path.sep;

/** tsconfig.json's compiler options as transpileModule takes them (it reads no file itself). */
const options = {
  ...JSON.parse(fs.readFileSync(path.join(ROOT, "tsconfig.json"), "utf8")).compilerOptions,
  sourceMap: false,
  declaration: false,
};
const typescriptVersion = require(path.join(ROOT, "node_modules", "typescript", "package.json")).version;
const salt = `${typescriptVersion}\0${JSON.stringify(options)}\0`;
let typescript;

function transpile(source, filename) {
  typescript ??= require("typescript");
  // Our own files get an inline source map, so that a stack trace names the TypeScript line (see
  // below); the generated bindings none: nobody debugs them.
  const own = !filename.startsWith(GENERATED);
  const parsed = typescript.convertCompilerOptionsFromJson({ ...options, inlineSourceMap: own }, ROOT);
  return typescript.transpileModule(source, { compilerOptions: parsed.options, fileName: filename }).outputText;
}

/** The JavaScript for `filename`, from the cache or transpiled now and cached. */
function javascript(filename) {
  const source = fs.readFileSync(filename, "utf8");
  // The file's path is part of the key: its inline source map names it.
  const key = createHash("sha256").update(salt).update(filename).update("\0").update(source).digest("hex");
  const cached = path.join(CACHE, `${key}.js`);
  try {
    return fs.readFileSync(cached, "utf8");
  } catch {
    // not transpiled yet
  }
  const output = transpile(source, filename);
  try {
    fs.mkdirSync(CACHE, { recursive: true });
    // Written beside its name and renamed: a parallel run never reads half a file.
    const partial = `${cached}.${process.pid}`;
    fs.writeFileSync(partial, output);
    fs.renameSync(partial, cached);
  } catch {
    // A read-only tree still runs, uncached.
  }
  return output;
}

/** The JavaScript of our own files, whose inline source maps name their TypeScript lines. */
const compiled = new Map();

// A stack trace names the TypeScript line of our own files: source-map-support maps a frame only
// when a trace is printed, where Node's --enable-source-maps would parse every module's map (cdktf's
// too) at load, a fifth of a synth. Only our maps are read, and only an Error's trace is mapped:
// cdktf and constructs capture a trace into a plain object for every token and construct they
// create (their captureStackTrace), and mapping those took a sixth of a synth.
require("source-map-support").install({
  environment: "node",
  overrideRetrieveSourceMap: true,
  retrieveSourceMap(source) {
    const js = compiled.get(source);
    const inline = js && /\/\/# sourceMappingURL=data:application\/json;base64,(\S+)\s*$/.exec(js);
    if (!inline) return null;
    // The map names its source relative to tsconfig's outDir; the file itself is the source.
    const map = JSON.parse(Buffer.from(inline[1], "base64").toString("utf8"));
    return { url: source, map: { ...map, sourceRoot: "", sources: [source] } };
  },
});
const sourceMapped = Error.prepareStackTrace;
Error.prepareStackTrace = (error, frames) =>
  error instanceof Error ? sourceMapped(error, frames) : `${error}${frames.map((frame) => `\n    at ${frame}`).join("")}`;

require.extensions[".ts"] = function (module, filename) {
  const js = javascript(filename);
  if (!filename.startsWith(GENERATED)) compiled.set(filename, js);
  module._compile(js, filename);
};
