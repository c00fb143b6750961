"""`python -m policyext.cli`, as the `policyext` console script."""

import sys

from policyext.cli import main

sys.exit(main())
