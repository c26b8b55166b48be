"""GPU keys: the one name of a GPU, ``"<server>/gpu<k>"``, and its one parser.

A GPU is named by its server's id and its index ``k`` on that server
(``0 <= k < server.gpus``): ``"s3/gpu5"``.  Server ids never hold a
``/`` (validation refuses one), so the name splits at its last ``/gpu``.
Every module that writes a GPU's name uses [`gpu_key`][alloc.gpukey.gpu_key],
and every module that reads one uses [`GpuKey.parse`][alloc.gpukey.GpuKey.parse]
(or [`server_of`][alloc.gpukey.server_of] for its server alone).
"""
from __future__ import annotations

from typing import NamedTuple

#: What separates a server's id from a GPU's index in a GPU's name.
SEP = "/gpu"


def gpu_key(server: str, k: int) -> str:
    """The name of GPU ``k`` of server ``server``.

    Examples
    --------
    >>> gpu_key("s3", 5)
    's3/gpu5'
    """
    return f"{server}{SEP}{k}"


class GpuKey(NamedTuple):
    """A GPU's name read into its server's id and its index on the server.

    Examples
    --------
    >>> GpuKey.parse("rack1-s3/gpu5")
    GpuKey(server='rack1-s3', gpu=5)
    >>> str(GpuKey("s0", 2))
    's0/gpu2'
    """
    server: str
    gpu: int

    @classmethod
    def parse(cls, name: str) -> "GpuKey":
        """The key of a GPU name; ``ValueError`` naming it when it is no
        ``"<server>/gpu<k>"``.

        Examples
        --------
        >>> GpuKey.parse("s0/gpux")
        Traceback (most recent call last):
        ...
        ValueError: GPU name 's0/gpux': expected '<server>/gpu<k>'
        """
        server, sep, k = name.rpartition(SEP) if isinstance(name, str) else ("", "", "")
        if not sep or not server or not k.isdigit() or (len(k) > 1 and k[0] == "0"):
            raise ValueError(f"GPU name {name!r}: expected '<server>/gpu<k>'")
        return cls(server, int(k))

    def __str__(self) -> str:
        return gpu_key(self.server, self.gpu)


def server_of(name: str) -> str:
    """The id of the server a GPU name belongs to (the part before its last
    ``/gpu``; the whole name when it has none).

    Examples
    --------
    >>> server_of("s3/gpu5")
    's3'
    """
    return name.rpartition(SEP)[0] or name


__all__ = ["GpuKey", "SEP", "gpu_key", "server_of"]
