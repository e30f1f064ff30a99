/**
 * The Salt Project's package repository, as the rehearsal's hosts reach it: the one service on the
 * internet that a kube-on-os machine's cloud-init needs. An image without the pinned Salt (and,
 * whatever the image, dc03610's install-salt.sh, which always downloads) fetches the Salt
 * Project's signing key and installs salt-minion (and salt-master) from its apt repository on
 * packages.broadcom.com. The rehearsal's hosts have no internet; this is that repository in the
 * cloud (cloud.ts): its name resolves to an address in the cloud's namespace, it answers HTTPS
 * under a certificate of the rehearsal's own CA, which every host's root trusts, at the paths the
 * install script asks (Artifactory's), and its apt repository is signed by the key it serves.
 *
 * Its packages stand in for the Salt Project's: the release the Debian root has, which the
 * toolchain installs into /opt/saltstack/salt as those packages do, so they carry no program, only
 * the directories the real ones make (DIRECTORIES). apt verifies the repository's signature and
 * dpkg installs them, as on a real machine. Not modelled: their maintainer scripts (the `salt`
 * user, and salt-master's directories chowned to it; the rehearsal's master runs as root).
 */
import { execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/** A service on the internet the hosts reach, served from the cloud's namespace. */
export interface StandIn {
  /** The name the cloud's resolver gives its address. */
  readonly name: string;
  /** Its address, local in the cloud's namespace. */
  readonly address: string;
  /** The program and its arguments that serve it, run in the cloud's namespace. */
  readonly command: string[];
  /** The certificate (PEM) of the CA that signed its own, which every host's root trusts. */
  readonly ca: string;
  /** Its log: one line per request. */
  readonly log: string;
}

/** The Salt Project's repository host, as the install script names it. */
export const SALT_REPOSITORY_HOST = "packages.broadcom.com";
/** TEST-NET-2 (RFC 5737): no route of this machine leads there, and the cloud makes it local. */
const ADDRESS = "198.51.100.80";
/** Where the install script finds the key and the repository (templates/cloud-init/files/install-salt.sh). */
const KEY_PATH = "artifactory/api/security/keypair/SaltProjectKey/public";
const REPOSITORY_PATH = "artifactory/saltproject-deb";

/**
 * The directories each package makes: saltstack/salt's pkg/debian/<package>.dirs (salt-common's
 * shell completions left out). An earlier version's states wrote into them without making them.
 */
const DIRECTORIES: Record<string, string[]> = {
  "salt-common": ["/etc/salt", "/etc/logrotate.d", "/opt/saltstack/salt", "/var/cache/salt", "/var/log/salt", "/var/run/salt"],
  "salt-minion": ["/etc/salt/minion.d", "/etc/salt/proxy.d"],
  "salt-master": [
    "/etc/salt/master.d",
    ...["minions", "minions_autosign", "minions_denied", "minions_pre", "minions_rejected"].map((dir) => `/etc/salt/pki/master/${dir}`),
    "/var/cache/salt/master",
    "/var/cache/salt/minion",
    ...["jobs", "proc", "queues", "roots", "syndics", "tokens"].map((dir) => `/var/cache/salt/master/${dir}`),
  ],
};

function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(command, args, { encoding: "utf8", env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/** The Salt release the Debian root has: its dist-info's version. */
export function rootSaltVersion(base: string): string {
  const lib = path.join(base, "opt", "saltstack", "salt", "lib");
  for (const python of fs.readdirSync(lib)) {
    const packages = path.join(lib, python, "site-packages");
    const info = fs.existsSync(packages) ? fs.readdirSync(packages).find((entry) => /^salt-[0-9.]+\.dist-info$/.test(entry)) : undefined;
    if (info) return info.replace(/^salt-/, "").replace(/\.dist-info$/, "");
  }
  throw new Error(`rehearsal: no Salt in ${lib}`);
}

/** A CA, and a certificate it signed for `name` (files in `dir`): the CA's PEM, and the pair's paths. */
function certificates(dir: string, name: string): { ca: string; certificate: string; key: string } {
  const file = (base: string) => path.join(dir, base);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run("openssl", [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.crt"),
    "-days",
    "7",
    "-subj",
    "/CN=kube-on-os rehearsal internet CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  ]);
  run("openssl", ["req", ...ec, "-keyout", file("server.key"), "-out", file("server.csr"), "-subj", `/CN=${name}`]);
  fs.writeFileSync(file("server.ext"), `subjectAltName=DNS:${name}\nextendedKeyUsage=serverAuth\n`);
  run("openssl", [
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.crt"),
    "-CAkey",
    file("ca.key"),
    "-set_serial",
    "1",
    "-days",
    "7",
    "-extfile",
    file("server.ext"),
    "-out",
    file("server.crt"),
  ]);
  return { ca: fs.readFileSync(file("ca.crt"), "utf8"), certificate: file("server.crt"), key: file("server.key") };
}

/** One package of the repository, with its directories only: its control stanza, as Packages lists it. */
function standInPackage(pool: string, name: string, version: string): string {
  const build = fs.mkdtempSync(path.join(pool, `.${name}-`));
  const control = [
    `Package: ${name}`,
    `Version: ${version}`,
    "Architecture: amd64",
    "Maintainer: kube-on-os rehearsal <rehearsal@kube-on-os.invalid>",
    ...(name === "salt-common" ? [] : [`Depends: salt-common (= ${version})`]),
    `Description: ${name} ${version}, in the rehearsal's Debian root already`,
  ];
  fs.mkdirSync(path.join(build, "DEBIAN"));
  for (const dir of DIRECTORIES[name]) fs.mkdirSync(path.join(build, dir), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(build, "DEBIAN", "control"), `${control.join("\n")}\n`);
  const deb = `${name}_${version}_amd64.deb`;
  run("dpkg-deb", ["--root-owner-group", "-Zxz", "--build", build, path.join(pool, deb)]);
  fs.rmSync(build, { recursive: true });
  const content = fs.readFileSync(path.join(pool, deb));
  const fields = [
    `Filename: pool/${deb}`,
    `Size: ${content.length}`,
    `SHA256: ${crypto.createHash("sha256").update(content).digest("hex")}`,
  ];
  return [...control.slice(0, -1), ...fields, control.at(-1)].join("\n");
}

/**
 * Builds the repository in `dir` (a signing key, the packages of the root's Salt release, signed
 * indices, a CA and its certificate for the host) and says how to serve it.
 */
export function saltRepository(dir: string, base: string): StandIn {
  const version = rootSaltVersion(base);
  const www = path.join(dir, "www");
  const repository = path.join(www, REPOSITORY_PATH);
  const pool = path.join(repository, "pool");
  const index = path.join(repository, "dists", "stable");
  fs.mkdirSync(path.join(index, "main", "binary-amd64"), { recursive: true });
  fs.mkdirSync(pool, { recursive: true });
  fs.mkdirSync(path.dirname(path.join(www, KEY_PATH)), { recursive: true });

  const stanzas = ["salt-common", "salt-minion", "salt-master"].map((name) => standInPackage(pool, name, version));
  const packages = `${stanzas.join("\n\n")}\n`;
  fs.writeFileSync(path.join(index, "main", "binary-amd64", "Packages"), packages);
  const release = [
    "Origin: kube-on-os rehearsal",
    "Label: Salt Project (stand-in)",
    "Suite: stable",
    "Codename: stable",
    `Date: ${new Date().toUTCString().replace("GMT", "UTC")}`,
    "Architectures: amd64",
    "Components: main",
    "SHA256:",
    ` ${crypto.createHash("sha256").update(packages).digest("hex")} ${Buffer.byteLength(packages)} main/binary-amd64/Packages`,
  ];
  fs.writeFileSync(path.join(index, "Release"), `${release.join("\n")}\n`);

  // The signing key, in a keyring of the rehearsal's own; its agent goes once the index is signed.
  const home = path.join(dir, "gnupg");
  fs.mkdirSync(home, { mode: 0o700 });
  const gpg = (...args: string[]) => run("gpg", ["--batch", "--quiet", ...args], { GNUPGHOME: home });
  try {
    gpg(
      "--passphrase",
      "",
      "--quick-gen-key",
      "Salt Project (kube-on-os rehearsal) <saltproject@kube-on-os.invalid>",
      "ed25519",
      "sign",
      "never",
    );
    gpg("--armor", "--output", path.join(www, KEY_PATH), "--export");
    gpg("--clearsign", "--output", path.join(index, "InRelease"), path.join(index, "Release"));
  } finally {
    run("gpgconf", ["--kill", "gpg-agent"], { GNUPGHOME: home });
  }

  const tls = certificates(dir, SALT_REPOSITORY_HOST);
  const log = path.join(dir, "requests.log");
  return {
    name: SALT_REPOSITORY_HOST,
    address: ADDRESS,
    command: ["python3", path.join(__dirname, "https.py"), ADDRESS, www, tls.certificate, tls.key, log],
    ca: tls.ca,
    log,
  };
}
