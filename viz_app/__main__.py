"""`python -m viz_app` is the `orchviz` command."""

import sys

from viz_app.cli import main

sys.exit(main())
