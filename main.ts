import { App } from "cdktf";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "./config/config-error";
import { loadSettings } from "./config/load";
import { KubeOnOsStack } from "./constructs/stack";

/** Stack name; the synthesized JSON lands in cdktf.out/stacks/<name>/cdk.tf.json. */
export const STACK_NAME = "kube-on-os";

/**
 * Removes what an earlier synth wrote into `outdir` (where App writes: CDKTF_OUTDIR, else
 * cdktf.out), so that a synth that fails leaves no JSON that looks current. The stack's state and
 * `.terraform` stay.
 */
function removeEarlierOutput(outdir: string): void {
  for (const file of [path.join(outdir, "manifest.json"), path.join(outdir, "stacks", STACK_NAME, "cdk.tf.json")]) {
    fs.rmSync(file, { force: true });
  }
}

async function main(): Promise<void> {
  removeEarlierOutput(process.env.CDKTF_OUTDIR ?? "cdktf.out");
  // Everything is read and validated before the App exists, so a bad value writes nothing.
  const { config, backend } = await loadSettings(process.env);
  const app = new App();
  new KubeOnOsStack(app, STACK_NAME, { config, backend });
  app.synth();
}

main().catch((error: unknown) => {
  // A configuration mistake is one line for the user, not a stack trace.
  if (error instanceof ConfigError) {
    console.error(`kube-on-os: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exit(1);
});
