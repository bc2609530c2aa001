"""The ingest pipeline, one module per stage (see :mod:`.pipeline`)."""

from curvestream_bridge.ingest.listener import IngestListener
from curvestream_bridge.ingest.message import Kind, Message
from curvestream_bridge.ingest.pipeline import Ingest, Round

__all__ = ["Ingest", "IngestListener", "Kind", "Message", "Round"]
