"""
dqlite as both fake microk8s model it (this package's __init__.py names them): the roles
go-dqlite's leader gives the members, who holds a copy of the database, when a majority answers,
and whether a node may leave. One model, so that no test of either can show a recovery real
microk8s cannot make.

- Roles (go-dqlite app/roles.go, with k8s-dqlite's defaults of 3 voters and 3 stand-bys: its
  pkg/server/server.go calls app.New without WithVoters or WithStandBys, app/options.go defaults
  both to 3): a node joins as a spare (client.Add) and takes a role at startup
  (RolesChanges.Assume, app.go); below minVoters (3) members only the leader votes; from 3,
  online stand-bys and spares are promoted to voters up to 3, an offline voter is demoted once 3
  others vote, and stand-bys are kept at 3 the same way (RolesChanges.Adjust, which the leader
  runs every 30 s, WithRolesAdjustmentFrequency; the fakes at every write). So 2 control-plane
  nodes are a voter and a spare.
- Copies: voters and stand-bys replicate the log, a spare keeps none (go-dqlite client NodeRole).
- Quorum (Raft, canonical/raft, which dqlite embeds): a read or a write needs a majority of the
  voters; go-dqlite's driver reads through the leader too.
- Leaving (scripts/wrappers/leave.py is_leader_without_successor, 1.28 and 1.35 alike): refused
  when the cluster has one voter, this node is it, and it has other members.

A member is a dict {"address": "<host>:19001", "role": "voter" | "standby" | "spare"}.
"""

from __future__ import annotations

VOTER, STANDBY, SPARE = "voter", "standby", "spare"
# go-dqlite app/roles.go minVoters, and the App's defaults (app/options.go WithVoters and
# WithStandBys: 3 each), which k8s-dqlite keeps.
MIN_VOTERS, VOTERS, STANDBYS = 3, 3, 3
# k8s-dqlite's port: a member's address is "<host>:19001".
PORT = 19001
# What leave.py and remove_node.py end with when their `dqlite .cluster` finds no leader: the
# CalledProcessError check_output raises, uncaught.
NO_LEADER_TRACEBACK = (
    "Traceback (most recent call last):\n"
    "subprocess.CalledProcessError: Command '[...dqlite..., 'k8s', '.cluster']' returned non-zero exit status 1."
)
# kubectl's text when the API server answers 504 because its datastore does not (apimachinery
# pkg/api/errors NewGenericServerResponse, StatusGatewayTimeout; kubectl helpers.go "Error from
# server (<reason>)").
TIMED_OUT = "the server was unable to return a response in the time allotted, but may still be processing the request"


def host_of(member: dict) -> str:
    """A member's host: its address without dqlite's port."""
    return member["address"].rsplit(":", 1)[0]


def adjust_roles(members: list[dict], online: set[str], leader: str | None) -> None:
    """
    go-dqlite app/roles.go, RolesChanges.Adjust, applied until nothing changes: ``members``
    changed in place. ``online``: the hosts whose dqlite answers; ``leader``: the host of the
    voter that leads (it never demotes itself).
    """
    for _ in range(4 * len(members) + 4):
        if len(members) <= 1:
            return
        on = [m for m in members if host_of(m) in online]
        voters_on = [m for m in on if m["role"] == VOTER]
        standbys_on = [m for m in on if m["role"] == STANDBY]
        spares_on = [m for m in on if m["role"] == SPARE]
        voters_off = [m for m in members if m["role"] == VOTER and m not in on]
        standbys_off = [m for m in members if m["role"] == STANDBY and m not in on]
        if len(members) < MIN_VOTERS:
            demote = [m for m in members if m["role"] == VOTER and host_of(m) != leader]
            if not demote:
                return
            demote[0]["role"] = SPARE
        elif len(voters_on) < VOTERS:
            if not standbys_on + spares_on:
                return
            (standbys_on + spares_on)[0]["role"] = VOTER
        elif len(voters_on) > VOTERS:
            next(m for m in voters_on if host_of(m) != leader)["role"] = SPARE
        elif voters_off:
            voters_off[0]["role"] = SPARE
        elif len(standbys_on) < STANDBYS and spares_on:
            spares_on[0]["role"] = STANDBY
        elif len(standbys_on) > STANDBYS:
            standbys_on[-1]["role"] = SPARE
        elif standbys_off:
            standbys_off[0]["role"] = SPARE
        else:
            return


def startup_role(members: list[dict], joiner: dict, online: set[str]) -> None:
    """
    go-dqlite roles.go RolesChanges.Assume (app.go runs it at startup): a spare joining a cluster
    of 3 or more takes the voter or stand-by role it lacks. ``joiner`` is among ``members``.
    """
    if len(members) < MIN_VOTERS:
        return
    on = [m for m in members if host_of(m) in online]
    if sum(m["role"] == VOTER for m in on) < VOTERS:
        joiner["role"] = VOTER
    elif sum(m["role"] == STANDBY for m in on) < STANDBYS:
        joiner["role"] = STANDBY


def join(members: list[dict], address: str, online: set[str]) -> dict:
    """
    A control-plane node added by the leader: a spare (client.Add) that takes its startup role,
    then the others adjusted. ``online`` includes the joiner. Returns the joiner's member.
    """
    joiner = {"address": address, "role": SPARE}
    members.append(joiner)
    startup_role(members, joiner, online)
    adjust_roles(members, online, leader(members, online))
    return joiner


def leader(members: list[dict], online: set[str]) -> str | None:
    """The host that leads: the first voter online, in the order every node lists the members."""
    return next((host_of(m) for m in members if m["role"] == VOTER and host_of(m) in online), None)


def holds_copy(members: list[dict], host: str) -> bool:
    """Voters and stand-bys replicate the log; a spare does not (go-dqlite client NodeRole)."""
    return any(host_of(m) == host and m["role"] in (VOTER, STANDBY) for m in members)


def majority(members: list[dict], answering: set[str]) -> bool:
    """Whether a majority of the voters answers: what any read or write needs (Raft)."""
    voters = [host_of(m) for m in members if m["role"] == VOTER]
    return bool(voters) and 2 * sum(v in answering for v in voters) > len(voters)


def leader_without_successor(members: list[dict], own: set[str]) -> bool:
    """leave.py is_leader_without_successor: one voter, this node (any of ``own``), and other members."""
    voters = [m for m in members if m["role"] == VOTER]
    is_voter = any(host_of(m) in own for m in voters)
    return len(voters) == 1 and is_voter and len(members) > 1


def timed_out(args: list[str], names: list[str]) -> str:
    """
    kubectl's error when the API server's datastore has no quorum: the API server's 504, as
    kubectl prints it (helpers.go "Error from server (<reason>)"), naming what was asked.
    ``args``: kubectl's arguments; ``names``: its operands after the verb.
    """
    verb = args[0] if args and args[0] in ("get", "delete") else "patch"
    what = " ".join(["nodes", *names[1:]]) if verb == "get" else f"nodes {names[0] if names else ''}".strip()
    return f"Error from server (Timeout): {TIMED_OUT} ({verb} {what})"
