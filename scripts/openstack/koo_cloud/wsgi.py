"""The WSGI module gunicorn loads for every service: it hands the service the command line the
service expects, not gunicorn's, before importing the service's application.

Several services read sys.argv as their own (cinder's and octavia's API, nova's runner), and would
take gunicorn's options for theirs. KOO_WSGI_ARGV is the service's command line, as JSON;
KOO_WSGI_APP names its application, "module:attribute".
"""

import importlib
import json
import os
import sys

sys.argv = json.loads(os.environ["KOO_WSGI_ARGV"])
_module, _attribute = os.environ["KOO_WSGI_APP"].split(":")
application = getattr(importlib.import_module(_module), _attribute)
