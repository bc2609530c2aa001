"""curvestream's wire contract, shared by trainers (``curvestream``) and bridges
(``curvestream_bridge``): the generated protobuf modules (:mod:`.v1`), topic
names (:mod:`.topics`), name rules (:mod:`.names`), sets of sequence numbers
(:mod:`.seqset`), the one MQTT connection helper (:mod:`.mqtt`), the one
retry delay (:mod:`.backoff`) and the binary stream of exported points
(:mod:`.pointstream`).

Importing it has no side effects: no hooks, no threads, no logging set-up.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
