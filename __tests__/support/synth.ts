import { Testing } from "cdktf";
import { BackendKind, loadConfig } from "../../config/load";
import { KubeOnOsStack } from "../../constructs/stack";

/** Terraform JSON as the tests read it. */
export interface TerraformJson {
  terraform: Record<string, any>;
  provider: Record<string, any>;
  variable: Record<string, any>;
  /** Strings, but for the object locals (salt_pillar_data). */
  locals: Record<string, any>;
  resource: Record<string, Record<string, any>>;
  data: Record<string, Record<string, any>>;
  output: Record<string, any>;
  removed?: { from: string; lifecycle: { destroy: boolean } }[];
}

/** Builds the stack exactly as main.ts does, from an explicit environment. */
export async function buildStack(env: NodeJS.ProcessEnv = {}, backend: BackendKind = "http"): Promise<KubeOnOsStack> {
  const app = Testing.app();
  return new KubeOnOsStack(app, "kube-on-os", { config: await loadConfig(env), backend });
}

export async function synthStack(env: NodeJS.ProcessEnv = {}, backend: BackendKind = "http"): Promise<TerraformJson> {
  return JSON.parse(Testing.synth(await buildStack(env, backend)));
}

/** Synthesizes into `outdir` like `cdktf synth`, returning the stack's directory (the rehearsal engine's). */
export { synthToDir } from "../../tools/rehearsal/engine";

/** The single resource of `type` whose construct id is `id` (logical ids end in `_<id>_<hash>`). */
export function resourceById(json: TerraformJson, type: string, id: string): Record<string, any> {
  const logicalId = new RegExp(`(^|_)${id}_[0-9A-F]{8}$`);
  const matches = Object.entries(json.resource[type] ?? {})
    .filter(([key]) => logicalId.test(key))
    .map(([, resource]) => resource);
  if (matches.length !== 1) throw new Error(`expected one ${type} with id ${id}, found ${matches.length}`);
  return matches[0];
}

/** The single local whose construct path is `id` (`<scope>_<name>`, logical ids end in `_<hash>`), as [its name, its value]. */
export function localById(json: TerraformJson, id: string): [string, any] {
  const logicalId = new RegExp(`^${id}_[0-9A-F]{8}$`);
  const matches = Object.entries(json.locals ?? {}).filter(([key]) => logicalId.test(key));
  if (matches.length !== 1) throw new Error(`expected one local with id ${id}, found ${matches.length}`);
  return matches[0];
}
