import * as fs from "node:fs";
import * as path from "node:path";
import { PARAMETERS_DOC, renderParametersDoc } from "../config/parameters-doc";

describe(PARAMETERS_DOC, () => {
  it("is current with config/parameters.ts: regenerate it with `npm run docs:parameters`", () => {
    const committed = fs.readFileSync(path.join(__dirname, "..", PARAMETERS_DOC), "utf8");
    expect(committed).toBe(renderParametersDoc());
  });
});
