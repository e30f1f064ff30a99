/**
 * `npm run double`: starts the OpenStack API double and the http state server on 127.0.0.1 and
 * prints the environment that points tofu (or terraform, or the openstack CLI) at them, so a
 * deployment can be rehearsed offline. Stops on Ctrl-C.
 */
import { startStateServer } from "../http-state/server";
import { startOpenStackDouble } from "./server";

async function main(): Promise<void> {
  const double = await startOpenStackDouble();
  const state = await startStateServer();
  const env = { ...double.passwordEnv(), ...state.backendEnv("kube-on-os") };
  console.log("# OpenStack API double and http state server are running. In another shell:");
  for (const [key, value] of Object.entries(env)) console.log(`export ${key}='${value}'`);
  console.log("# then: npm run synth && cd cdktf.out/stacks/kube-on-os && tofu init && tofu plan");
  console.log(`# state files: ${state.dir}`);
  const stop = async () => {
    await Promise.all([double.close(), state.close()]);
    if (double.unhandled.length > 0) {
      console.error(`openstack-double: ${double.unhandled.length} request(s) were not implemented (listed above)`);
    }
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
