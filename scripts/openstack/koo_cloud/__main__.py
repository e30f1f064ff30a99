"""The kit's command line: `scripts/openstack/cloud up|down|reset|status|env` (README.md beside it)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from . import cloud
from .kit import DEFAULT_PORT_BASE, PASSWORD, REGION, Kit, KitError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/openstack/cloud", description="A real OpenStack 2026.2 on 127.0.0.1."
    )
    parser.add_argument("command", choices=["up", "down", "reset", "status", "env"])
    parser.add_argument("--cold", action="store_true", help="up: start from nothing, ignoring the cached snapshot")
    parser.add_argument("--json", action="store_true", help="env: the variables as a JSON object")
    parser.add_argument("--port-base", type=int, default=int(os.environ.get("KOO_CLOUD_PORT_BASE", DEFAULT_PORT_BASE)))
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        help="the state directory (default: KOO_CLOUD_DIR, else under the temporary directory)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        # scripts/toolchain/paths.sh, KOO_CLOUD_CACHE, which scripts/openstack/cloud sets.
        default=Path(os.environ.get("KOO_CLOUD_CACHE") or Path.home() / ".cache" / "kube-on-os" / "openstack"),
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if not 1024 <= args.port_base <= 32700:
        parser.error(f"--port-base must be from 1024 to 32700 (got {args.port_base})")
    state = args.state or Path(
        os.environ.get("KOO_CLOUD_DIR") or Path(tempfile.gettempdir()) / f"kube-on-os-cloud-{args.port_base}"
    )
    kit = Kit(state=state.resolve(), venv=Path(sys.prefix), port_base=args.port_base, verbose=not args.quiet)
    try:
        if args.command == "status":
            print(json.dumps(cloud.status(kit), indent=2))
        elif args.command == "env":
            print_env(kit, args.json)
        else:
            with cloud.locked(kit):
                change(args, kit)
    except KitError as error:
        print(f"cloud: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def change(args: argparse.Namespace, kit: Kit) -> None:
    """up, down or reset, under the state directory's lock."""
    if args.command == "up":
        how = cloud.up(kit, args.cache, cold=args.cold)
        kit.say(f"up ({how}); `scripts/openstack/cloud env` prints its credentials")
    elif args.command == "down":
        ended = cloud.down(kit)
        kit.say(f"ended {len(ended)} processes" if ended else "nothing was running")
    else:
        cloud.reset(kit)
        kit.say(f"removed {kit.state}")


def print_env(kit: Kit, as_json: bool) -> None:
    """The admin's OS_* variables, as an openrc file would set them."""
    variables = {
        "OS_AUTH_URL": kit.auth_url,
        "OS_AUTH_TYPE": "password",
        "OS_IDENTITY_API_VERSION": "3",
        "OS_REGION_NAME": REGION,
        "OS_INTERFACE": "public",
        "OS_USERNAME": "admin",
        "OS_PASSWORD": PASSWORD,
        "OS_PROJECT_NAME": "admin",
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
    }
    if as_json:
        print(json.dumps(variables))
    else:
        print("\n".join(f"export {k}={v}" for k, v in variables.items()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
