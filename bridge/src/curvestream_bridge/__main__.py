"""``python -m curvestream_bridge``: the bridge's command line (see ``cli.py``)."""

from curvestream_bridge.cli import main

main()
