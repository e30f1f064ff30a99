/**
 * Prints, byte for byte, the /srv/pillar/_from_terraform.sls that Terraform writes for the stack
 * synthesized with this process's TF_VAR_* values: the stack is applied against the OpenStack
 * API double (without the provisioning chain, which has no machines to log in to), the pillar is
 * evaluated from the state by `tofu console`, and everything is destroyed again. The Salt render
 * tests build their minions' pillar from it, so they test the pillar Terraform really writes.
 *
 *   node --require ./scripts/register-ts.js __tests__/support/terraform-pillar.ts
 */
import { startStateServer } from "../doubles/http-state/server";
import { startOpenStackDouble } from "../doubles/openstack/server";
import { workspace } from "./workspace";

async function main(): Promise<void> {
  const synthEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith("TF_VAR_")));
  const double = await startOpenStackDouble({ settled: true });
  const state = await startStateServer({ username: "pillar", password: "pillar-password" });
  try {
    const ws = await workspace(double, state, synthEnv);
    const run = async (args: string[], input?: string) => {
      const result = await ws.tofu(args, {}, input);
      if (result.status !== 0) throw new Error(`tofu ${args[0]} failed:\n${result.stderr}${result.stdout}`);
      return result.stdout;
    };
    await run(["apply", "-auto-approve", "-input=false"]);
    // Base64, because the console prints strings in HCL syntax, where `${` reads `$${`.
    const pillar = Buffer.from(JSON.parse((await run(["console"], "base64encode(local.salt_pillar)\n")).trim()), "base64");
    await run(["destroy", "-auto-approve", "-input=false"]);
    process.stdout.write(pillar);
  } finally {
    await double.close();
    await state.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
