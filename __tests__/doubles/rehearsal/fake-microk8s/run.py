#!/usr/bin/python3
"""
The fake microk8s' program, which microk8s and snap link to (install.sh): microk8s.py run as an
imported module, whose bytecode Python keeps in __pycache__, where a script is compiled again at
every run (about 30 ms of its 1,700 lines, for each of the hundreds of runs a rehearsal makes).
The name it was run by, argv[0], still chooses between microk8s and snap.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import microk8s

sys.exit(microk8s.main(sys.argv))
