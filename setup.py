"""Installs syncdoctor-watch.pth next to the package (the zero-code start-up hook, syncdoctor.autowatch).

Everything else is in pyproject.toml. setuptools puts only packages into a wheel; these two commands add
the one file that must sit at the top of site-packages, in a regular and in an editable install.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "syncdoctor-watch.pth"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", PTH)


class BuildPyWithHook(build_py):
    """``build_py`` that also places the hook at the top of the build directory (so of the wheel)."""

    def run(self) -> None:
        super().run()
        self.copy_file(SOURCE, os.path.join(self.build_lib, PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


class EditableWheelWithHook(editable_wheel):
    """``pip install -e``: the editable wheel carries the hook too (it carries no build outputs)."""

    def _select_strategy(self, *args: Any, **kwargs: Any) -> Any:
        return _AddHook(super()._select_strategy(*args, **kwargs))


class _AddHook:
    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy

    def __enter__(self) -> _AddHook:
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.strategy.__exit__(*exc)

    def __call__(self, wheel: Any, files: Any, mapping: Any) -> None:
        self.strategy(wheel, files, mapping)
        with open(SOURCE, "rb") as hook:
            wheel.writestr(PTH, hook.read())


setup(cmdclass={"build_py": BuildPyWithHook, "editable_wheel": EditableWheelWithHook})
