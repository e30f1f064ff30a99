import * as fs from "node:fs";
import * as path from "node:path";

/** Node.js of one maintained LTS line, from the toolchain (scripts/toolchain/node.sh). */
export interface NodeBuild {
  /** The release line: 22, 24, 26. */
  readonly line: number;
  /** The pinned release, `22.23.5`. */
  readonly version: string;
  /** Its `node`. */
  readonly node: string;
  /** The build's root, with `include/node`: npm_config_nodedir, for node-gyp. */
  readonly home: string;
}

/**
 * Every maintained LTS line's build, oldest first (KOO_NODES, set by scripts/toolchain/env.sh). A
 * build missing from the cache stops the suite, naming the installer: a journey must never fall
 * back to another Node.js.
 */
export function nodeBuilds(): NodeBuild[] {
  const listed = process.env.KOO_NODES;
  if (!listed) throw new Error("KOO_NODES is not set: run the tests with `npm test`, or source scripts/toolchain/env.sh");
  return listed
    .split("\n")
    .filter(Boolean)
    .map((entry) => {
      const version = entry.slice(0, entry.indexOf(" "));
      const node = entry.slice(entry.indexOf(" ") + 1);
      if (!fs.existsSync(node)) {
        throw new Error(`Node.js ${version} is not installed (${node}): run \`bash scripts/toolchain/node.sh\` (npm test does)`);
      }
      return { line: Number(version.split(".")[0]), version, node, home: path.dirname(path.dirname(node)) };
    });
}
