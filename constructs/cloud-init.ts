import * as fs from "node:fs";
import * as path from "node:path";
import { Fn, Token } from "cdktf";
import Handlebars from "handlebars";

/** The roles with a template of their own under templates/cloud-init/. */
export type CloudInitRole = "bastion" | "salt-master" | "salt-minion";

/**
 * Values a role's cloud-config is rendered with. Strings may be Terraform tokens (variables,
 * cidrhost() addresses, count.index): they are embedded unescaped and quoted by Terraform itself.
 */
export interface CloudInitValues {
  readonly hostname: string;
  readonly fqdn: string;
  /** The Salt master's private address, which minions wait for before installing Salt. */
  readonly saltMasterIp: string;
  /** /etc/resolv.conf content. */
  readonly resolvConf: string;
  /** /etc/hosts content. */
  readonly etcHosts: string;
  /** /etc/kube-on-os/bootstrap.env content: the scripts' parameters. */
  readonly bootstrapEnv: string;
  /** cloud-init chpasswd `users`: a Terraform list, empty unless a root password hash is wanted. */
  readonly rootPasswordUsers: string;
  /** Netplan for a dual-homed host's second interface. @default - single-homed, no netplan file */
  readonly netplan?: string;
  /** @default DEFAULT_TIMEZONE ("Etc/UTC": not a parameter; a state comes with the setting, if ever) */
  readonly timezone?: string;
}

/** templates/cloud-init in the project root, from constructs/ or from the compiled build/constructs/. */
function findTemplateDir(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, "templates", "cloud-init");
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`cloud-init: no templates/cloud-init above ${__dirname}`);
}

export const TEMPLATE_DIR = findTemplateDir();
/** The project's Salt tree (salt/), beside templates/. */
export const SALT_DIR = path.join(TEMPLATE_DIR, "..", "..", "salt");
export const DEFAULT_TIMEZONE = "Etc/UTC";

/**
 * Escapes literal text so that Terraform's template engine passes it through untouched: `${`
 * and `%{` start interpolations and directives, `$${` and `%%{` are their literal forms.
 */
export function escapeTerraformTemplate(text: string): string {
  // Replacer functions: in a replacement string "$$" would itself collapse to "$".
  return text.replace(/\$\{/g, () => "$${").replace(/%\{/g, () => "%%{");
}

function yamlScalar(value: unknown): string {
  if (typeof value === "string" && Token.isUnresolved(value)) {
    // Terraform quotes the evaluated value: a JSON string is a valid YAML double-quoted scalar.
    return Fn.jsonencode(value);
  }
  if (typeof value !== "string") throw new Error(`cloud-init: yaml helper needs a string, got ${JSON.stringify(value)}`);
  return escapeTerraformTemplate(JSON.stringify(value));
}

function createRenderer(): typeof Handlebars {
  const handlebars = Handlebars.create();
  handlebars.registerHelper("yaml", (value: unknown) => new handlebars.SafeString(yamlScalar(value)));
  // A Terraform expression (list or object) that jsonencode turns into YAML flow syntax.
  handlebars.registerHelper("json", (value: unknown) => {
    if (typeof value !== "string" || !Token.isUnresolved(value)) throw new Error("cloud-init: json helper needs a Terraform token");
    return new handlebars.SafeString(Fn.jsonencode(value));
  });
  // A file from templates/cloud-init/files/, or (saltFile) from the Salt tree, escaped and
  // indented for a YAML block scalar.
  handlebars.registerHelper("file", (name: string, indent: number) => blockScalar(path.join(TEMPLATE_DIR, "files", name), indent));
  handlebars.registerHelper("saltFile", (name: string, indent: number) => blockScalar(path.join(SALT_DIR, name), indent));
  for (const partial of fs.readdirSync(path.join(TEMPLATE_DIR, "partials"))) {
    handlebars.registerPartial(
      path.basename(partial, ".hbs"),
      escapeTemplateSource(fs.readFileSync(path.join(TEMPLATE_DIR, "partials", partial), "utf8")),
    );
  }
  return handlebars;
}

/** A file's content, escaped for Terraform's template engine and indented by `indent` spaces. */
function blockScalar(file: string, indent: number): Handlebars.SafeString {
  const content = fs.readFileSync(file, "utf8");
  const pad = " ".repeat(indent);
  const body = content.endsWith("\n") ? content.slice(0, -1) : content;
  return new Handlebars.SafeString(
    escapeTerraformTemplate(
      body
        .split("\n")
        .map((line) => (line === "" ? "" : pad + line))
        .join("\n"),
    ),
  );
}

/** Template text is literal too, but `{{...}}` must stay intact for Handlebars. */
function escapeTemplateSource(source: string): string {
  if (/\$\{\{|%\{\{/.test(source)) throw new Error("cloud-init: a template must not put `${` or `%{` right before a Handlebars tag");
  return escapeTerraformTemplate(source);
}

let renderer: typeof Handlebars | undefined;

/** Renders a role's cloud-config, ready to be a Terraform `user_data` string. */
export function renderCloudInit(role: CloudInitRole, values: CloudInitValues): string {
  renderer ??= createRenderer();
  const source = fs.readFileSync(path.join(TEMPLATE_DIR, `${role}.yaml.hbs`), "utf8");
  const template = renderer.compile(escapeTemplateSource(source), { noEscape: true, strict: true });
  return template({
    ...values,
    role,
    timezone: values.timezone ?? DEFAULT_TIMEZONE,
    netplan: values.netplan ?? "",
    finalMessage: `kube-on-os: cloud-init finished on ${values.fqdn} after $UPTIME seconds`,
  });
}
