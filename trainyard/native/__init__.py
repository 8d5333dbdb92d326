"""The compiled build: the hot modules of the engine, the placer and the simulator, compiled with mypyc.

A corner of its own, outside the layers it compiles: no package it compiles imports it, and it
imports none of them (import-linter holds both). The Python sources stay the only source.

- ``modules``: the one list of compiled modules (``COMPILED``) and where their sources and the
  build live; ``python -m trainyard.native.modules`` prints the sources, the Makefile's
  dependencies of the build.
- ``build``: ``python -m trainyard.native.build`` (run by ``make install``) compiles them into
  ``build/native/`` with a manifest of their sources' sha256, and installs the activation hook
  into the virtualenv (a ``.pth`` file).
- ``activation``: the one activation point. The hook puts a finder first on ``sys.meta_path``
  when the interpreter starts; it serves the compiled modules only while the manifest matches the
  sources, so the code reads as ordinary Python and no package ``__init__`` knows of the build.
  ``TRAINYARD_PURE_ENGINE=1`` forces pure Python; ``TRAINYARD_REQUIRE_COMPILED=1`` (set by
  ``make test``) makes a stale or missing build an ImportError naming what changed.

This ``__init__`` imports nothing: the hook runs in every interpreter of the virtualenv.
"""
