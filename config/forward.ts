import { ConfigError } from "./config-error";

/**
 * Carries TF_VAR_* past the cdktf CLI, which removes them from the app's environment;
 * scripts/cdktf.js (behind `npm run synth|diff|deploy`) sets it to a JSON object.
 */
export const FORWARDED_TF_VARS = "KUBE_ON_OS_FORWARDED_TF_VARS";

/** `env` plus the TF_VAR_* forwarded by scripts/cdktf.js; variables set directly win. */
export function withForwardedTfVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const forwarded = env[FORWARDED_TF_VARS];
  if (forwarded === undefined || forwarded === "") return env;
  let parsed: unknown;
  try {
    parsed = JSON.parse(forwarded);
  } catch {
    throw new ConfigError(`Invalid ${FORWARDED_TF_VARS}: must be a JSON object of TF_VAR_* strings (set by scripts/cdktf.js).`);
  }
  const valid =
    typeof parsed === "object" &&
    parsed !== null &&
    Object.entries(parsed).every(([key, value]) => key.startsWith("TF_VAR_") && typeof value === "string");
  if (!valid) throw new ConfigError(`Invalid ${FORWARDED_TF_VARS}: must be a JSON object of TF_VAR_* strings (set by scripts/cdktf.js).`);
  return { ...(parsed as Record<string, string>), ...env };
}
