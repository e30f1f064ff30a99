/**
 * The offline tests' stand-in for hashicorp/null (scripts/toolchain/go/null, mirrored by
 * scripts/toolchain/terraform.sh), held to what the stack is written against: the schema that
 * @cdktf/provider-null's bindings were generated from, read out of the bindings themselves, and
 * hashicorp/null's behaviour, on OpenTofu and on Terraform.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as providerNull from "@cdktf/provider-null";
import { NullProvider } from "@cdktf/provider-null/lib/provider";
import { Resource } from "@cdktf/provider-null/lib/resource";
import { TerraformStack, Testing, Token } from "cdktf";
import * as ts from "typescript";
import { describeEachCli, initOffline, runTf, TfCli } from "./support/tofu";

const ROOT = path.resolve(__dirname, "..");

// Not carried by the bindings (cdktf writes doc comments for arguments only), so written out
// here: the texts of upstream's internal/provider/resource.go at v3.2.4.
const NULL_RESOURCE_DESCRIPTION =
  "The `null_resource` resource implements the standard resource lifecycle but takes no further action. " +
  "On Terraform 1.4 and later, use the [`terraform_data` resource type](https://developer.hashicorp.com/terraform/language/resources/terraform-data) instead. " +
  "Terraform 1.9 and later support the `moved` configuration block from `null_resource` to `terraform_data`.\n\n" +
  "The `triggers` argument allows specifying an arbitrary set of values that, when changed, will cause the resource to be replaced.";
const ID_DESCRIPTION = "This is set to a random value at create time.";

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

/** A class of the bindings: the provider, a resource or a data source. */
interface BoundClass {
  readonly tfResourceType: string;
  readonly name: string;
}

/** Every class the bindings export, by Terraform type, with the module that defines it. */
function boundClasses(): { cls: BoundClass; module: string }[] {
  return Object.entries(providerNull).flatMap(([namespace, exports]) =>
    Object.values(exports as Record<string, unknown>)
      .filter((value): value is BoundClass => typeof value === "function" && typeof (value as any).tfResourceType === "string")
      .map((cls) => ({ cls, module: require.resolve(`@cdktf/provider-null/lib/${kebab(namespace)}`) })),
  );
}

function kebab(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The generated TypeScript a module of the bindings was compiled from (its source map keeps it). */
function generatedSource(module: string): ts.SourceFile {
  const js = fs.readFileSync(module, "utf8");
  const inline = js.match(/^\/\/# sourceMappingURL=data:application\/json;base64,(.+)$/m);
  if (!inline) throw new Error(`${module} has no inline source map`);
  const map = JSON.parse(Buffer.from(inline[1], "base64").toString("utf8"));
  return ts.createSourceFile(map.sources[0], map.sourcesContent[0], ts.ScriptTarget.Latest, true);
}

/** The Terraform type a getter returns, by the cdktf accessor it calls. */
const GETTER_TYPES: Record<string, unknown> = {
  getStringAttribute: "string",
  getNumberAttribute: "number",
  getBooleanAttribute: "bool",
  getListAttribute: ["list", "string"],
  getNumberListAttribute: ["list", "number"],
  getStringMapAttribute: ["map", "string"],
  getNumberMapAttribute: ["map", "number"],
  getBooleanMapAttribute: ["map", "bool"],
};

/** The Terraform type of an argument, by the storage class cdktf synthesizes it with. */
const STORAGE_TYPES: Record<string, unknown> = {
  string: "string",
  number: "number",
  boolean: "bool",
  stringList: ["list", "string"],
  numberList: ["list", "number"],
  stringMap: ["map", "string"],
  numberMap: ["map", "number"],
  booleanMap: ["map", "bool"],
};

/**
 * The schema block a class of the bindings was generated from, as `providers schema -json` would
 * print it, as far as the bindings tell:
 * - names and flags from the generator's `// <name> - computed: …, optional: …, required: …`
 *   comment on each attribute;
 * - types from the attribute's getter (`getStringMapAttribute('triggers')`), and for arguments
 *   also from the storage class synthesizeHclAttributes declares, which must agree;
 * - descriptions from the doc comments of the config interface's properties.
 * The provider's `alias` is cdktf's meta-argument, not part of the provider's schema.
 */
function boundBlock(module: string, className: string): Record<string, any> {
  const source = generatedSource(module);
  const text = source.getFullText();
  const flags = new Map<string, { computed: boolean; optional: boolean; required: boolean }>();
  for (const [, name, computed, optional, required] of text.matchAll(
    /^ *\/\/ (\w+) - computed: (true|false), optional: (true|false), required: (true|false)$/gm,
  )) {
    flags.set(name, { computed: computed === "true", optional: optional === "true", required: required === "true" });
  }
  const getterTypes = new Map<string, unknown>();
  const storageTypes = new Map<string, unknown>();
  const descriptions = new Map<string, string>();
  const visit = (node: ts.Node): void => {
    if (ts.isGetAccessorDeclaration(node) && ts.isClassDeclaration(node.parent) && node.parent.name?.text === className) {
      // return this.get<Kind>Attribute('<terraform name>')
      const call = node.body?.statements.find(ts.isReturnStatement)?.expression;
      if (call && ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression)) {
        const accessor = call.expression.name.text;
        const [argument] = call.arguments;
        if (accessor in GETTER_TYPES && argument && ts.isStringLiteral(argument)) getterTypes.set(argument.text, GETTER_TYPES[accessor]);
      }
    }
    if (ts.isPropertyAssignment(node) && ts.isObjectLiteralExpression(node.initializer)) {
      // <terraform name>: { value: …, isBlock: false, type: "map", storageClassType: "stringMap" }
      const storage = node.initializer.properties.find(
        (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText() === "storageClassType",
      );
      if (storage && ts.isStringLiteral(storage.initializer))
        storageTypes.set(node.name.getText(), STORAGE_TYPES[storage.initializer.text]);
    }
    if (ts.isPropertySignature(node) && ts.isInterfaceDeclaration(node.parent) && node.parent.name.text === `${className}Config`) {
      const doc = ts
        .getJSDocCommentsAndTags(node)
        .filter(ts.isJSDoc)
        .map((jsDoc) => ts.getTextOfJSDocComment(jsDoc.comment) ?? "")
        .join("\n");
      // The generator appends a paragraph linking to the registry's docs.
      descriptions.set(
        node.name.getText(),
        doc
          .split(/\n\s*\n/)
          .filter((paragraph) => !paragraph.startsWith("Docs at Terraform Registry"))
          .join("\n\n")
          .trim(),
      );
    }
    ts.forEachChild(node, visit);
  };
  visit(source);

  const camel = (snake: string) => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const attributes: Record<string, any> = {};
  for (const [name, flag] of flags) {
    if (name === "alias" && className === "NullProvider") continue;
    if (storageTypes.has(name) && getterTypes.has(name))
      expect({ name, type: storageTypes.get(name) }).toEqual({ name, type: getterTypes.get(name) });
    const description = descriptions.get(camel(name)) || undefined;
    attributes[name] = {
      type: getterTypes.get(name) ?? storageTypes.get(name),
      ...(description === undefined ? {} : { description }),
      description_kind: "plain",
      ...(flag.required ? { required: true } : {}),
      ...(flag.optional ? { optional: true } : {}),
      ...(flag.computed ? { computed: true } : {}),
    };
  }
  return Object.keys(attributes).length > 0 ? { attributes, description_kind: "plain" } : { description_kind: "plain" };
}

/** `providers schema -json` of the stand-in, by a CLI, in a directory that only requires it. */
function reportedSchema(cli: TfCli): Record<string, any> {
  const dir = tempDir("null-schema");
  const stack = new TerraformStack(Testing.app(), "schema");
  new NullProvider(stack, "null");
  fs.writeFileSync(path.join(dir, "main.tf.json"), Testing.synth(stack));
  initOffline(dir, cli);
  const result = runTf(cli, ["providers", "schema", "-json"], dir);
  if (result.status !== 0) throw new Error(`${cli.name} providers schema failed:\n${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** The address a source without a hostname (`null`) means to each CLI. */
function registryAddress(cli: TfCli): string {
  return `${cli.name === "tofu" ? "registry.opentofu.org" : "registry.terraform.io"}/hashicorp/null`;
}

describe("the hashicorp/null stand-in", () => {
  it("claims the provider version @cdktf/provider-null's bindings were generated from, pinned once in paths.sh", () => {
    const result = spawnSync("bash", ["-c", "source scripts/toolchain/paths.sh && koo_null_version"], { cwd: ROOT, encoding: "utf8" });
    expect(result.status).toBe(0);
    const stack = new TerraformStack(Testing.app(), "version");
    const generated = [new NullProvider(stack, "null"), new Resource(stack, "Step")].map(
      (construct) => construct.terraformGeneratorMetadata?.providerVersion,
    );
    expect(generated).toEqual([result.stdout.trim(), result.stdout.trim()]);
  });

  it("finds in the bindings the provider, null_resource and null_data_source, which the stand-in leaves out", () => {
    expect(boundClasses().map(({ cls }) => `${cls.tfResourceType} ${cls.name}`)).toEqual([
      "null_resource Resource",
      "null_data_source DataNullDataSource",
      "null NullProvider",
    ]);
  });

  it("reads the bindings' schema as the generator's comments, getters and doc comments describe it", () => {
    // A check of the reader itself, so that an empty reading cannot pass the comparison below.
    const resource = boundClasses().find(({ cls }) => cls.tfResourceType === "null_resource")!;
    expect(boundBlock(resource.module, "Resource")).toEqual({
      attributes: {
        id: { type: "string", description_kind: "plain", computed: true },
        triggers: {
          type: ["map", "string"],
          description:
            "A map of arbitrary strings that, when changed, will force the null resource to be replaced, re-running any associated provisioners.",
          description_kind: "plain",
          optional: true,
        },
      },
      description_kind: "plain",
    });
    const dataSource = boundClasses().find(({ cls }) => cls.tfResourceType === "null_data_source")!;
    expect(Object.keys(boundBlock(dataSource.module, "DataNullDataSource").attributes).sort()).toEqual([
      "has_computed_default",
      "id",
      "inputs",
      "outputs",
      "random",
    ]);
  });
});

describeEachCli("the hashicorp/null stand-in", (cli) => {
  let reported: Record<string, any>;
  beforeAll(() => {
    reported = reportedSchema(cli);
  });

  it("serves the schema the bindings were generated from: an empty provider and null_resource", () => {
    expect(Object.keys(reported.provider_schemas)).toEqual([registryAddress(cli)]);
    const schema = reported.provider_schemas[registryAddress(cli)];
    const bound = Object.fromEntries(boundClasses().map(({ cls, module }) => [cls.tfResourceType, boundBlock(module, cls.name)]));
    expect(schema.provider).toEqual({ version: 0, block: bound.null });
    // What the bindings do not carry: the block's description and the computed id's.
    const resource = structuredClone(schema.resource_schemas.null_resource);
    expect([resource.block.description, resource.block.attributes.id.description]).toEqual([NULL_RESOURCE_DESCRIPTION, ID_DESCRIPTION]);
    delete resource.block.description;
    delete resource.block.attributes.id.description;
    expect(resource).toEqual({ version: 0, block: bound.null_resource });
    expect(Object.keys(schema.resource_schemas)).toEqual(["null_resource"]);
    // null_data_source is deprecated and unused here: left out (see scripts/toolchain/go/null/provider.go).
    expect(schema.data_source_schemas).toBeUndefined();
  });

  describe("behaves like hashicorp/null's null_resource", () => {
    const dir = tempDir(`null-${cli.name}`);
    let firstId: string;

    /** The configuration, written by the bindings: one null_resource with `triggers`. */
    function configure(triggers: Record<string, string | null>): void {
      const stack = new TerraformStack(Testing.app(), "behaviour");
      new NullProvider(stack, "null");
      const step = new Resource(stack, "Step", {
        triggers: Object.fromEntries(Object.entries(triggers).map(([k, v]) => [k, v ?? Token.asString(Token.nullValue())])),
      });
      step.overrideLogicalId("step");
      fs.writeFileSync(path.join(dir, "main.tf.json"), Testing.synth(stack));
    }

    function tf(args: string[]) {
      const result = runTf(cli, args, dir);
      if (result.status !== 0 && !args.includes("-detailed-exitcode")) throw new Error(`${cli.name} ${args[0]} failed:\n${result.stderr}`);
      return result;
    }

    /** The actions a plan of the current configuration would take on the resource. */
    function plannedActions(): string[] {
      tf(["plan", "-input=false", "-out=plan.cache"]);
      const plan = JSON.parse(tf(["show", "-json", "plan.cache"]).stdout);
      return plan.resource_changes.map((change: any) => change.change.actions.join("+"));
    }

    function state(): { id: string; triggers: Record<string, string | null> } {
      const json = JSON.parse(tf(["show", "-json"]).stdout);
      return json.values.root_module.resources[0].values;
    }

    beforeAll(() => {
      configure({ after: "1", hash: "a" });
      initOffline(dir, cli);
    });

    it("creates the resource with a random decimal id, and then plans no changes", () => {
      expect(plannedActions()).toEqual(["create"]);
      tf(["apply", "-input=false", "plan.cache"]);
      firstId = state().id;
      expect(firstId).toMatch(/^[0-9]+$/);
      expect(state().triggers).toEqual({ after: "1", hash: "a" });
      expect(tf(["plan", "-input=false", "-detailed-exitcode"]).status).toBe(0);
    });

    it("plans a replacement when a trigger's value changes", () => {
      configure({ after: "1", hash: "b" });
      expect(plannedActions()).toEqual(["delete+create"]);
    });

    it("does not replace for a key added with a null value: an in-place update that keeps the id", () => {
      configure({ after: "1", hash: "a", added: null });
      expect(plannedActions()).toEqual(["update"]);
      tf(["apply", "-input=false", "plan.cache"]);
      expect(state()).toEqual({ id: firstId, triggers: { after: "1", hash: "a", added: null } });
      expect(tf(["plan", "-input=false", "-detailed-exitcode"]).status).toBe(0);
    });

    it("plans a replacement when a key is removed, and creates a new id", () => {
      configure({ after: "1" });
      expect(plannedActions()).toEqual(["delete+create"]);
      tf(["apply", "-input=false", "plan.cache"]);
      expect(state().id).not.toBe(firstId);
      expect(tf(["plan", "-input=false", "-detailed-exitcode"]).status).toBe(0);
    });

    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  });
});
