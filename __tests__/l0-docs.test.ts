import * as fs from "node:fs";
import * as path from "node:path";
import { VARIABLES } from "../config/parameters";

const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");

describe("README and docs/", () => {
  it("documents every variable with its type and default (docs/parameters.md)", () => {
    const parameters = fs.readFileSync(path.join(__dirname, "..", "docs", "parameters.md"), "utf8");
    for (const [name, spec] of Object.entries(VARIABLES)) {
      const row = parameters.split("\n").find((line) => new RegExp(`^\\| +\\[\`${name}\`\\]\\(#${name}\\) +\\|`).test(line));
      expect(row).toBeDefined();
      expect(row).toContain(`\`${spec.type}\``);
      expect(row).toContain(spec.default === undefined ? "`null`" : `\`${JSON.stringify(spec.default)}\``);
    }
  });

  it("gives the two setup commands and the command .ci/run calls", () => {
    expect(readme).toContain("npm ci && npm run synth");
    expect(readme).toContain("npm test");
    expect(fs.readFileSync(path.join(__dirname, "..", ".ci", "run"), "utf8")).toMatch(/^npm test$/m);
  });
});
