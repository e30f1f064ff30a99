import { App } from "cdktf";
import { ConfigError } from "./config/config-error";
import { loadSettings } from "./config/load";
import { KubeOnOsStack } from "./constructs/stack";

/** Stack name; the synthesized JSON lands in cdktf.out/stacks/<name>/cdk.tf.json. */
export const STACK_NAME = "kube-on-os";

async function main(): Promise<void> {
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
