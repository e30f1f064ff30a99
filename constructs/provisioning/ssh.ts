import { RemoteExecProvisioner, SSHProvisionerConnection, TerraformLocal, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { SSH_HOST_ROLES } from "../../config/parameters";

/**
 * Remote paths are relative to the deploy user's home: both scp (the file provisioner) and
 * remote-exec start there, and the user's home is the one place it can write without sudo
 * that no other user can prepare for it.
 */
export const REMOTE_DIR = ".kube-on-os";
/** The provisioners/ scripts, uploaded to every host the chain logs in to. */
export const REMOTE_BIN = `${REMOTE_DIR}/bin`;
/** Where the sync stages the trees before install-salt-tree.sh moves them into /srv. */
export const REMOTE_STAGE = `${REMOTE_DIR}/stage`;
/** Only the deploy user can enter it (mode 0700): secrets pass through it on their way to root. */
export const REMOTE_SECRETS = `${REMOTE_DIR}/secrets`;

/** How long SSH keeps retrying while a machine boots. */
export const CONNECTION_TIMEOUT = "15m";

/** An SSH connection with the deployer's ssh-agent; the host key is checked when one is given. */
export function sshConnection(user: string, host: string, hostKey: string | undefined): SSHProvisionerConnection {
  return {
    type: "ssh",
    host,
    user,
    // The private key stays in the deployer's ssh-agent. cdktf types `agent` as a string,
    // Terraform as a bool; the cast writes the bool.
    agent: true as unknown as string,
    hostKey,
    timeout: CONNECTION_TIMEOUT,
  };
}

/** `connection`, reached through the bastion as the same user. */
export function throughBastion(
  connection: SSHProvisionerConnection,
  bastionHost: string,
  bastionHostKey?: string,
): SSHProvisionerConnection {
  return { ...connection, bastionHost, bastionUser: connection.user, bastionHostKey };
}

/** remote-exec runs its lines as one /bin/sh script; `set -eu` makes any failing line fail the step. */
export function remoteExec(connection: SSHProvisionerConnection, ...commands: string[]): RemoteExecProvisioner {
  return { type: "remote-exec", inline: ["set -eu", ...commands], connection };
}

/**
 * The known host key (or CA key) of each host the chain logs in to, by role (SSH_HOST_ROLES),
 * from `sshHostKeys` (the ssh_host_keys variable), as the stack's locals `<role>_host_key`. A role
 * without one gets null: its host key is not checked.
 */
export function hostKeys(scope: Construct, sshHostKeys: unknown): Record<(typeof SSH_HOST_ROLES)[number], string> {
  const stack = TerraformStack.of(scope);
  const [bastion, saltMaster] = SSH_HOST_ROLES.map(
    (role) => new TerraformLocal(stack, `${role}_host_key`, `\${lookup(${Token.asString(sshHostKeys)}, "${role}", null)}`).asString,
  );
  return { bastion, salt_master: saltMaster };
}
