/**
 * Saved plans read as `tofu show -json` prints them (https://opentofu.org/docs/internals/json-format/).
 */
import type { CloudTarget } from "./target";
import type { Workspace } from "./workspace";

/** Plans the workspace with `extra` in the environment and returns the plan as JSON. */
export async function planJson(ws: Workspace, extra: NodeJS.ProcessEnv = {}): Promise<any> {
  const plan = await ws.tofu(["plan", "-input=false", "-out=tfplan"], extra);
  if (plan.status !== 0) throw new Error(`tofu plan failed:\n${plan.stderr}${plan.stdout}`);
  const show = await ws.tofu(["show", "-json", "tfplan"]);
  if (show.status !== 0) throw new Error(`tofu show failed:\n${show.stderr}`);
  return JSON.parse(show.stdout);
}

/**
 * Plans the workspace with `extra` in the environment, expecting a refusal before anything
 * exists on `target`; returns its messages on one line (the CLIs' box drawing and line breaks
 * folded), for toContain.
 */
export async function failedPlan(ws: Workspace, target: CloudTarget, extra: NodeJS.ProcessEnv): Promise<string> {
  const plan = await ws.tofu(["plan", "-input=false"], extra);
  expect(plan.status).not.toBe(0);
  expect(await target.resources()).toEqual([]);
  return plan.stderr.replace(/[│╷╵]/g, " ").replace(/\s+/g, " ");
}
