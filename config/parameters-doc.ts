import { CROSS_RULES, VARIABLE_NAMES, VariableName, VARIABLES, VariableSpec } from "./parameters";

/** Where the rendered table lives, from the project root. */
export const PARAMETERS_DOC = "docs/parameters.md";

/** Prose from the table as Markdown text: no HTML tags, no inline math, no emphasis. */
function text(prose: string): string {
  return prose.replace(/[<$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, (c) => `\\${c}`);
}

function code(value: string): string {
  return `\`${value}\``;
}

function defaultOf(spec: VariableSpec<unknown>): string {
  return code(spec.default === undefined ? "null" : JSON.stringify(spec.default));
}

/** A Markdown table with its columns padded, as Prettier leaves it. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((_, i) => Math.max(3, ...[header, ...rows].map((row) => row[i].length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i])).join(" | ")} |`;
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)];
}

function section(name: VariableName, spec: VariableSpec<unknown>): string[] {
  const facts = [
    `- Type: ${code(spec.type)}`,
    `- Default: ${defaultOf(spec)}`,
    ...(spec.sensitive ? ["- Sensitive: checked when given to synth, never written into the synthesized JSON."] : []),
    ...(spec.ephemeral ? ["- Ephemeral: given at plan and at apply, never stored in a plan file or the state."] : []),
    ...spec.rules.map((rule) => `- ${rule.subject ? `${code(rule.subject.pattern)} must` : "Must"} be ${text(rule.mustBe)}.`),
    ...(CROSS_RULES[name] ?? []).map((rule) => `- Must be ${text(rule.mustBe)}.`),
    ...(spec.planTimeRules ?? []).map((rule) => `- Must be ${text(rule.mustBe)} (checked at plan time only).`),
  ];
  return [`### ${code(name)}`, "", text(spec.description), "", ...facts, ""];
}

/** docs/parameters.md, from the parameter table and the rules across parameters. */
export function renderParametersDoc(): string {
  const specs: [VariableName, VariableSpec<unknown>][] = VARIABLE_NAMES.map((name) => [name, VARIABLES[name]]);
  return [
    "# Parameters",
    "",
    "<!-- Generated from config/parameters.ts by `npm run docs:parameters`; edit that, not this file. -->",
    "",
    "Every parameter is a Terraform variable of the same name. `npm run synth` reads it from `TF_VAR_<name>`, checks it and records",
    "it as the variable's default; a value given at plan time only is checked by the variable's `validation` blocks, which hold the",
    "same rules, those that read other variables included. Values are read the way Terraform reads them: numbers (no spaces), `true`",
    "or `false`, and lists, objects and maps in HCL or JSON syntax (where `$${` and `%%{` stand for a literal `${` and `%{`).",
    "",
    ...table(
      ["Parameter", "Type", "Default"],
      // An object type in full is in the parameter's section.
      specs.map(([name, spec]) => [
        `[${code(name)}](#${name})`,
        code(spec.type.replace(/object\(\{.*\}\)/, "object({…})")),
        defaultOf(spec),
      ]),
    ),
    "",
    "## Each parameter",
    "",
    ...specs.flatMap(([name, spec]) => section(name, spec)),
  ].join("\n");
}
