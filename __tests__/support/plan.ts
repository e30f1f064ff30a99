/**
 * Saved plans read as `tofu show -json` prints them (https://opentofu.org/docs/internals/json-format/).
 */
import type { Workspace } from "./workspace";

/** Plans the workspace with `extra` in the environment and returns the plan as JSON. */
export async function planJson(ws: Workspace, extra: NodeJS.ProcessEnv = {}): Promise<any> {
  const plan = await ws.tofu(["plan", "-input=false", "-out=tfplan"], extra);
  if (plan.status !== 0) throw new Error(`tofu plan failed:\n${plan.stderr}${plan.stdout}`);
  const show = await ws.tofu(["show", "-json", "tfplan"]);
  if (show.status !== 0) throw new Error(`tofu show failed:\n${show.stderr}`);
  return JSON.parse(show.stdout);
}
