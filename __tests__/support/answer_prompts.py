"""Runs a shell script in a pseudo-terminal, as a person at a terminal would, answering prompts.

cdktf's deploy and destroy ask for approval with an interactive menu (Ink), which needs a real
terminal: on a pipe they fail ("Raw mode is not supported"). This helper gives the script one,
presses Enter (the menu's first entry, "Approve") each time a prompt matching --approve appears,
and passes the terminal's output through to stdout. It exits with the script's status. With
--interrupt, it presses Ctrl-C once, when the output first matches that regex.

usage: answer_prompts.py --approve REGEX [--interrupt REGEX] [--timeout SECONDS] -- bash SCRIPT
"""

import argparse
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time

# Ink's escape sequences (colours, cursor moves) sit between the words of a prompt.
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")
# How much of the output before the latest read a prompt is searched in: a prompt is a few dozen
# bytes, and searching all the output since the last one again at every read is quadratic.
PROMPT_WINDOW = 4096
# The size a terminal opens at. A pseudo-terminal starts at 0 rows, which Ink takes for a screen
# shorter than any output: it then redraws cdktf's whole log at every frame, 25 MB for a deploy
# where a terminal of this size gets 0.3 MB.
ROWS, COLUMNS = 24, 80


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--approve", required=True, help="regex of the prompt to approve with Enter")
    parser.add_argument("--interrupt", help="regex of the output at which to press Ctrl-C, once")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    prompt = re.compile(args.approve.encode())
    interrupt = re.compile(args.interrupt.encode()) if args.interrupt else None
    seen = b""  # all the output, without escape sequences, until the interrupt

    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(sys.stdin.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        os.execvp(command[0], command)
    deadline = time.monotonic() + args.timeout
    pending = b""  # the tail of the output since the last answered prompt, without escape sequences
    approvals = 0
    while True:
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            print(f"\nanswer_prompts: timed out after {args.timeout:.0f} s", file=sys.stderr)
            return 124
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed: the script has ended
            break
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        pending += ANSI.sub(b"", chunk)
        if interrupt:
            seen += ANSI.sub(b"", chunk)
            if interrupt.search(seen):
                os.write(fd, b"\x03")  # the terminal turns it into SIGINT for its foreground group
                interrupt = None
        if prompt.search(pending):
            time.sleep(0.5)  # let the menu finish drawing before the key press
            os.write(fd, b"\r")
            approvals += 1
            pending = b""
        else:
            pending = pending[-PROMPT_WINDOW:]
    _, status = os.waitpid(pid, 0)
    print(f"\nanswer_prompts: {approvals} prompt(s) approved", file=sys.stderr)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
