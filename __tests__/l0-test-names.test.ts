/**
 * No test disappears silently. __tests__/test-names/before.txt lists every test that passed before
 * the suite was made faster (issue 32); passing.txt lists every test a full `npm test` must pass,
 * and scripts/test/report.js fails the run when one of them did not pass. These tests hold the two
 * lists to each other and the report to its rule.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const REPORT = path.join(ROOT, "scripts", "test", "report.js");

function names(file: string): string[] {
  return fs
    .readFileSync(path.join(__dirname, "test-names", file), "utf8")
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** A results directory as npm test leaves it, with these jest and pytest outcomes. */
function results(jest: Record<string, string>, pytest: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-names-"));
  const byFile = new Map<string, { ancestorTitles: string[]; title: string; status: string }[]>();
  for (const [name, status] of Object.entries(jest)) {
    const [file, ...titles] = name.split(" › ");
    byFile.set(file, [...(byFile.get(file) ?? []), { ancestorTitles: titles.slice(0, -1), title: titles.at(-1)!, status }]);
  }
  const testResults = [...byFile].map(([file, assertionResults]) => ({ name: path.join(ROOT, file), status: "passed", assertionResults }));
  fs.writeFileSync(path.join(dir, "jest.json"), JSON.stringify({ testResults }));
  fs.writeFileSync(path.join(dir, "pytest-outcomes.json"), JSON.stringify(pytest));
  return dir;
}

/** Every required name with this outcome, split between the runners as the names say. */
function allRequired(status = "passed"): [Record<string, string>, Record<string, string>] {
  const jest: Record<string, string> = {};
  const pytest: Record<string, string> = {};
  for (const name of names("passing.txt")) (name.includes("::") ? pytest : jest)[name] = status;
  return [jest, pytest];
}

function report(dir: string, ...args: string[]) {
  const env = { ...process.env, KOO_TIMING_DIR: "", KOO_TERRAFORM: "/usr/local/bin/terraform", KOO_SKIP_NAMESPACE_TESTS: "" };
  return spawnSync("node", [REPORT, dir, ...args], { encoding: "utf8", env });
}

describe("the test-name lists", () => {
  it("keep every test that passed before: before.txt's names are all in passing.txt", () => {
    const passing = new Set(names("passing.txt"));
    expect(names("before.txt").length).toBe(1676);
    expect(names("before.txt").filter((name) => !passing.has(name))).toEqual([]);
  });

  it("name only test files that exist, each name once", () => {
    const required = names("passing.txt");
    expect(new Set(required).size).toBe(required.length);
    const files = [...new Set(required.map((name) => name.split(" › ")[0].split("::")[0]))];
    expect(files.filter((file) => !fs.existsSync(path.join(ROOT, file)))).toEqual([]);
  });
});

describe("scripts/test/report.js", () => {
  it("passes a run in which every required test passed, and prints the totals", () => {
    const [jest, pytest] = allRequired();
    const result = report(results(jest, pytest));
    const count = names("passing.txt").length;
    expect(result.stdout).toContain(`test names: all ${count} of the ${count} in __tests__/test-names/passing.txt passed`);
    expect(result.stdout).toMatch(/^totals: \d+ passed, 0 failed, 0 skipped$/m);
    expect(result.status).toBe(0);
  });

  it("fails a run from which a required test disappeared, naming it, though nothing failed", () => {
    const [jest, pytest] = allRequired();
    const gone = Object.keys(pytest)[0];
    delete pytest[gone];
    const result = report(results(jest, pytest));
    expect(result.stdout).toContain(
      `test names: 1 of the ${names("passing.txt").length} in __tests__/test-names/passing.txt did not pass:`,
    );
    expect(result.stdout).toContain(`  ${gone} (not run)`);
    expect(result.stdout).toMatch(/^totals: \d+ passed, 0 failed, 0 skipped$/m);
    expect(result.status).toBe(1);
  });

  it("counts a test that skipped itself as lost, unless the machine says why", () => {
    const [jest, pytest] = allRequired();
    const skipped = Object.keys(jest).find((name) => name.startsWith("__tests__/l5-rehearsal.test.ts"))!;
    jest[skipped] = "skipped";
    const dir = results(jest, pytest);
    expect(report(dir).stdout).toContain(`  ${skipped} (skipped)`);
    const excused = spawnSync("node", [REPORT, dir], {
      encoding: "utf8",
      env: { ...process.env, KOO_TERRAFORM: "/usr/local/bin/terraform", KOO_SKIP_NAMESPACE_TESTS: "1" },
    });
    expect(excused.stdout).toContain("test names: 1 not run on this machine (KOO_SKIP_NAMESPACE_TESTS=1)");
    expect(excused.status).toBe(0);
  });

  it("reads two tests of one name as failed when either failed", () => {
    const dir = results({}, {});
    const file = path.join(ROOT, "__tests__", "l0-config.test.ts");
    const twice = { ancestorTitles: ["a"], title: "same" };
    fs.writeFileSync(
      path.join(dir, "jest.json"),
      JSON.stringify({
        testResults: [
          {
            name: file,
            status: "failed",
            assertionResults: [
              { ...twice, status: "passed" },
              { ...twice, status: "failed" },
            ],
          },
        ],
      }),
    );
    const result = report(dir, "--subset");
    expect(result.stdout).toMatch(/^totals: 0 passed, 1 failed, 0 skipped$/m);
    expect(result.status).toBe(1);
  });

  it("checks only the files a partial run ran (npm run test:quick)", () => {
    const [jest] = allRequired();
    const l0 = Object.fromEntries(Object.entries(jest).filter(([name]) => name.startsWith("__tests__/l0-config.test.ts")));
    const result = report(results(l0, {}), "--subset");
    expect(result.stdout).toContain(
      `test names: all ${Object.keys(l0).length} of the ${Object.keys(l0).length} required in the files run passed`,
    );
    expect(result.status).toBe(0);
    expect(report(results(l0, {})).status).toBe(1);
  });

  it("prints the slowest suites with their wall and CPU time", () => {
    const dir = results({}, {});
    fs.mkdirSync(path.join(dir, "suites"));
    for (const [suite, wallMs, cpuMs] of [
      ["__tests__/a.test.ts", 300_000, 240_000],
      ["__tests__/l4-salt/test_b.py", 60_000, 61_000],
    ] as const) {
      const record = { runner: suite.endsWith(".py") ? "pytest" : "jest", suite, wallMs, cpuMs, cpuSource: "cgroup" };
      fs.writeFileSync(path.join(dir, "suites", `${path.basename(suite)}.json`), JSON.stringify(record));
    }
    fs.writeFileSync(path.join(dir, "steps"), "toolchain 1000\nlint 3000\ntests 20000\nend 620000\n");
    const lines = report(dir, "--subset").stdout.split("\n");
    expect(lines).toContain("time: 10 min 19 s in all (toolchain 2 s, lint 17 s, tests 600 s)");
    expect(lines).toContain("suites: 2, their CPU time 5 min 01 s (cgroup)");
    expect(lines.slice(lines.indexOf("the 2 slowest suites:") + 1, lines.indexOf("the 2 slowest suites:") + 4)).toEqual([
      "    wall      CPU  suite",
      "   300 s    240 s  __tests__/a.test.ts",
      "    60 s     61 s  __tests__/l4-salt/test_b.py",
    ]);
  });
});

describe("scripts/test/cpu-meter.js", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { weigh } = require("../scripts/test/cpu-meter");
  const CPU = "/sys/fs/cgroup/cpu";

  /** The cgroup v1 cpu controller's cgroup of `pid`, from /proc/<pid>/cgroup. */
  function cpuCgroup(pid: number): string | undefined {
    const line = fs
      .readFileSync(`/proc/${pid}/cgroup`, "utf8")
      .split("\n")
      .find((l) => l.split(":")[1]?.split(",").includes("cpu"));
    return line?.split(":")[2];
  }

  function writable(dir: string): boolean {
    try {
      fs.accessSync(path.join(dir, "cpu.shares"));
      fs.accessSync(dir, fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  it("weighs the critical suites 8 times each other suite where cgroup v1's cpu controller allows it, and leaves a suite unweighted elsewhere", () => {
    const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
    const pid = sleeper.pid!;
    const before = cpuCgroup(pid);
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-weigh-"));
    try {
      // Without a cgroup to move into, nothing moves and nothing throws.
      const notADirectory = path.join(scratch, "file");
      fs.writeFileSync(notADirectory, "");
      weigh("a.test.ts", "jest-a", pid, { KOO_CRITICAL_SUITES: "a.test.ts" });
      weigh("a.test.ts", "jest-a", pid, { KOO_SCHED_CGROUP: notADirectory, KOO_CRITICAL_SUITES: "a.test.ts" });
      expect(cpuCgroup(pid)).toBe(before);
      if (!writable(CPU)) return;

      const run = fs.mkdtempSync(path.join(CPU, "kube-on-os-weigh-"));
      try {
        const env = { KOO_SCHED_CGROUP: run, KOO_CRITICAL_SUITES: "__tests__/l5-rehearsal.test.ts,__tests__/l5-rehearsal-upgrade.test.ts" };
        weigh("__tests__/l5-rehearsal.test.ts", "jest-critical", pid, env);
        expect(fs.readFileSync(path.join(run, "jest-critical", "cpu.shares"), "utf8").trim()).toBe("8192");
        expect(cpuCgroup(pid)).toBe(`/${path.basename(run)}/jest-critical`);
        weigh("__tests__/l5-rehearsal-upgrade.test.ts", "jest-upgrade", pid, env);
        expect(fs.readFileSync(path.join(run, "jest-upgrade", "cpu.shares"), "utf8").trim()).toBe("8192");
        // A name the list holds only a part of is not in it.
        weigh("__tests__/l5-rehearsal", "jest-part", pid, env);
        expect(fs.readFileSync(path.join(run, "jest-part", "cpu.shares"), "utf8").trim()).toBe("1024");
        weigh("__tests__/l0-config.test.ts", "jest-other", pid, env);
        expect(fs.readFileSync(path.join(run, "jest-other", "cpu.shares"), "utf8").trim()).toBe("1024");
        expect(cpuCgroup(pid)).toBe(`/${path.basename(run)}/jest-other`);
      } finally {
        // Back where it was, so that the run's cgroups can go.
        fs.writeFileSync(path.join(CPU, before ?? "/", "cgroup.procs"), `${pid}\n`);
        for (const child of fs.readdirSync(run, { withFileTypes: true }).filter((d) => d.isDirectory()))
          fs.rmdirSync(path.join(run, child.name));
        fs.rmdirSync(run);
      }
    } finally {
      sleeper.kill();
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  });
});

describe("scripts/test/jest-sequencer.js", () => {
  // A suite missing from suite-seconds.json starts first, as if it were the longest: twelve new
  // ones once held back the rehearsal, the run's longest suite, by three minutes (2026-12-07).
  it("knows every jest suite's time: suite-seconds.json names each test file, and no other", () => {
    const seconds = JSON.parse(fs.readFileSync(path.join(ROOT, "scripts", "test", "suite-seconds.json"), "utf8"));
    const files = fs
      .readdirSync(__dirname)
      .filter((name) => name.endsWith(".test.ts"))
      .map((name) => `__tests__/${name}`);
    expect({
      missing: files.filter((file) => !(file in seconds)),
      stale: Object.keys(seconds).filter((file) => !files.includes(file)),
    }).toEqual({
      missing: [],
      stale: [],
    });
  });
});
