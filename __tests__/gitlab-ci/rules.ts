/**
 * GitLab's `rules:if` expressions and `rules` lists, evaluated as GitLab documents them, for the
 * pipeline contexts gitlab-ci-local cannot stand in for: it always sets CI_COMMIT_BRANCH from the
 * checkout and only reads `workflow:rules` for variables, so a merge request pipeline, a tag or a
 * branch with an open merge request cannot be run through it. __tests__/journey-gitlab-ci.test.ts checks
 * this evaluator against gitlab-ci-local where both can answer (branch pipelines).
 *
 * Semantics (GitLab docs, ci/jobs/job_rules.md "CI/CD variable expressions" and "rules"):
 * - `$VAR` alone is true when the variable is defined and not empty;
 * - `==` and `!=` compare strings; an undefined variable is null, and null equals only null;
 * - `&&` binds tighter than `||`; parentheses group;
 * - the first rule whose `if` holds decides (its `when`, default `on_success`); when no rule holds,
 *   a job does not run (`never`) and a pipeline is not created.
 * Anything else (regular expressions, `=~`, `exists`, `changes`) is refused, so that a new kind of
 * rule in .gitlab-ci.yml fails these tests instead of being misread.
 */

export type Variables = Record<string, string | undefined>;

type Token = { kind: "var" | "string" | "null" | "op" | "paren"; value: string };

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s*(?:\$([A-Za-z_][A-Za-z0-9_]*)|"([^"]*)"|'([^']*)'|(null)\b|(==|!=|&&|\|\|)|([()]))/y;
  let index = 0;
  while (index < expression.length) {
    if (/^\s*$/.test(expression.slice(index))) break;
    pattern.lastIndex = index;
    const match = pattern.exec(expression);
    if (!match) throw new Error(`rules:if: unsupported syntax at "${expression.slice(index)}" in ${JSON.stringify(expression)}`);
    index = pattern.lastIndex;
    if (match[1] !== undefined) tokens.push({ kind: "var", value: match[1] });
    else if (match[2] !== undefined || match[3] !== undefined) tokens.push({ kind: "string", value: match[2] ?? match[3] });
    else if (match[4] !== undefined) tokens.push({ kind: "null", value: "null" });
    else if (match[5] !== undefined) tokens.push({ kind: "op", value: match[5] });
    else tokens.push({ kind: "paren", value: match[6] });
  }
  return tokens;
}

/** Whether `expression` holds with `variables` (GitLab's predefined and CI/CD variables). */
export function evaluateIf(expression: string, variables: Variables): boolean {
  const tokens = tokenize(expression);
  let position = 0;
  const peek = () => tokens[position];
  const take = () => tokens[position++];
  const fail = (what: string) => {
    throw new Error(`rules:if: ${what} in ${JSON.stringify(expression)}`);
  };
  const value = (token: Token): string | null => {
    if (token.kind === "var") return variables[token.value] ?? null;
    if (token.kind === "string") return token.value;
    return null;
  };
  const truthy = (v: string | null) => v !== null && v !== "";

  // primary := operand [(== | !=) operand] | "(" or ")"
  const primary = (): boolean => {
    const token = take();
    if (!token) return fail("unexpected end");
    if (token.kind === "paren" && token.value === "(") {
      const inner = or();
      if (take()?.value !== ")") fail("missing )");
      return inner;
    }
    if (token.kind === "op" || token.kind === "paren") return fail(`unexpected ${token.value}`);
    const next = peek();
    if (next?.kind === "op" && (next.value === "==" || next.value === "!=")) {
      take();
      const right = take();
      if (!right || right.kind === "op" || right.kind === "paren") return fail("missing right operand");
      const equal = value(token) === value(right);
      return next.value === "==" ? equal : !equal;
    }
    return truthy(value(token));
  };
  const and = (): boolean => {
    let result = primary();
    while (peek()?.value === "&&") {
      take();
      result = primary() && result;
    }
    return result;
  };
  const or = (): boolean => {
    let result = and();
    while (peek()?.value === "||") {
      take();
      result = and() || result;
    }
    return result;
  };
  const result = or();
  if (position !== tokens.length) fail(`unexpected ${tokens[position].value}`);
  return result;
}

export interface Rule {
  readonly if?: string;
  readonly when?: string;
  readonly [key: string]: unknown;
}

/** `when` of the first rule that holds, or `never` when none does (a job's rules, or workflow). */
export function evaluateRules(rules: readonly Rule[], variables: Variables): string {
  for (const rule of rules) {
    const keys = Object.keys(rule).filter((k) => !["if", "when", "allow_failure", "variables"].includes(k));
    if (keys.length > 0) throw new Error(`rules: unsupported ${keys.join(", ")}`);
    if (rule.if === undefined || evaluateIf(rule.if, variables)) return rule.when ?? "on_success";
  }
  return "never";
}
