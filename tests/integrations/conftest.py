"""The drop-in tests run real frameworks on the CPU; Keras 3 on its torch backend
(set before anything imports keras)."""

import os

os.environ.setdefault("KERAS_BACKEND", "torch")
