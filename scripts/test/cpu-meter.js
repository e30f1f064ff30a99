// The CPU time of one test suite: its worker and every process the suite started, daemons and
// the rehearsal's hosts included. scripts/test.sh makes a cgroup per run (KOO_TIMING_CGROUP) when
// this machine allows it (root with cgroup v1's cpuacct or cgroup v2); each suite's worker then
// moves itself into a child cgroup of its own, and everything it starts is counted there. Without
// cgroups (an unprivileged runner) a suite counts its worker's own CPU time and that of the
// children it reaped, which misses daemons: the report says which one it measured.
//
// Where the machine also has cgroup v1's cpu controller (KOO_SCHED_CGROUP), each suite's worker
// moves into a cgroup of its own there too, for the scheduler: the suites of KOO_CRITICAL_SUITES
// (the run's critical path, the suite that takes longest, and the rehearsals, whose CPU grows with
// their wall time) get CRITICAL_WEIGHT times the CPU weight of the others, so that they run nearly
// as if alone and the others fill the cores they leave (docs/decisions.md, "The longest suite
// comes first on the cores"). Without it, Linux shares the CPU per session (autogroups), and each
// Salt daemon's session weighs as much as a whole jest worker.
//
// The pytest side (__tests__/harness/timing.py) writes the same records in the same way.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

/** How many times the others' CPU weight the critical suite gets. */
const CRITICAL_WEIGHT = 8;

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ), 100 on every Linux this runs on. */
const TICKS = 100;

/** A file name for a suite: its path with every character but [A-Za-z0-9._-] made `_`. */
function suiteKey(suite) {
  return suite.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** utime + stime + cutime + cstime of `pid`, in ms, or undefined once it is gone. */
function processCpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14-17 of proc(5), counted from `state` (3) here.
    return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) * (1000 / TICKS);
  } catch {
    return undefined;
  }
}

/** The CPU a cgroup has used, in ms: cpuacct.usage (v1, ns) or cpu.stat's usage_usec (v2). */
function cgroupCpuMs(dir) {
  try {
    return Number(fs.readFileSync(path.join(dir, "cpuacct.usage"), "utf8")) / 1e6;
  } catch {
    // not cgroup v1
  }
  try {
    const stat = fs.readFileSync(path.join(dir, "cpu.stat"), "utf8");
    return Number(/^usage_usec (\d+)$/m.exec(stat)[1]) / 1000;
  } catch {
    return undefined;
  }
}

/** Whether env.KOO_CRITICAL_SUITES (comma-separated) names `suite`. */
function critical(suite, env) {
  return (env.KOO_CRITICAL_SUITES ?? "").split(",").includes(suite);
}

/**
 * Moves `pid` into the scheduler's cgroup `key` under env.KOO_SCHED_CGROUP, weighted for `suite`:
 * cpu.shares 1024 (the default) or CRITICAL_WEIGHT times that for a suite env.KOO_CRITICAL_SUITES
 * names (comma-separated). Nothing happens without KOO_SCHED_CGROUP or when the cgroup cannot be
 * made; the suite runs unweighted.
 */
function weigh(suite, key, pid, env = process.env) {
  if (!env.KOO_SCHED_CGROUP) return;
  try {
    const cgroup = path.join(env.KOO_SCHED_CGROUP, key);
    fs.mkdirSync(cgroup, { recursive: true });
    fs.writeFileSync(path.join(cgroup, "cpu.shares"), `${critical(suite, env) ? 1024 * CRITICAL_WEIGHT : 1024}\n`);
    fs.writeFileSync(path.join(cgroup, "cgroup.procs"), `${pid}\n`);
  } catch {
    // unweighted
  }
}

/**
 * Called in the process that runs `suite` before its first test: moves it into the suite's
 * cgroup, when there is one, and notes where the suite started. `runner` is jest or pytest.
 */
function enter(runner, suite, env = process.env) {
  const dir = env.KOO_TIMING_DIR;
  if (!dir) return;
  const key = `${runner}-${suiteKey(suite)}-${process.pid}`;
  let cgroup;
  if (env.KOO_TIMING_CGROUP) {
    try {
      cgroup = path.join(env.KOO_TIMING_CGROUP, key);
      fs.mkdirSync(cgroup, { recursive: true });
      fs.writeFileSync(path.join(cgroup, "cgroup.procs"), `${process.pid}\n`);
    } catch {
      cgroup = undefined;
    }
  }
  weigh(suite, key, process.pid, env);
  const start = { runner, suite, pid: process.pid, cgroup, startedAt: Date.now(), processCpuMs: processCpuMs(process.pid) };
  fs.mkdirSync(path.join(dir, "open"), { recursive: true });
  fs.writeFileSync(path.join(dir, "open", `${runner}-${suiteKey(suite)}.json`), JSON.stringify(start));
}

/**
 * Called when `suite` has ended (in jest's parent process, or the pytest worker that ran it):
 * writes its record, {runner, suite, wallMs, cpuMs, cpuSource}, for the report.
 */
function leave(runner, suite, env = process.env) {
  const dir = env.KOO_TIMING_DIR;
  if (!dir) return;
  const open = path.join(dir, "open", `${runner}-${suiteKey(suite)}.json`);
  let start;
  try {
    start = JSON.parse(fs.readFileSync(open, "utf8"));
  } catch {
    return;
  }
  const ended = Date.now();
  let cpuMs = start.cgroup ? cgroupCpuMs(start.cgroup) : undefined;
  let cpuSource = "cgroup";
  if (cpuMs === undefined) {
    const now = processCpuMs(start.pid);
    cpuMs = now === undefined || start.processCpuMs === undefined ? undefined : now - start.processCpuMs;
    cpuSource = "process and reaped children";
  }
  const record = { runner, suite, wallMs: ended - start.startedAt, cpuMs, cpuSource, startedAt: start.startedAt, endedAt: ended };
  fs.mkdirSync(path.join(dir, "suites"), { recursive: true });
  fs.writeFileSync(path.join(dir, "suites", `${runner}-${suiteKey(suite)}-${start.pid}.json`), JSON.stringify(record));
  fs.rmSync(open, { force: true });
}

module.exports = { enter, leave, weigh, cgroupCpuMs, processCpuMs, suiteKey, CRITICAL_WEIGHT };
