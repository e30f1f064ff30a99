/**
 * The cloud an L2/L3 test file deploys to: one OpenStack API double and one http state server,
 * started before the file's first test and closed after its last. After every test, the double
 * must have implemented every request it got.
 */
import { StateServer, StateServerOptions, startStateServer } from "../doubles/http-state/server";
import { OpenStackDouble, OpenStackDoubleOptions, startOpenStackDouble } from "../doubles/openstack/server";
import { CloudTarget, doubleTarget } from "./target";

/** Basic auth as the pipeline's state backend sends it: GitLab's CI job token user. */
export const GITLAB_STATE: StateServerOptions = { username: "gitlab-ci-token", password: "state-password-5f1c" };

export interface CloudOptions {
  /** @default {} - the double's own defaults */
  readonly double?: OpenStackDoubleOptions;
  /** @default {} - a state server without authentication */
  readonly state?: StateServerOptions;
}

export interface Cloud {
  readonly double: OpenStackDouble;
  /**
   * The double as the cloud is read (./target.ts): what the project holds, its servers, keypairs
   * and load balancers. Seeding quotas, faults and usage is the double's own.
   */
  readonly target: CloudTarget;
  readonly state: StateServer;
}

/**
 * Registers the file's hooks: a beforeAll starts the double and the state server and hands them
 * to `started` (call useCloud before the file's own hooks that use them), an afterAll closes them,
 * and an afterEach checks that the double implemented every request of the test.
 */
export function useCloud(options: CloudOptions, started: (cloud: Cloud) => void): void {
  let double: OpenStackDouble | undefined;
  let state: StateServer | undefined;

  beforeAll(async () => {
    double = await startOpenStackDouble(options.double);
    state = await startStateServer(options.state);
    started({ double, target: doubleTarget(double), state });
  });

  afterAll(async () => {
    await double?.close();
    await state?.close();
  });

  afterEach(() => {
    // A request the double does not implement is a gap in the double, never something to ignore.
    expect(double?.unhandled).toEqual([]);
  });
}
