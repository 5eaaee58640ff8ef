"""``vigil run`` as a program of its own, for ``python -m vigil.pipeline`` and for ``spark-submit``.

``python -m vigil.pipeline ARGS`` is ``vigil run ARGS``. ``spark-submit`` takes the path of a
Python file, not a module: this file is that program, and ``python -m vigil.pipeline --where``
prints its path::

    spark-submit --master spark://host:7077 "$(python -m vigil.pipeline --where)" --stream ... --out ...

Run as a script, Python puts this file's folder first on ``sys.path``, where ``cli.py``,
``config.py``, ``session.py`` ... would shadow top-level modules of those names: that entry is
removed before anything is imported.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
    sys.path.pop(0)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--where"]:
        print(os.path.abspath(__file__))
        return
    from vigil.cli import app

    app(["run", *args], prog_name="vigil")


if __name__ == "__main__":
    main()
