/**
 * Raw TF_VAR_ strings for every parameter, around the edges of its rules, as fast-check
 * arbitraries: hand-picked edges mixed with generated variants. The strings are what a user's
 * shell would export, so nothing here knows whether a value is valid: synth and plan decide
 * (__tests__/l1-synth-plan-agreement.test.ts checks that they decide alike).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { firstDhcpHost, IN_NUMBERS } from "../../facts/dhcp-range";
import { HOST_NUMBERS } from "../../facts/hosts";
import { VariableName } from "../../config/parameters";

// Real public keys, made for this file with ssh-keygen (their private halves were thrown away).
export const KEYS = {
  ed25519: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHZ1ud/n5bZvqVTZfwMURFEaUxbugjdpc58evVImWVrL agreement-ed25519@example",
  ecdsa256:
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBK6JIY1cd9IiY6a+VVQtJjxQcFsJ/aXbTQtKu3lO8o18s6YnnRc8FgZq8d+6lUMeuNNwENS4RU3sz4tmgCJ8aH0= agreement-ecdsa256@example",
  ecdsa384:
    "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBG81oKBsS5WydCYeBMD8LKUeC3E1YvYlk5JJ2nNXBmfSu3ko26IuQLyc6NJaJ4jF8XDB/YmW0CPjb+hrbeyqsTTxIZYchvPIUdwYCTHXoZwWAuedkevrkMwxpIJMKNy73A== agreement-ecdsa384@example",
  ecdsa521:
    "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAHhaUffzO5gTLapQnsuQs0/VS/YWAMZopIda6JToBoGZw9UdED4Zp6MFaJYkTBI6JpuxPvYFQDVANLiJYdLhRWT5ADP+uyjfGKRVxHZyPpf5zEx31XZb6OhglLiK2YS/gKy3x9yMhtjyVAfquSpQjZ94OGMnAl9ujQV2ONb3BnQUuMvcw== agreement-ecdsa521@example",
  rsa2048:
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDBsu09sMt0CUfVmb0XF2YCrRYR66YOUR5Bo9K2j4X+0z3M5bdITQxnkYtZ+aAnBFuvEOeJb8ih26MUXtNwXtNO0nC8Uqmp1NkEllRVnJ/GQEVGP6tD/5BHFMySia1IlgU2TSpnTeSrVUtnccCBG3nbK1agxwcWQdZZTiKu7ul3yItbvLbWPJSPAydwvrLY7QP9OzvQDQ7kinTmyKxcm53ugZtKxaMaloEdkzIh1pOXvzKMKQGln6e4QGdxA9IsgX5xd4rDdkCUg2zcM01D8ip93zio9LTJGYqJmezB1d1Y9uG4ygD74IL1YOMB8lzJ3enJIlJXrKtBCXxINHWMn6er agreement-rsa2048@example",
} as const;

/** An OpenSSH wire-format string: a 32-bit length, then the bytes. */
function sshString(data: Buffer | string): Buffer {
  const bytes = Buffer.from(data);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** The fields of a key line's base64 blob. */
function blobFields(line: string): Buffer[] {
  const blob = Buffer.from(line.split(" ")[1], "base64");
  const fields: Buffer[] = [];
  for (let at = 0; at < blob.length; at += 4 + blob.readUInt32BE(at)) fields.push(blob.subarray(at + 4, at + 4 + blob.readUInt32BE(at)));
  return fields;
}

/** Security-key (FIDO) public keys, built from the real keys' points: ssh-keygen needs a token to make one. */
const SK_KEYS = {
  ed25519: `sk-ssh-ed25519@openssh.com ${Buffer.concat([sshString("sk-ssh-ed25519@openssh.com"), sshString(blobFields(KEYS.ed25519)[1]), sshString("ssh:")]).toString("base64")} sk@example`,
  ecdsa256: `sk-ecdsa-sha2-nistp256@openssh.com ${Buffer.concat([sshString("sk-ecdsa-sha2-nistp256@openssh.com"), sshString("nistp256"), sshString(blobFields(KEYS.ecdsa256)[2]), sshString("ssh:")]).toString("base64")} sk@example`,
};

/** The head of an OpenSSH private key file: what a user pastes by mistake. */
const PRIVATE_KEY =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACB2dbnf5+W2b6lU2X8DFERRGlMW7oI3aXOfHr1SJllaywAAAJgAAAAAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";

/** Text that HCL or a shell might read as more than text. */
const TRICKY = ["${x}", "%{x}", "$${x}", "%%{x}", '"', "'", "\\", "\\n", "\\u0041", "`", "$(id)", "é", "日本", "👍", "e\u0301"];

/** White space at either end: ASCII, then the Unicode spaces that JavaScript and Go trim differently. */
const SPACE = fc.constantFrom(
  "",
  "",
  "",
  "",
  " ",
  "  ",
  "\t",
  "\n",
  "\r\n",
  "\r",
  "\v",
  "\f",
  "\u00a0",
  "\u0085",
  "\ufeff",
  "\u2028",
  "\u3000",
);

/** `value` with white space on either end, or none. */
function padded(value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(SPACE, value, SPACE).map(([before, s, after]) => `${before}${s}${after}`);
}

/** Anything without NUL (an environment variable cannot hold one). */
const anyText = fc
  .oneof(fc.string({ maxLength: 12 }), fc.string({ unit: "grapheme", maxLength: 8 }), fc.constantFrom(...TRICKY))
  .map((s) => s.replace(/\0/g, ""));

/** The values tried for a variable: hand-picked edges, and generators of variants. */
export interface Values {
  readonly edges: readonly string[];
  readonly variants: readonly fc.Arbitrary<string>[];
}

function edgesAnd(edges: readonly string[], ...variants: fc.Arbitrary<string>[]): Values {
  return { edges, variants };
}

/** `edges` often, generated variants otherwise. */
export function arbitrary({ edges, variants }: Values): fc.Arbitrary<string> {
  return fc.oneof({ arbitrary: fc.constantFrom(...edges), weight: 2 }, ...variants.map((variant) => ({ arbitrary: variant, weight: 1 })));
}

// Numbers

/** The ways of writing an integer that Terraform's and JavaScript's number parsers might read differently. */
const INTEGER_FORMS: readonly ((n: number) => string)[] = [
  (n) => `${n}`,
  (n) => `${n}`,
  (n) => (n >= 0 ? `+${n}` : `${n}`),
  (n) => `${n}.0`,
  (n) => `${n}.`,
  (n) => `${n}.5`,
  (n) => `${n}e0`,
  (n) => `${n}E+0`,
  (n) => `${n * 10}e-1`,
  (n) => `${n / 10}e1`,
  (n) => `0${n}`,
  (n) => `0x${n.toString(16)}`,
  (n) => `${n}p0`,
  (n) => `${n.toLocaleString("en-US")}`,
  (n) => `${n}_0`,
];

const NUMBER_EDGES = [
  ...["0", "1", "-1", "-0", "3", "2.5", "0.5", ".5", "5.", "+3", "3.0", "1e1", "1E+1", "1e+1", "10e-1", "1p3", "0x3", "0b11", "0o3", "1_0"],
  ...["Inf", "-Inf", "+Inf", "inf", "-inf", "Infinity", "NaN", "nan", "1e400", "-1e400", "1e-400", "1e308", "1.7976931348623157e309"],
  ...["9007199254740993", "18446744073709551617", "256", "257", "1024", "1025", "1100", "32669", "100000", "3.0000000000000000001"],
  ...[
    "",
    " ",
    " 3",
    "3 ",
    "\t3",
    "3\n",
    "\n3",
    "3\r\n",
    "\u00a03",
    "3\u00a0",
    "3\ufeff",
    "3 3",
    "3,0",
    "three",
    "null",
    "true",
    '"3"',
    "[3]",
  ],
];

/** Integers near `edges` (and anywhere), written in every form. */
function numberText(edges: readonly number[]): Values {
  const near = fc.tuple(fc.constantFrom(...edges), fc.integer({ min: -2, max: 2 })).map(([edge, delta]) => edge + delta);
  const integer = fc.oneof(near, fc.integer({ min: -5, max: 5 }), fc.integer({ min: -1_000_000, max: 1_000_000 }));
  return edgesAnd(NUMBER_EDGES, padded(fc.tuple(integer, fc.constantFrom(...INTEGER_FORMS)).map(([n, form]) => form(n))));
}

/** The largest num_kube_nodes whose workers fit the lower half of a private network with `prefix`. */
export function maxNodesFor(prefix: number): number {
  // Workers sit at host numbers firstWorkerPrivate.. (one per node but the master), below DHCP's.
  return firstDhcpHost(`10.0.0.0/${prefix}`, IN_NUMBERS) - HOST_NUMBERS.firstWorkerPrivate + 1;
}

// Booleans

const BOOL = edgesAnd(
  ["true", "false", "1", "0", "True", "FALSE", "TRUE", "t", "f", "yes", "no", "on", "", " ", "null", "2", "-1", "1.0", "01", '"true"'],
  padded(fc.constantFrom("true", "false", "1", "0")),
);

// Strings

/** A free-form name (a flavor, a network): the rule is "not blank, not padded". */
const NAME = edgesAnd(
  [
    "",
    " ",
    "\t",
    "\n",
    "m1.small",
    " m1.small",
    "m1.small ",
    "m1.small\n",
    "\tm1",
    "m1 small",
    "\u00a0m1",
    "m1\u0085",
    "\ufeffm1",
    "m1\u3000",
  ],
  padded(fc.oneof(fc.stringMatching(/^[a-z0-9.-]{1,12}$/), anyText)),
);

const UUID_EDGES = ["ad156007-77bb-4e32-ac97-7f8340cab73d", "AD156007-77BB-4E32-AC97-7F8340CAB73D", "ad15600777bb4e32ac977f8340cab73d"];
/** A Neutron ID: a lower-case UUID, or empty for none. */
const NEUTRON_ID = edgesAnd([
  "",
  ...UUID_EDGES,
  "{ad156007-77bb-4e32-ac97-7f8340cab73d}",
  " ",
  "router-1",
  " ad156007-77bb-4e32-ac97-7f8340cab73d",
]);
/** An image ID or name: a name is 1 to 255 characters (graphemes, to Terraform), not padded. */
const IMAGE = edgesAnd(
  [
    ...UUID_EDGES,
    "{ad156007-77bb-4e32-ac97-7f8340cab73d}",
    "ad156007-77bb-4e32-ac97-7f8340cab73",
    "Ubuntu 24.04",
    "ubuntu-24.04-noble",
    "Ubuntu 24.04 ",
    " Ubuntu 24.04",
    "Ubuntu\n24.04",
    "",
    " ",
    "\u00a0",
    "x".repeat(255),
    "x".repeat(256),
    `${"é".repeat(254)}e\u0301`, // 255 graphemes, 256 code points
    "👍".repeat(256),
  ],
  padded(
    fc
      .tuple(
        fc.uuid(),
        fc.constantFrom<(id: string) => string>(
          (id) => id,
          (id) => id.toUpperCase(),
          (id) => id.slice(1),
          (id) => `${id}0`,
          (id) => id.replace(/-/g, ""),
        ),
      )
      .map(([id, mutate]) => mutate(id)),
  ),
  padded(fc.oneof(fc.stringMatching(/^[A-Za-z0-9 ._-]{1,20}$/), anyText)),
  fc.integer({ min: 250, max: 260 }).map((length) => "n".repeat(length)),
);

/** A snap channel: tracks around 1.28 and the risks, with the forms a user might type instead. */
const CHANNEL = edgesAnd(
  [
    "1.35/stable",
    "1.28/stable",
    "1.27/stable",
    "1.35/candidate",
    "1.35/beta",
    "1.35/edge",
    "1.100/stable",
    "1.035/stable",
    "1.35",
    "1.35/",
    "/stable",
    "latest/stable",
    "1.35-strict/stable",
    "1.35/stable/hotfix",
    "1.35/Stable",
    "2.0/stable",
    "1.35/stable ",
    "1.35\\/stable",
    "",
  ],
  padded(
    fc
      .tuple(
        fc.constantFrom("1.", "1.", "2.", "v1.", ""),
        fc.integer({ min: 0, max: 140 }),
        fc.constantFrom("/", "/", "-", "/-"),
        fc.constantFrom("stable", "candidate", "beta", "edge", "Stable", "rc", ""),
      )
      .map(([major, minor, slash, risk]) => `${major}${minor}${slash}${risk}`),
  ),
  anyText,
);

/** A DNS label of `length` characters. */
const label = (length: number, fill = "a") => fill.repeat(length);

const DNS_EDGES = [
  "kube-on-os",
  "test.kube-on-os.ecida.org",
  label(63),
  label(64),
  `${label(63)}.${label(63)}.${label(63)}.${label(61)}`, // 253 characters
  `${label(63)}.${label(63)}.${label(63)}.${label(62)}`, // 254
  `${label(63)}.${label(63)}.${label(63)}.${label(63)}`, // 255
  "a",
  "0",
  "a-",
  "-a",
  "a--b",
  "xn--bcher-kva.example",
  "Kube-On-Os",
  "a.",
  ".a",
  "a..b",
  "a_b",
  "a b",
  "bücher.example",
  "",
  "a\nb",
  "localhost",
  "1.2.3.4",
];
const DOMAIN = edgesAnd(
  DNS_EDGES,
  padded(fc.array(fc.stringMatching(/^[a-zA-Z0-9_-]{0,12}$/), { minLength: 1, maxLength: 4 }).map((labels) => labels.join("."))),
  fc
    .tuple(fc.integer({ min: 60, max: 65 }), fc.integer({ min: 1, max: 4 }))
    .map(([length, count]) => Array(count).fill(label(length, "k")).join(".")),
);

const USERNAME_EDGES = [
  "ubuntu",
  "root",
  "Root",
  "root ",
  "_",
  "a",
  label(32),
  label(33),
  `_${label(31, "-")}`,
  "a$",
  "A",
  "1a",
  "-a",
  "a.b",
  "a b",
  "ä",
  "",
  "a\n",
  "waldorf",
];
const USERNAME_VALUES = edgesAnd(USERNAME_EDGES, padded(fc.stringMatching(/^[a-z_][a-z0-9_-]{0,33}$/)), anyText);
const USERNAME = arbitrary(USERNAME_VALUES);

const PASSWORD = edgesAnd(
  [
    "",
    "short",
    label(11, "p"),
    label(12, "p"),
    label(13, "p"),
    "long-enough-secret",
    " ".repeat(12),
    "👍".repeat(6),
    "👍".repeat(11),
    "e\u0301".repeat(6),
    "e\u0301".repeat(11),
  ],
  padded(fc.string({ minLength: 9, maxLength: 14 }).map((s) => s.replace(/\0/g, "x"))),
  fc.tuple(fc.integer({ min: 4, max: 14 }), fc.constantFrom("p", "é", "👍", "e\u0301", "\u00a0")).map(([n, c]) => c.repeat(n)),
);

const HASH = edgesAnd(
  [
    "$6$salt$Zm9vYmFy",
    "$5$salt$Zm9vYmFy",
    "$y$j9T$salt$hash",
    "$2b$10$abcdefghijklmnopqrstuv",
    "$1$salt$hash",
    "$6$",
    "$6$a b",
    "$6$salt$hash\n",
    " $6$salt$hash",
    "$6$a\u00a0b",
    "$6$a\u0085b",
    "plaintext",
    "",
    "$$6$x",
    "${x}",
  ],
  fc
    .tuple(
      fc.constantFrom("$6$", "$5$", "$y$", "$2b$", "$1$", "$7$", "6$", "$6"),
      fc.oneof(fc.stringMatching(/^[A-Za-z0-9./$]{0,20}$/), anyText),
      SPACE,
    )
    .map(([scheme, rest, space]) => `${scheme}${rest}${space}`),
);

// SSH public keys

const keyLines = Object.values(KEYS);

/** How a key line gets mangled on its way into a variable. */
const KEY_MUTATIONS: readonly ((line: string, n: number) => string)[] = [
  (line) => line,
  (line) => line.split(" ").slice(0, 2).join(" "),
  (line, n) => {
    const [type, blob, ...comment] = line.split(" ");
    return [type, blob.slice(0, 1 + (n % (blob.length - 1))), ...comment].join(" ");
  },
  (line) => line.replace(/^\S+/, "ssh-rsa"),
  (line) => line.replace(/^\S+/, "ssh-ed25519"),
  (line) => line.replace(/^\S+/, "ecdsa-sha2-nistp256"),
  (line) => line.replace(/^\S+/, "ssh-dss"),
  (line) => line.replace(/^\S+/, "SSH-ED25519"),
  (line) => line.replace(/=* /, " "),
  (line, n) => line.replace(/=* /, `${"=".repeat(1 + (n % 4))} `),
  (line) => line.replace(/([A-Za-z0-9+/])(=* )/, "$1!$2"),
  (line) => line.replace(" ", "  "),
  (line) => line.replace(" ", "\t"),
  (line) => `no-pty ${line}`,
  (line) => line.split(" ")[1],
  (line) => `${line}\n${line}`,
  (line) => `${line}\n`,
  (line, n) => `${line.split(" ").slice(0, 2).join(" ")} ${TRICKY[n % TRICKY.length]}`,
  (line, n) => `${line.split(" ").slice(0, 2).join(" ")} a${TRICKY[n % TRICKY.length]}b c`,
  (line) => `${line.split(" ").slice(0, 2).join(" ")} comment\twith\ttabs`,
];

const KEY_EDGES = [
  ...keyLines,
  ...Object.values(SK_KEYS),
  KEYS.ed25519.replace(/^\S+/, "ssh-rsa"),
  "ssh-ed25519 A",
  "ssh-ed25519 AAAA",
  "ssh-ed25519 ====",
  "ssh-ed25519",
  "ssh-ed25519 ",
  "AAAAC3NzaC1lZDI1NTE5AAAAIHZ1ud/n5bZvqVTZfwMURFEaUxbugjdpc58evVImWVrL",
  PRIVATE_KEY,
  "not-a-key",
  `${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} ünïcödé 👍`,
  `${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} \${x}`,
  `${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} %{x}`,
  `${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} \\"quoted\\"`,
];

/** A public key line: real keys, intact or mangled. */
const SSH_KEY_VALUES = edgesAnd(
  KEY_EDGES,
  padded(
    fc.tuple(fc.constantFrom(...keyLines), fc.constantFrom(...KEY_MUTATIONS), fc.nat(1000)).map(([line, mutate, n]) => mutate(line, n)),
  ),
);
const SSH_KEY = arbitrary(SSH_KEY_VALUES);

// CIDRs

/** A dotted quad, sometimes with leading zeros, too few or too many parts. */
function address(octets: readonly number[], form: number): string {
  switch (form) {
    case 1:
      return octets.map((o) => `0${o}`).join(".");
    case 2:
      return octets.slice(0, 3).join(".");
    case 3:
      return [...octets, 0].join(".");
    default:
      return octets.join(".");
  }
}

const OCTET = fc.oneof(fc.constantFrom(0, 1, 10, 127, 169, 172, 192, 224, 255, 256), fc.integer({ min: 0, max: 255 }));

/** The network address of `octets` with `prefix`, host bits cleared. */
function masked(octets: readonly number[], prefix: number): number[] {
  const value = octets.reduce((acc, o) => acc * 256 + (o & 255), 0);
  const size = 2 ** (32 - Math.min(Math.max(prefix, 0), 32));
  const network = Math.floor(value / size) * size;
  return [24, 16, 8, 0].map((shift) => Math.floor(network / 2 ** shift) % 256);
}

const PREFIX_FORMS: readonly ((p: number) => string)[] = [
  (p) => `${p}`,
  (p) => `${p}`,
  (p) => `${p}`,
  (p) => `0${p}`,
  (p) => `+${p}`,
  (p) => `${p}.0`,
  (p) => ` ${p}`,
];

/** CIDRs of any prefix length, mostly network addresses, sometimes with host bits set. */
export const GENERATED_CIDR = fc
  .record({
    octets: fc.tuple(OCTET, OCTET, OCTET, OCTET),
    prefix: fc.oneof(fc.constantFrom(0, 7, 8, 9, 16, 23, 24, 25, 32, 33), fc.integer({ min: 0, max: 34 })),
    hostBits: fc.boolean(),
    addressForm: fc.oneof({ arbitrary: fc.constant(0), weight: 6 }, { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 1 }),
    prefixForm: fc.constantFrom(...PREFIX_FORMS),
  })
  .map(
    ({ octets, prefix, hostBits, addressForm, prefixForm }) =>
      `${address(hostBits ? octets : masked(octets, prefix), addressForm)}/${prefixForm(prefix)}`,
  );

const CIDR_EDGES = [
  "10.0.0.0/16",
  "10.1.0.0/16",
  "10.244.0.0/16",
  "10.152.183.0/24",
  "192.168.0.0/24",
  "172.16.0.0/12",
  "10.0.0.0/7",
  "10.0.0.0/8",
  "11.0.0.0/8",
  "12.0.0.0/7",
  "192.168.0.0/25",
  "192.168.0.0/33",
  "192.168.0.1/24",
  "10.0.0.0/016",
  "010.0.0.0/16",
  "10.00.0.0/16",
  "10.0.0.0/+16",
  "10.0.0.0/-16",
  "10.0.0.0/16 ",
  " 10.0.0.0/16",
  "10.0.0.0/16\n",
  "10.0.0.0",
  "10.0.0.0/",
  "/16",
  "10.0.0.0/16/16",
  "10.0.0/16",
  "256.0.0.0/8",
  "0.0.0.0/0",
  "0.0.0.0/8",
  "127.0.0.0/8",
  "127.1.0.0/16",
  "169.254.0.0/16",
  "169.254.169.0/24",
  "168.0.0.0/7",
  "fd00::/64",
  "::ffff:10.0.0.0/112",
  "10.0.0.0/255.255.0.0",
  "",
];
const SUBNET = edgesAnd(CIDR_EDGES, GENERATED_CIDR, padded(GENERATED_CIDR));

// Complex values: HCL and JSON syntax

/** A JSON-like value tree, written out as Terraform reads a complex TF_VAR_: an HCL expression. */
type Tree = string | number | boolean | null | Tree[] | { [key: string]: Tree };

interface Syntax {
  /** JSON, one-line HCL, or HCL over several lines. */
  readonly style: "json" | "hcl" | "multiline";
  /** Escape `${` and `%{` in strings as HCL templates need ($${, %%{), or leave them be. */
  readonly escapeTemplates: boolean;
}

function quoted(s: string, { escapeTemplates }: Syntax): string {
  const json = JSON.stringify(s);
  return escapeTemplates ? json.replace(/\$\{/g, "$${").replace(/%\{/g, "%%{") : json;
}

/** `tree` as a TF_VAR_ value in `syntax`. */
export function hcl(tree: Tree, syntax: Syntax): string {
  const { style } = syntax;
  if (typeof tree === "string") return quoted(tree, syntax);
  if (tree === null || typeof tree !== "object") return JSON.stringify(tree);
  const open = style === "multiline" ? "\n  " : style === "hcl" ? " " : "";
  const separator = style === "multiline" ? "\n  " : ", ";
  const close = style === "multiline" ? "\n" : style === "hcl" ? " " : "";
  if (Array.isArray(tree)) {
    if (tree.length === 0) return "[]";
    // HCL allows a trailing comma in a list; one per line is how people write it.
    const items = tree.map((item) => hcl(item, syntax));
    return style === "multiline" ? `[${open}${items.join(`,${separator}`)},${close}]` : `[${items.join(", ")}]`;
  }
  const entries = Object.entries(tree);
  if (entries.length === 0) return "{}";
  const attribute = ([key, value]: [string, Tree]) =>
    style === "json"
      ? `${JSON.stringify(key)}: ${hcl(value, syntax)}`
      : `${/^[a-z_][a-z0-9_-]*$/.test(key) ? key : JSON.stringify(key)} = ${hcl(value, syntax)}`;
  return `{${open}${entries.map(attribute).join(separator)}${close}}`;
}

const SYNTAX: fc.Arbitrary<Syntax> = fc.record({ style: fc.constantFrom("json", "hcl", "multiline"), escapeTemplates: fc.boolean() });

/** A value of the wrong type where a string belongs: Terraform converts some (1, true) to strings. */
const NOT_A_STRING = fc.constantFrom<Tree>(1, 0, true, false, null, [], {}, ["a"], { a: "b" });

/**
 * Raw values that are no value of the type at all, or only of another type. Constant expressions
 * (`${8 + 8}`, `[for ...]`), which Terraform evaluates and synth refuses, are not here: the
 * agreement test checks them apart (CONSTANT_EXPRESSIONS).
 */
const MALFORMED = [
  "",
  " ",
  "null",
  "[",
  "{",
  "]",
  "[]]",
  "[,]",
  '"a"',
  "a",
  "1",
  "true",
  "[${x}]",
  "[var.x]",
  '[upper("a")]',
  "<<EOT\nx\nEOT\n",
  "[[]]",
  "[{}]",
];

/** A list of CIDR strings, in any syntax, with its elements near the edges. */
function cidrListText(): Values {
  const element = fc.oneof({ arbitrary: arbitrary(SUBNET), weight: 4 }, { arbitrary: NOT_A_STRING, weight: 1 });
  return edgesAnd(
    [
      ...MALFORMED,
      '["0.0.0.0/0"]',
      '[ "0.0.0.0/0", ]',
      '["203.0.113.7/32", "198.51.100.0/24"]',
      '["203.0.113.7"]',
      '["10.0.0.0/33"]',
      '["0.0.0.0/0"',
      '"0.0.0.0/0"',
      // A literal interpolated: @cdktf/hcl2json folds it, as Terraform does.
      '["0.0.0.0/${0}"]',
      "[<<EOT\n0.0.0.0/0\nEOT\n]",
      "[<<-EOT\n  0.0.0.0/0\n  EOT\n]",
      '[\n  # the world\n  "0.0.0.0/0",\n]',
      '["0.0.0.0/0"] # comment',
      '{ a = "0.0.0.0/0" }',
      '[["0.0.0.0/0"]]',
      "[null]",
      '["0.0.0.0/0", null]',
      '["0.0.0.0/0" "1.0.0.0/8"]',
      "[0]",
      '["0.0.0.0/0"]\n',
      ' ["0.0.0.0/0"]',
      '["$${x}"]',
      '["%%{x}"]',
    ],
    fc.tuple(fc.array(element, { maxLength: 4 }), SYNTAX).map(([items, syntax]) => hcl(items, syntax)),
  );
}

const IP_ADDRESS = fc
  .tuple(
    fc.tuple(OCTET, OCTET, OCTET, OCTET),
    fc.oneof({ arbitrary: fc.constant(0), weight: 6 }, { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 1 }),
  )
  .map(([octets, form]) => address(octets, form));

/** A floating IP's address, or "" (allocate one). */
const FLOATING_IP = edgesAnd(
  [
    "",
    "203.0.113.10",
    "0.0.0.0",
    " 203.0.113.10",
    "203.0.113.10 ",
    "203.0.113.256",
    "203.0.113",
    "203.0.113.10/32",
    "2001:db8::10",
    "ad156007-77bb-4e32-ac97-7f8340cab73d",
    "fip-bastion",
  ],
  IP_ADDRESS,
);

const NAMESERVERS = edgesAnd(
  [
    ...MALFORMED,
    '["1.1.1.1"]',
    '["1.1.1.1", "1.0.0.1"]',
    '["9.9.9"]',
    '["01.1.1.1"]',
    '["1.1.1.1/32"]',
    '["::1"]',
    '[" 1.1.1.1"]',
    '["1.1.1.1 "]',
    '["1.1.1.1\\n"]',
    '["1.1.1.256"]',
    '["0.0.0.0"]',
    '["1.1.1.1", "0.0.0.0"]',
    '["1.1.1.1", "1.1.1.1"]',
    '["255.255.255.255"]',
  ],
  fc
    .tuple(
      fc.array(
        fc.oneof(
          { arbitrary: IP_ADDRESS, weight: 4 },
          { arbitrary: padded(IP_ADDRESS), weight: 1 },
          { arbitrary: NOT_A_STRING, weight: 1 },
        ),
        { maxLength: 7 },
      ),
      SYNTAX,
    )
    .map(([items, syntax]) => hcl(items, syntax)),
);

const USER = fc.oneof(
  { arbitrary: fc.record({ username: USERNAME, ssh_public_key: SSH_KEY }), weight: 6 },
  { arbitrary: fc.record({ username: USERNAME }), weight: 1 },
  { arbitrary: fc.record({ ssh_public_key: SSH_KEY }), weight: 1 },
  { arbitrary: fc.record({ username: USERNAME, ssh_public_key: SSH_KEY, shell: fc.constant("/bin/bash") }), weight: 1 },
  { arbitrary: fc.record({ username: NOT_A_STRING, ssh_public_key: fc.constantFrom<Tree>(KEYS.ed25519, 1, null) }), weight: 1 },
  { arbitrary: NOT_A_STRING, weight: 1 },
);

const U = (username: string, key: string = KEYS.ed25519) =>
  `{ username = ${JSON.stringify(username)}, ssh_public_key = ${JSON.stringify(key)} }`;

const USERS = edgesAnd(
  [
    ...MALFORMED,
    `[${U("waldorf")}]`,
    `[${U("waldorf")}, ${U("statler", KEYS.rsa2048)}]`,
    `[${U("a")}, ${U("a")}]`,
    `[${U("root")}]`,
    `[${U("ubuntu")}]`,
    `[${U(label(32))}]`,
    `[${U(label(33))}]`,
    `[${U("waldorf", "ssh-ed25519 A")}]`,
    `[${U("waldorf", PRIVATE_KEY)}]`,
    `[${U("waldorf", `${KEYS.ed25519}\n`)}]`,
    `[{ "username": "waldorf", "ssh_public_key": ${JSON.stringify(KEYS.ecdsa521)} }]`,
    `[{ username: "waldorf", ssh_public_key: ${JSON.stringify(KEYS.ed25519)} }]`,
    `[{ username = "waldorf", ssh_public_key = "${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} $\${x}" }]`,
    `[{ username = "waldorf", ssh_public_key = "${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} %%{x}" }]`,
    `[{ username = "waldorf", ssh_public_key = "${KEYS.ed25519.split(" ").slice(0, 2).join(" ")} \${x}" }]`,
    `[{ username = "waldorf", ssh_public_key = "${KEYS.ed25519}", shell = "/bin/sh" }]`,
    `[{ username = "waldorf" }]`,
    `[{ username = true, ssh_public_key = "${KEYS.ed25519}" }]`,
    `[{ username = 1, ssh_public_key = "${KEYS.ed25519}" }]`,
    `{ username = "waldorf", ssh_public_key = "${KEYS.ed25519}" }`,
    `[{ username = "waldorf", ssh_public_key = "${KEYS.ed25519}" }, null]`,
    `[{ username = "waldorf", ssh_public_key = null }]`,
    `[{ username = "wal\${"dorf"}", ssh_public_key = "${KEYS.ed25519}" }]`,
    `[{ username = "waldorf", ssh_public_key = <<EOT\n${KEYS.ed25519}\nEOT\n }]`,
  ],
  fc.tuple(fc.array(USER, { maxLength: 3 }), SYNTAX).map(([users, syntax]) => hcl(users, syntax)),
);

const ROLE = fc.constantFrom("bastion", "salt_master", "salt-master", "k8s_master", "Bastion", "bastion ", "", "${x}");

const HOST_KEYS = edgesAnd(
  [
    ...MALFORMED,
    "{}",
    `{ bastion = "${KEYS.ed25519}", salt_master = "${KEYS.ecdsa256}" }`,
    `{ "bastion": "${KEYS.rsa2048}" }`,
    `{ k8s_master = "${KEYS.ed25519}" }`,
    '{ bastion = "AAAA" }',
    '{ bastion = "ssh-ed25519 A" }',
    `{ bastion = "${KEYS.ed25519}", bastion = "${KEYS.ed25519}" }`,
    `{ "bastion" = "${KEYS.ed25519}" }`,
    `{ (bastion) = "${KEYS.ed25519}" }`,
    `{ bastion = "${KEYS.ed25519}", }`,
    `{ bastion = 1 }`,
    `{ bastion = true }`,
    `{ bastion = null }`,
    `{ bastion = ["${KEYS.ed25519}"] }`,
    `{ bastion = "${KEYS.ed25519}\n" }`,
    `["${KEYS.ed25519}"]`,
  ],
  fc
    .tuple(fc.dictionary(ROLE, fc.oneof({ arbitrary: SSH_KEY, weight: 5 }, { arbitrary: NOT_A_STRING, weight: 1 }), { maxKeys: 3 }), SYNTAX)
    .map(([map, syntax]) => hcl(map, syntax)),
);

// The whole table

const KEYPAIR = edgesAnd(
  [
    "",
    "my-key",
    " my-key",
    "my-key ",
    "my key",
    "lab.example.org-deploy",
    "me@example",
    "a/b",
    "\t",
    " ",
    "\u00a0k",
    "k\u0085",
    "\ufeffk",
    label(255, "k"),
    label(256, "k"),
  ],
  padded(anyText),
);

// Node pools (config/node-pools.ts) and the default pool's settings

const ZONE = fc.oneof(
  { arbitrary: fc.constantFrom<Tree>("az1", "az2", "nova", "", " az1", "az1 ", label(255, "z"), label(256, "z")), weight: 4 },
  { arbitrary: NOT_A_STRING, weight: 1 },
);

const ZONE_LISTS = edgesAnd(
  [...MALFORMED, '["az1"]', '["az1", "az2", "az3"]', '["az1", "az1"]', '[""]', '[" az1"]', "[1]", "[null]", '"az1"', '{ a = "az1" }'],
  fc.tuple(fc.array(ZONE, { maxLength: 4 }), SYNTAX).map(([zones, syntax]) => hcl(zones, syntax)),
);

const TAG = fc.oneof(
  fc.constantFrom("team-a", "cost-center:4711", "env=prod", "a,b", "a/b", " x", "", "t".repeat(60), "t".repeat(61)),
  padded(anyText),
);
const TAG_LISTS = edgesAnd(
  [
    ...MALFORMED,
    "[]",
    '["team-a"]',
    '["team-a", "team-a"]',
    '["a,b"]',
    "[null]",
    `[${Array.from({ length: 50 }, (_, i) => `"t${i}"`).join(", ")}]`,
  ],
  fc.tuple(fc.array(TAG, { maxLength: 4 }), SYNTAX).map(([tags, syntax]) => hcl(tags, syntax)),
);

const METADATA_MAPS = edgesAnd(
  [
    ...MALFORMED,
    "{}",
    '{ owner = "team-a" }',
    '{ "cost center" = "4711" }',
    '{ "a/b" = "x" }',
    `{ x = "${"v".repeat(256)}" }`,
    "{ x = null }",
  ],
  fc
    .tuple(
      fc.dictionary(fc.oneof(fc.constantFrom("owner", "billing:id", "a b", "a/b", ""), anyText), fc.oneof(anyText, fc.constant("v")), {
        maxKeys: 3,
      }),
      SYNTAX,
    )
    .map(([metadata, syntax]) => hcl(metadata, syntax)),
);

const LABEL_KEYS = [
  "tier",
  "example.com/tier",
  "Tier_2.x",
  "kube-on-os/pool",
  "kubernetes.io/hostname",
  "node.kubernetes.io/microk8s-controlplane",
  "node-role.kubernetes.io/worker",
  "-tier",
  "a/b/c",
  "UPPER.example/x",
  label(63),
  label(64),
  "",
];
const LABEL_VALUES = ["web", "", "a.b-c_d", "-web", label(63), label(64), "a b"];
const LABELS_TREE = fc.dictionary(fc.constantFrom(...LABEL_KEYS), fc.oneof(fc.constantFrom<Tree>(...LABEL_VALUES), NOT_A_STRING), {
  maxKeys: 3,
});

const LABEL_MAPS = edgesAnd(
  [
    ...MALFORMED,
    "{}",
    '{ tier = "web" }',
    '{ "example.com/tier" = "web" }',
    '{ "kube-on-os/pool" = "x" }',
    "{ tier = 1 }",
    "{ tier = null }",
  ],
  fc.tuple(LABELS_TREE, SYNTAX).map(([labels, syntax]) => hcl(labels, syntax)),
);

const TAINTS = [
  "gpu=true:NoSchedule",
  "gpu:NoExecute",
  "example.com/gpu=:PreferNoSchedule",
  "node.kubernetes.io/unreachable:NoExecute",
  "node-role.kubernetes.io/control-plane:NoSchedule",
  "gpu=true:Never",
  "gpu",
  "=x:NoSchedule",
  "gpu=a b:NoSchedule",
];
const TAINT_LISTS = edgesAnd(
  [...MALFORMED, '["gpu=true:NoSchedule"]', '["gpu=a:NoSchedule", "gpu=b:NoSchedule"]', '["gpu:NoSchedule", "gpu:NoExecute"]', "[1]"],
  fc
    .tuple(fc.array(fc.oneof(fc.constantFrom<Tree>(...TAINTS), NOT_A_STRING), { maxLength: 3 }), SYNTAX)
    .map(([taints, syntax]) => hcl(taints, syntax)),
);

const POOL_NAMES = ["gpu", "web-1", "default", "worker", "master", "GPU", "1gpu", "gpu-", label(20), label(21), ""];
const POOL = fc.oneof(
  {
    arbitrary: fc.record(
      {
        count: fc.constantFrom<Tree>(0, 1, 3, 120, 255, 256, 1024, 1025, -1, 2.5, "2", "x", null, true),
        flavor: fc.constantFrom<Tree>("m1.large", " m1.large", "", null, 1),
        image: fc.constantFrom<Tree>("Ubuntu 24.04", "ad156007-77bb-4e32-ac97-7f8340cab73d", "", null),
        availability_zones: fc.array(ZONE, { maxLength: 3 }),
        boot_volume_size: fc.constantFrom<Tree>(0, 30, 16384, 16385, -1, 2.5, "30", null),
        boot_volume_type: fc.constantFrom<Tree>("", "ssd", " ssd", null),
        labels: LABELS_TREE,
        taints: fc.array(fc.constantFrom<Tree>(...TAINTS), { maxLength: 2 }),
        flavour: fc.constant<Tree>("ignored"),
      },
      { requiredKeys: ["count"] },
    ),
    weight: 8,
  },
  { arbitrary: fc.constantFrom<Tree>({}, null, [], "gpu", { flavor: "m1.large" }), weight: 1 },
);

const NODE_POOLS = edgesAnd(
  [
    ...MALFORMED,
    "{}",
    "{ gpu = { count = 2 } }",
    '{ gpu = { count = 2, flavor = "g1.large", availability_zones = ["az1", "az2", "az3"], boot_volume_size = 50, boot_volume_type = "ssd", labels = { "example.com/gpu" = "true" }, taints = ["gpu=true:NoSchedule"] } }',
    '{ gpu = { count = "2" } }',
    "{ gpu = { count = 1025 } }",
    "{ default = { count = 1 } }",
    '{ gpu = { flavor = "m1.large" } }',
    "{ gpu = null }",
    '{ gpu = { count = 1, boot_volume_type = "ssd" } }',
    "{ gpu = { count = 1, availability_zones = null } }",
    "{ gpu = { count = 1, labels = [] } }",
    "[{ count = 1 }]",
  ],
  fc.tuple(fc.dictionary(fc.constantFrom(...POOL_NAMES), POOL, { maxKeys: 3 }), SYNTAX).map(([pools, syntax]) => hcl(pools, syntax)),
);

// A private CA's certificates

/** A real CA certificate (a self-signed P-256 one, made for the tests with openssl req -x509), with its last line break. */
export const CA_CERTIFICATE = fs.readFileSync(path.join(__dirname, "..", "fixtures", "private-ca.pem"), "utf8");

/** A PEM block of `label` around base64 lines. */
const pemBlock = (label: string, lines: readonly string[]) => `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----`;

const BASE64_LINE = fc.stringMatching(/^[A-Za-z0-9+/]{1,64}={0,2}$/);
const CA_CERTIFICATES = edgesAnd(
  [
    "",
    CA_CERTIFICATE,
    CA_CERTIFICATE.trimEnd(),
    `${CA_CERTIFICATE}${CA_CERTIFICATE}`,
    `${CA_CERTIFICATE}\n${CA_CERTIFICATE}`,
    `${CA_CERTIFICATE}\n`,
    CA_CERTIFICATE.replace(/\n/g, "\r\n"),
    ` ${CA_CERTIFICATE}`,
    `\n${CA_CERTIFICATE}`,
    `subject=CN = kube-on-os test CA\n${CA_CERTIFICATE}`,
    `${CA_CERTIFICATE}${PRIVATE_KEY}`,
    PRIVATE_KEY,
    CA_CERTIFICATE.replace("CERTIFICATE-----\n", "CERTIFICATE-----"),
    CA_CERTIFICATE.replace("MIIB", "MI*B"),
    "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
    "-----BEGIN CERTIFICATE-----",
    "ca.pem",
    " ",
  ],
  fc
    .tuple(
      fc.array(fc.array(BASE64_LINE, { minLength: 0, maxLength: 3 }), { minLength: 1, maxLength: 2 }),
      fc.constantFrom("CERTIFICATE", "CERTIFICATE", "PRIVATE KEY", "X509 CRL"),
      fc.constantFrom("\n", "\n\n", "", "\r\n", " "),
    )
    .map(([blocks, label, after]) => blocks.map((lines) => pemBlock(label, lines)).join("\n") + after),
  padded(fc.constantFrom(CA_CERTIFICATE, CA_CERTIFICATE.trimEnd())),
);

// Each role's ingress rules and security groups (config/access.ts)

/** An ingress rule's text: well formed, or off by one part. */
const INGRESS_RULE = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("tcp", "udp", "icmp", "TCP", "sctp", "any"),
      fc.option(fc.tuple(fc.constantFrom(1, 22, 443, 8443, 65535, 65536, 0), fc.option(fc.constantFrom(22, 80, 8000, 65535, 70000)))),
      fc.constantFrom(" from ", " from  ", " ", "/from "),
      arbitrary(SUBNET),
    )
    .map(([protocol, ports, from, network]) => {
      const range = ports === null ? "" : `/${ports[0]}${ports[1] === null ? "" : `-${ports[1]}`}`;
      return `${protocol}${range}${from}${network}`;
    }),
  anyText,
);

const INGRESS_RULES = edgesAnd(
  [
    ...MALFORMED,
    "[]",
    '["tcp/8443 from 203.0.113.0/24"]',
    '["udp/51820 from 0.0.0.0/0", "icmp from 10.0.0.0/8"]',
    '["tcp/30000-32767 from 10.20.0.0/16"]',
    '["tcp/22-22 from 10.0.0.0/8"]',
    '["tcp/80-22 from 10.0.0.0/8"]',
    '["tcp/022 from 10.0.0.0/8"]',
    '["tcp/65536 from 10.0.0.0/8"]',
    '["icmp/8 from 10.0.0.0/8"]',
    '["tcp from 10.0.0.0/8"]',
    '["tcp/443 from 10.0.0.1/8"]',
    '["tcp/443 from fd00::/8"]',
    '["tcp/443"]',
    '["tcp/443 from 10.0.0.0/8", "tcp/443 from 10.0.0.0/8"]',
    '["tcp/443 from 10.0.0.0/8 "]',
    "[null]",
  ],
  fc
    .tuple(fc.array(fc.oneof({ arbitrary: INGRESS_RULE, weight: 4 }, { arbitrary: NOT_A_STRING, weight: 1 }), { maxLength: 3 }), SYNTAX)
    .map(([items, syntax]) => hcl(items, syntax)),
);

const SECURITY_GROUPS = edgesAnd(
  [
    ...MALFORMED,
    "[]",
    '["office-vpn"]',
    '["office-vpn", "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d"]',
    '["office-vpn", "office-vpn"]',
    '[""]',
    '[" office-vpn"]',
    `["${"g".repeat(255)}"]`,
    `["${"g".repeat(256)}"]`,
    "[null]",
  ],
  fc
    .tuple(fc.array(fc.oneof({ arbitrary: arbitrary(NAME), weight: 4 }, { arbitrary: NOT_A_STRING, weight: 1 }), { maxLength: 3 }), SYNTAX)
    .map(([items, syntax]) => hcl(items, syntax)),
);

/**
 * A generator of raw TF_VAR_ strings for every parameter: the type makes a new parameter come
 * with its own (and the test checks the keys against VARIABLE_NAMES too, as ts-jest does not type-check).
 */
export const VALUES: { readonly [K in VariableName]: Values } = {
  num_kube_nodes: numberText([0, 1, 3, maxNodesFor(16), 100, 256, 257, 1000]),
  kube_node_flavor: NAME,
  kube_node_availability_zones: ZONE_LISTS,
  kube_node_boot_volume_size: numberText([0, 1, 30, 16384, 16385]),
  kube_node_boot_volume_type: edgesAnd(["", "ssd", " ssd", "__DEFAULT__"], padded(anyText)),
  kube_node_labels: LABEL_MAPS,
  kube_node_taints: TAINT_LISTS,
  control_plane_flavor: NAME,
  control_plane_image: IMAGE,
  control_plane_boot_volume_size: numberText([0, 1, 30, 16384, 16385]),
  control_plane_boot_volume_type: edgesAnd(["", "ssd", " ssd"], padded(anyText)),
  node_pools: NODE_POOLS,
  tags: TAG_LISTS,
  server_metadata: METADATA_MAPS,
  external_network_name: NAME,
  router_id: NEUTRON_ID,
  public_network_id: NEUTRON_ID,
  private_network_id: NEUTRON_ID,
  bastion_floating_ip: FLOATING_IP,
  master_floating_ip: FLOATING_IP,
  api_floating_ip: FLOATING_IP,
  base_image: IMAGE,
  deploy_domain_name: DOMAIN,
  deploy_user: USERNAME_VALUES,
  set_root_password: BOOL,
  root_password: PASSWORD,
  root_password_hash: HASH,
  users: USERS,
  deploy_ssh_public_key: { edges: ["", " ", "\n", ...SSH_KEY_VALUES.edges], variants: SSH_KEY_VALUES.variants },
  keypair_name: KEYPAIR,
  bastion_flavor: NAME,
  salt_master_flavor: NAME,
  salt_volume_size: numberText([0, 1, 10, 1024, 1100]),
  kube_server_group_policy: edgesAnd(
    ["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity", "none", "None", "", "spread", "anti_affinity", "affinity,none"],
    padded(fc.constantFrom("soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity", "none")),
    padded(fc.constantFrom("soft-anti-affinity", "none").map((s) => s.toUpperCase())),
  ),
  public_network_cidr: SUBNET,
  private_network_cidr: SUBNET,
  pod_cidr: SUBNET,
  service_cidr: SUBNET,
  microk8s_channel: CHANNEL,
  reboot_for_updates: BOOL,
  api_load_balancer: edgesAnd(["auto", "on", "off", "On", "", "true", "auto "], padded(fc.constantFrom("auto", "on", "off"))),
  cloud_integration: BOOL,
  openstack_ca_certificate: CA_CERTIFICATES,
  lb_provider: edgesAnd(
    [
      "",
      "amphora",
      "ovn",
      "octavia",
      "amphorav2",
      "f5",
      "OVN",
      " ovn",
      "ovn ",
      "o v n",
      "-ovn",
      "ovn,amphora",
      "x".repeat(64),
      "x".repeat(65),
    ],
    padded(fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), anyText)),
  ),
  lb_method: edgesAnd(
    ["", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT", "round_robin", "RANDOM", " SOURCE_IP_PORT", "SOURCE_IP_PORT\n"],
    padded(fc.constantFrom("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")),
  ),
  ssh_allowed_cidrs: cidrListText(),
  api_allowed_cidrs: cidrListText(),
  bastion_ingress_rules: INGRESS_RULES,
  control_plane_ingress_rules: INGRESS_RULES,
  worker_ingress_rules: INGRESS_RULES,
  bastion_security_groups: SECURITY_GROUPS,
  control_plane_security_groups: SECURITY_GROUPS,
  worker_security_groups: SECURITY_GROUPS,
  dns_nameservers: NAMESERVERS,
  run_provisioners: BOOL,
  check_quotas: BOOL,
  ssh_host_keys: HOST_KEYS,
};

/** VALUES as arbitraries. */
export const RAW_VALUES = Object.fromEntries(Object.entries(VALUES).map(([name, values]) => [name, arbitrary(values)])) as {
  readonly [K in VariableName]: fc.Arbitrary<string>;
};

// Several variables at once, for the rules across them

/** TF_VAR_ values for a few variables together. */
export type RawValues = Partial<Record<VariableName, string>>;

const NETWORK_NAMES = ["public_network_cidr", "private_network_cidr", "pod_cidr", "service_cidr"] as const;

/** A network and one related to it: equal, inside, around, next to it, or far away. */
const NETWORK_PAIR = fc
  .record({
    base: fc.tuple(OCTET, OCTET, OCTET, OCTET),
    prefix: fc.integer({ min: 8, max: 24 }),
    relation: fc.constantFrom("equal", "inside", "around", "next", "previous", "far"),
    delta: fc.integer({ min: 1, max: 8 }),
  })
  .map(({ base, prefix, relation, delta }) => {
    const network = masked(base, prefix);
    const value = network.reduce((acc, o) => acc * 256 + o, 0);
    const quad = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
    const size = 2 ** (32 - prefix);
    const other = (() => {
      switch (relation) {
        case "equal":
          return `${quad(value)}/${prefix}`;
        case "inside":
          return `${quad(value)}/${Math.min(prefix + delta, 24)}`;
        case "around": {
          const outer = Math.max(prefix - delta, 8);
          return `${masked(network, outer).join(".")}/${outer}`;
        }
        case "next":
          return `${quad((value + size) % 2 ** 32)}/${prefix}`;
        case "previous":
          return `${quad((value - size + 2 ** 32) % 2 ** 32)}/${prefix}`;
        default:
          return `${quad((value + 2 ** 31) % 2 ** 32)}/${prefix}`;
      }
    })();
    return [`${quad(value)}/${prefix}`, other] as const;
  });

/** Two networks set to overlapping, adjacent or distant CIDRs. */
export const OVERLAPPING_NETWORKS: fc.Arbitrary<RawValues> = fc
  .tuple(
    fc.subarray([...NETWORK_NAMES], { minLength: 2, maxLength: 2 }),
    fc.oneof(NETWORK_PAIR, fc.tuple(arbitrary(SUBNET), arbitrary(SUBNET))),
  )
  .map(([[a, b], [cidrA, cidrB]]) => ({ [a]: cidrA, [b]: cidrB }));

/** A node count around the largest that a private network's lower half holds. */
export const NODES_IN_PRIVATE_NETWORK: fc.Arbitrary<RawValues> = fc
  .record({
    prefix: fc.integer({ min: 8, max: 24 }),
    third: fc.integer({ min: 0, max: 255 }),
    delta: fc.oneof(fc.integer({ min: -2, max: 2 }), fc.integer({ min: -200, max: 200 })),
  })
  .map(({ prefix, third, delta }) => ({
    private_network_cidr: `${masked([10, 128, third, 0], prefix).join(".")}/${prefix}`,
    num_kube_nodes: String(Math.max(1, maxNodesFor(prefix) + delta)),
  }));

/** A new keypair from a public key, an existing one by name, both, or neither. */
export const KEYPAIR_CHOICE: fc.Arbitrary<RawValues> = fc.record({
  deploy_ssh_public_key: fc.constantFrom("", KEYS.ed25519, KEYS.rsa2048, " "),
  keypair_name: fc.constantFrom("", "my-key", " ", "0"),
});

/** An existing router, an existing public network, both or neither. */
export const EXISTING_NETWORK_CHOICE: fc.Arbitrary<RawValues> = fc.record({
  router_id: fc.constantFrom("", "ad156007-77bb-4e32-ac97-7f8340cab73d"),
  public_network_id: fc.constantFrom("", "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93"),
});

/** Floating IPs given for the bastion, the master and the API load balancer, the same or apart, with or without a load balancer. */
export const FLOATING_IP_CHOICE: fc.Arbitrary<RawValues> = fc.record({
  bastion_floating_ip: fc.constantFrom("", "203.0.113.10", "203.0.113.11"),
  master_floating_ip: fc.constantFrom("", "203.0.113.10", "203.0.113.11"),
  api_floating_ip: fc.constantFrom("", "203.0.113.10", "203.0.113.12"),
  api_load_balancer: fc.constantFrom("auto", "on", "off"),
});

/** People's accounts beside the deploy user's, under the same name or not. */
export const USERS_AND_DEPLOY_USER: fc.Arbitrary<RawValues> = fc
  .record({
    deployUser: fc.constantFrom("ubuntu", "debian", "waldorf", "admin"),
    names: fc.array(fc.constantFrom("ubuntu", "waldorf", "statler"), { maxLength: 2 }),
  })
  .map(({ deployUser, names }) => ({ deploy_user: deployUser, users: `[${names.map((name) => U(name)).join(", ")}]` }));

/** LoadBalancer Services on OVN or another provider, with each pool algorithm, or neither. */
export const LB_CHOICE: fc.Arbitrary<RawValues> = fc.record({
  lb_provider: fc.constantFrom("", "ovn", "amphora"),
  lb_method: fc.constantFrom("", "SOURCE_IP_PORT", "ROUND_ROBIN", "SOURCE_IP"),
});
