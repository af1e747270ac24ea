"""The kit's pytest plugin (entry point ``pytest11``): only the command-line options and the
marker, so loading it in any pytest run costs nothing; the kit's fixtures and hooks live in the
kit's own conftest.py and apply to its tests only."""
from __future__ import annotations


def pytest_addoption(parser) -> None:
    g = parser.getgroup("grilly", "grilly backend conformance kit")
    g.addoption("--grilly-device", default=None,
                help="the device the kit tests (cpu, vulkan, vulkan:1, ...); default: grilly's default")
    g.addoption("--grilly-xfails", default=None,
                help="a file of kit test ids (one per line, # comments) expected to fail")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "kernels(*names, family=None): the contract kernels a kit "
                                       "test exercises (its family: the first kernel's)")
