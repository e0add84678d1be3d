"""`backfill-platform`: the command line of the platform.

`app` holds the command group; each module registers its commands on it when imported.
"""

from backfill_platform.cli import (  # noqa: F401 - importing registers the commands
    backfill_commands,
    erasure_commands,
    production_commands,
    replay_command,
    setup_commands,
)
from backfill_platform.cli.app import main

__all__ = ["main"]
