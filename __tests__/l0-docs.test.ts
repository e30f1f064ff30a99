import * as fs from "node:fs";
import * as path from "node:path";
import { VARIABLES } from "../config/parameters";
import { CHAIN_STEPS } from "../constructs/provisioning/chain";

const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");

describe("README and docs/", () => {
  it("documents every variable with its type and default (docs/parameters.md)", () => {
    const parameters = fs.readFileSync(path.join(__dirname, "..", "docs", "parameters.md"), "utf8");
    for (const [name, spec] of Object.entries(VARIABLES)) {
      const row = parameters.split("\n").find((line) => new RegExp(`^\\| +\\[\`${name}\`\\]\\(#${name}\\) +\\|`).test(line));
      expect(row).toBeDefined();
      // An object type is abbreviated in the table and given in full in the parameter's section.
      expect(row).toContain(`\`${spec.type.replace(/object\(\{.*\}\)/, "object({…})")}\``);
      expect(parameters).toContain(`- Type: \`${spec.type}\``);
      expect(row).toContain(spec.default === undefined ? "`null`" : `\`${JSON.stringify(spec.default)}\``);
    }
  });

  it("cites only tests that exist in microk8s-module.md's failure table", () => {
    const doc = fs.readFileSync(path.join(__dirname, "..", "docs", "microk8s-module.md"), "utf8");
    const table = doc.slice(doc.indexOf("### Failure cases"), doc.indexOf("Secrets: join URLs"));
    // M: the execution module's tests, a file for the package and one for each submodule.
    const moduleTests = fs
      .readdirSync(path.join(__dirname, "l4-salt"))
      .filter((file) => /^test_microk8s_\w+\.py$/.test(file) && file !== "test_microk8s_states.py")
      .map((file) => `l4-salt/${file}`);
    const files: Record<string, string[]> = {
      M: moduleTests,
      S: ["l4-salt/test_microk8s_states.py"],
      P: ["l4-salt/test_join_protocol.py"],
      R: ["l4-salt/test_render.py"],
      C: ["l4-salt/test_control_plane_recovery.py"],
      D: ["l5-provisioners/test_remove_node_real_salt.py"],
      B: ["l4-salt/test_reboot_roll.py"],
      L: ["l4-salt/test_node_labels.py"],
      K: ["l4-salt/test_cloud_provider.py"],
      O: ["l4-salt/test_cloud_module.py"],
    };
    const cited = [...table.matchAll(/\b([MSPRCDBLKO]) ((?:`test_[a-z0-9_]+(?:\[[a-z-]+\])?`(?:, )?)+)/g)].flatMap(([, file, names]) =>
      [...names.matchAll(/`(test_[a-z0-9_]+)/g)].map(([, name]) => [file, name]),
    );
    expect(cited.length).toBeGreaterThan(25);
    const missing = cited.filter(([file, name]) => {
      const source = files[file].map((relative) => fs.readFileSync(path.join(__dirname, relative), "utf8")).join("\n");
      return !new RegExp(`^def ${name}\\(`, "m").test(source);
    });
    expect(missing).toEqual([]);
  });

  it("draws the provisioning chain's steps in the README as the code makes them, in order", () => {
    const steps = [...CHAIN_STEPS];
    expect(steps.length).toBeGreaterThan(5);
    const picture = readme.slice(readme.indexOf("chain of provisioning steps")).split("```")[1];
    expect(picture.split("\n")[1].split(" → ")).toEqual(steps);
    expect(picture).toContain("NodeMembership");
  });

  it("maps every file of the app's TypeScript in architecture.md's Layout, and every directory of it in the README's", () => {
    const root = path.join(__dirname, "..");
    const architecture = fs.readFileSync(path.join(root, "docs", "architecture.md"), "utf8");
    const layout = architecture.slice(architecture.indexOf("## Layout"), architecture.indexOf("## Data flow"));
    const readmeLayout = readme.slice(readme.indexOf("## Layout"), readme.indexOf("## Deploying from a laptop"));
    const layers = ["facts", "config", "constructs"];
    const files = layers.flatMap((layer) =>
      (fs.readdirSync(path.join(root, layer), { recursive: true }) as string[])
        .filter((file) => file.endsWith(".ts"))
        .map((file) => [layer, file.split(path.sep).join("/")]),
    );
    expect(files.length).toBeGreaterThan(40);
    // Each layer has a table of its own: a file's row names it relative to the layer.
    const unmapped = files.filter(([layer, file]) => {
      const table = layout.slice(layout.indexOf(`### \`${layer}/\``)).split("\n### ")[0];
      return !table.includes(`| \`${file}\``);
    });
    expect(unmapped).toEqual([]);
    const directories = [...new Set(files.map(([layer, file]) => [layer, ...file.split("/").slice(0, -1)].join("/") + "/"))];
    expect(directories.filter((directory) => !new RegExp(`^${directory} `, "m").test(readmeLayout.split("```")[1]))).toEqual([]);
  });

  it("gives the two setup commands and the command .ci/run calls", () => {
    expect(readme).toContain("npm ci && npm run synth");
    expect(readme).toContain("npm test");
    expect(fs.readFileSync(path.join(__dirname, "..", ".ci", "run"), "utf8")).toMatch(/^npm test$/m);
  });

  it("names the Node.js lines package.json's engines declares wherever it says what you need", () => {
    const engines = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8")).engines.node;
    const lines = [...engines.matchAll(/\^(\d+)\./g)].map(([, line]: string[]) => line);
    expect(lines.length).toBeGreaterThan(1);
    const named = `Node.js ${lines.slice(0, -1).join(", ")} or ${lines.at(-1)}`;
    expect(readme.match(/You need Node\.js [\d, or]+\d/g)).toEqual([`You need ${named}`, `You need ${named}`]);
  });
});
