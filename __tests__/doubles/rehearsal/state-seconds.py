"""Where the rehearsal's Salt states spent their time, from the Salt master's job cache.

Run on the Salt master by its onedir Python (`npm run rehearse` does, before destroy; a
directory given as the argument stands for the job cache). Salt 3007's local_cache returner
keeps each job's load (`.load.p`) and each minion's return (`<minion>/return.p`: the
function's `return`, its `retcode` and `success`; for state functions the return holds one
result per state with its `duration` in milliseconds; salt/returners/local_cache.py
`returner`). Prints JSON: the seconds of every state function (`module.function`) and of the
15 slowest state ids, summed over all hosts and jobs, and how many state runs each function had.
"""

import collections
import json
import os
import sys

import salt.payload

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/var/cache/salt/master/jobs"


def load(path):
    with open(path, "rb") as handle:
        return salt.payload.load(handle)


by_function = collections.Counter()
by_id = collections.Counter()
runs = collections.Counter()
for first in os.listdir(ROOT):
    for rest in os.listdir(os.path.join(ROOT, first)):
        job = os.path.join(ROOT, first, rest)
        if not os.path.isfile(os.path.join(job, ".load.p")):
            continue
        fun = load(os.path.join(job, ".load.p")).get("fun")
        if not isinstance(fun, str) or not fun.startswith("state."):
            continue
        for minion in os.listdir(job):
            returned = os.path.join(job, minion, "return.p")
            if not os.path.isfile(returned):
                continue
            results = load(returned)
            results = results.get("return") if isinstance(results, dict) else None
            if not isinstance(results, dict):
                continue
            for key, result in results.items():
                if not isinstance(result, dict) or "_|-" not in key:
                    continue
                module, state_id, *_, function = key.split("_|-")
                seconds = float(result.get("duration") or 0) / 1000
                by_function[f"{module}.{function}"] += seconds
                by_id[f"{module}:{state_id}"] += seconds
                runs[f"{module}.{function}"] += 1

print(
    json.dumps(
        {
            "byFunction": {name: [round(s, 1), runs[name]] for name, s in by_function.most_common()},
            "slowestIds": {name: round(s, 1) for name, s in by_id.most_common(15)},
        }
    )
)
