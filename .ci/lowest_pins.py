"""Print the runtime dependencies of pyproject.toml pinned to their declared lower bounds
(``numpy>=1.26`` and ``bokeh>=3.1,<3.10`` become ``numpy==1.26`` and ``bokeh==3.1``; an exact pin stays), one a line, for pip's ``-r``: CI installs them to check
that the bounds are true."""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"]:
    # name>=low, name>=low,<high, or name==version (an exact pin is its own lower bound)
    found = re.fullmatch(r"([A-Za-z0-9_.\-]+(?:\[[^\]]*\])?)\s*(?:>=|==)\s*([0-9][0-9A-Za-z.]*)\s*(?:,\s*<[^,]+)?",
                         requirement.strip())
    if found is None:
        sys.exit(f"dependency {requirement!r} declares no lower bound of the form name>=version")
    print(f"{found[1]}=={found[2]}")
