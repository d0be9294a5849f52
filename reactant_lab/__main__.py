"""``python -m reactant_lab``: the reactant-lab command."""

import sys

from reactant_lab.cli import main

sys.exit(main())
