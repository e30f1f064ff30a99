/** Whether a double's server is up: something accepts a connection, not merely a port or socket file. */
import * as net from "node:net";

/** Whether a connection to `to` (a TCP host and port, or a Unix socket's path) is accepted now. */
export function accepts(to: net.NetConnectOpts): Promise<boolean> {
  return new Promise((resolve) => {
    const connection = net.connect(to);
    connection.once("connect", () => connection.end(() => resolve(true)));
    connection.once("error", () => resolve(false));
  });
}

/**
 * Waits until a connection to `to` is accepted, trying every 50 ms. Fails with "`what` after
 * `timeoutMs` ms" at the deadline, and at once with the line `gone` returns when it returns one
 * (the server's process has exited).
 */
export async function waitUntilAccepted(
  to: net.NetConnectOpts,
  timeoutMs: number,
  what: string,
  gone: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await accepts(to)) return;
    const why = gone();
    if (why) throw new Error(why);
    if (Date.now() > deadline) throw new Error(`${what} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
