"""A training script as a user writes it, run as its own process by tests that
look at what the user sees (its stderr) and at what the bridge stores.

    python tests/script_trainer.py '{"project": "p", "run": "r", "init": {...}, "steps": [0, 100]}'

The spec (JSON): ``project``, ``run`` (the name, or null), ``init`` (keyword
arguments of ``curvestream.init``: settings, ``id``, ``resume``), either
``steps: [first, stop]`` (explicit steps, values :func:`value`) or ``implicit: n``
(n calls without a step, values ``value + i`` for the i-th), ``value`` (added
to every value, to tell sessions apart), ``writer``
(true: log through ``curvestream.tensorboard.SummaryWriter(log_dir)`` instead;
``log_dir`` names it) and ``hold`` (true: after logging, print ``logged`` and
wait to be killed instead of finishing). Prints one JSON line at the end: the
run's identity and name and the ``FinishReport``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time


def value(step: int, offset: float) -> float:
    return step * 0.5 + offset


def main() -> None:
    spec = json.loads(sys.argv[1])
    offset = float(spec.get("value", 0.0))
    if spec.get("writer"):
        from curvestream.tensorboard import SummaryWriter

        writer = SummaryWriter(spec["log_dir"], **spec.get("init", {}))
        first, stop = spec["steps"]
        for step in range(first, stop):
            writer.add_scalar("x", value(step, offset), step)
        writer.close()
        run, report = writer.run, writer.run.finish()
    else:
        import curvestream

        with curvestream.init(project=spec["project"], run=spec.get("run"), **spec.get("init", {})) as run:
            if "implicit" in spec:
                for i in range(spec["implicit"]):
                    run.log({"x": offset + i})
            else:
                first, stop = spec["steps"]
                for step in range(first, stop):
                    run.log({"x": value(step, offset)}, step=step)
            if spec.get("hold"):
                print("logged", flush=True)
                while True:
                    time.sleep(1)
        report = run.finish()  # finished by the with block already: its report
    print(json.dumps({"id": run.id, "name": run.display_name, "report": dataclasses.asdict(report)}), flush=True)


if __name__ == "__main__":
    main()
