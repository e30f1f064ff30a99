import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AssetType, TerraformAsset } from "cdktf";
import { Construct } from "constructs";

/** The project root: the nearest directory up with cdktf.json (constructs/ runs from build/ too). */
function projectRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "cdktf.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`SaltProvisioner: no cdktf.json above ${__dirname}`);
  }
}
export const REPO_ROOT = projectRoot();

/** Files that tests and editors leave in the trees and that must neither ship nor change a hash. */
const DEBRIS = new Set(["__pycache__", ".pytest_cache", ".ruff_cache", ".DS_Store"]);

function treeFiles(dir: string, relative = ""): string[] {
  return fs
    .readdirSync(path.join(dir, relative), { withFileTypes: true })
    .filter((entry) => !DEBRIS.has(entry.name) && !entry.name.endsWith(".pyc"))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => {
      const name = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) return treeFiles(dir, name);
      if (entry.isFile()) return [name];
      throw new Error(`SaltProvisioner: ${path.join(dir, name)} is neither a file nor a directory; the tree must hold plain files only`);
    });
}

/**
 * sha256 over every file's path and content (cdktf's own asset hash ignores names, so a renamed
 * SLS would not re-sync), and a content-addressed copy without debris for the asset to ship.
 */
export function cleanCopy(dir: string): { copy: string; hash: string } {
  const files = treeFiles(dir);
  const digest = createHash("sha256");
  for (const file of files) {
    digest.update(`${file}\0`);
    digest.update(fs.readFileSync(path.join(dir, file)));
    digest.update("\0");
  }
  const hash = digest.digest("hex");
  const copy = path.join(os.tmpdir(), "kube-on-os-assets", hash);
  if (!fs.existsSync(copy)) {
    // Built beside its final name and renamed, so parallel syntheses never see a partial copy.
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    const partial = fs.mkdtempSync(`${copy}.partial-`);
    for (const file of files) {
      fs.mkdirSync(path.dirname(path.join(partial, file)), { recursive: true });
      fs.copyFileSync(path.join(dir, file), path.join(partial, file));
    }
    try {
      fs.renameSync(partial, copy);
    } catch (error) {
      fs.rmSync(partial, { recursive: true, force: true });
      if (!fs.existsSync(copy)) throw error;
    }
  }
  return { copy, hash };
}

/** A directory the chain uploads: its clean copy as a Terraform asset, and its content hash for triggers. */
export interface UploadedTree {
  readonly asset: TerraformAsset;
  readonly hash: string;
}

export interface UploadedTreeProps {
  /** The directory to ship. */
  readonly dir: string;
  /** The setting that named it, for the error when it is not a directory. */
  readonly prop: string;
}

/** Ships a directory as the asset `id`. */
export function uploadedTree(scope: Construct, id: string, props: UploadedTreeProps): UploadedTree {
  const { dir, prop } = props;
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new Error(`SaltProvisioner: ${prop} must be a directory (got "${dir}")`);
  }
  const { copy, hash } = cleanCopy(dir);
  return { asset: new TerraformAsset(scope, id, { path: copy, type: AssetType.DIRECTORY, assetHash: hash }), hash };
}
