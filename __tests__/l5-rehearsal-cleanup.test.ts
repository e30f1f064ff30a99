/**
 * The rehearsal's cloud removes what a crashed rehearsal left on the machine (cloud.ts,
 * removeStale): its hosts' processes, which outlive it in their namespaces, the namespaces, and
 * its volumes' loop devices. A live rehearsal's are kept. Real namespaces and loop devices: root only.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { removeStale } from "./doubles/rehearsal/cloud";

const run = (command: string, ...args: string[]) => execFileSync(command, args, { encoding: "utf8" }).trim();
const namespaces = () =>
  run("ip", "netns", "list")
    .split("\n")
    .map((line) => line.split(" ")[0]);
const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

/** A rehearsal's leftovers, as the process `owner` would have made them: a host namespace with a process in it, a volume on a loop device. */
function leftovers(owner: number): { netns: string; sleeper: number; loop: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-rehearsal-"));
  fs.mkdirSync(path.join(dir, "cloud", "volumes"), { recursive: true });
  fs.writeFileSync(path.join(dir, "cloud", "owner.pid"), `${owner}\n`);
  const image = path.join(dir, "cloud", "volumes", "0f2c.img");
  fs.writeFileSync(image, "");
  fs.truncateSync(image, 1024 ** 2);
  const loop = run("losetup", "--find", "--show", image);
  const netns = `koo${owner}h0`;
  run("ip", "netns", "add", netns);
  const sleeper = spawn("ip", ["netns", "exec", netns, "sleep", "600"], { stdio: "ignore", detached: true });
  sleeper.unref();
  return { netns, sleeper: sleeper.pid!, loop, dir };
}

function attached(loop: string): boolean {
  return spawnSync("losetup", [loop], { encoding: "utf8" }).status === 0;
}

(process.getuid?.() === 0 && process.env.KOO_SKIP_NAMESPACE_TESTS !== "1" ? describe : describe.skip)(
  "L5 support: the rehearsal's cloud cleans up after a crashed rehearsal",
  () => {
    it("kills a dead rehearsal's host processes, deletes its namespaces, detaches its loops, and keeps a live one's", async () => {
      // A process that has exited stands for the crashed rehearsal; this one is a live rehearsal.
      const dead = spawnSync("true").pid;
      const crashed = leftovers(dead);
      const live = leftovers(process.pid);
      try {
        // (A rehearsal starting in another jest worker may sweep the crashed one first: the same outcome.)
        expect([crashed.sleeper, live.sleeper]).toEqual([expect.any(Number), expect.any(Number)]);
        await new Promise((resolve) => setTimeout(resolve, 200));
        removeStale();
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(namespaces()).not.toContain(crashed.netns);
        expect(alive(crashed.sleeper)).toBe(false);
        expect(attached(crashed.loop)).toBe(false);
        expect(namespaces()).toContain(live.netns);
        expect(alive(live.sleeper)).toBe(true);
        expect(attached(live.loop)).toBe(true);
      } finally {
        for (const { netns, sleeper, loop, dir } of [crashed, live]) {
          spawnSync("kill", ["-KILL", String(sleeper)]);
          spawnSync("ip", ["netns", "del", netns]);
          spawnSync("losetup", ["--detach", loop]);
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }
    });
  },
);
