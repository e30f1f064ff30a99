#!/usr/bin/env python3
"""
The L4 fake microk8s' program, which each fake node's microk8s and snap link to
(harness/microk8s_node.py): fake_microk8s.py run as an imported module, whose bytecode Python
keeps in __pycache__, where a script is compiled again at every run (about 20 ms of its 1,100
lines, for each of the thousands of runs the Salt tests make). The name it was run by, argv[0],
still chooses between microk8s and snap.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_microk8s

sys.exit(fake_microk8s.main(sys.argv))
