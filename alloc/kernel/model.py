r"""The linear model every exact formulation in alloc is written in.

$$
\max\ (\text{or } \min)\quad c^\top x + c_0 \quad\text{s.t.}\quad
\ell^{row} \le A x \le u^{row},\qquad \ell \le x \le u,\qquad
x_j \in \mathbb{Z}\ (j \in I)
$$

Variables are columns ``0..n-1``; rows are added one at a time from a
``{column: coefficient}`` dict ([`LinearModel.add_row`][alloc.kernel.model.LinearModel.add_row]) or
as a block from
a sparse matrix ([`LinearModel.add_rows`][alloc.kernel.model.LinearModel.add_rows]).  The model
holds no solver
state: [`alloc.kernel.solve`][alloc.kernel.solve] builds the engine's own model from it, so
one model can be solved by HiGHS, CP-SAT or CBC, relaxed, re-bounded and solved
again.  A *hint* (a full or partial assignment) is passed to engines that take
one.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

INF = math.inf


class LinearModel:
    """A mixed-integer linear model (see the module notes).

    Parameters
    ----------
    name : str
        A label (shown in statistics and error messages).
    maximize : bool
        Objective sense (default: maximise).

    Attributes
    ----------
    obj_const : float
        Constant added to the objective.
    hint : dict[int, float]
        A (partial) assignment handed to engines that accept a start.
    """

    def __init__(self, name: str = "", maximize: bool = True):
        self.name = name
        self.maximize = maximize
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.names: list[str] = []
        self.obj: dict[int, float] = {}
        self.obj_const = 0.0
        self.hint: dict[int, float] = {}
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []
        # coefficients in coordinate form: python lists for rows added one at a
        # time, numpy chunks for blocks
        self._ri: list[int] = []
        self._ci: list[int] = []
        self._v: list[float] = []
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._csr: Any = None

    # ---------------------------------------------------------------- columns
    @property
    def n(self) -> int:
        """Number of variables."""
        return len(self.lb)

    @property
    def m(self) -> int:
        """Number of rows."""
        return len(self.row_lo)

    def add_var(self, lb: float = 0.0, ub: float = INF, integer: bool = False,
                obj: float = 0.0, name: str = "") -> int:
        """Add one variable; returns its column index."""
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.integer.append(bool(integer))
        self.names.append(name)
        k = len(self.lb) - 1
        if obj:
            self.obj[k] = float(obj)
        return k

    def add_vars(self, count: int, lb: ArrayLike = 0.0, ub: ArrayLike = INF,
                 integer: bool = False, obj: ArrayLike | None = None) -> np.ndarray:
        """Add ``count`` variables (bounds and objective scalars or arrays);
        returns their column indices."""
        first = self.n
        lb_a = np.broadcast_to(np.asarray(lb, dtype=float), (count,))
        ub_a = np.broadcast_to(np.asarray(ub, dtype=float), (count,))
        self.lb.extend(lb_a.tolist())
        self.ub.extend(ub_a.tolist())
        self.integer.extend([bool(integer)] * count)
        self.names.extend([""] * count)
        if obj is not None:
            o = np.broadcast_to(np.asarray(obj, dtype=float), (count,))
            for k in np.flatnonzero(o):
                self.obj[first + int(k)] = float(o[k])
        return np.arange(first, first + count)

    def set_bounds(self, var: int, lb: float | None = None, ub: float | None = None) -> None:
        """Change a variable's bounds (None keeps one)."""
        if lb is not None:
            self.lb[var] = float(lb)
        if ub is not None:
            self.ub[var] = float(ub)

    def set_objective(self, coefs: Mapping[int, float], const: float = 0.0) -> None:
        """Replace the objective."""
        self.obj = {int(k): float(v) for k, v in coefs.items() if v}
        self.obj_const = float(const)

    # ------------------------------------------------------------------- rows
    def add_row(self, coefs: Mapping[int, float], lo: float = -INF, hi: float = INF) -> int:
        """Add ``lo <= sum_k coefs[k] x_k <= hi``; returns the row index."""
        r = len(self.row_lo)
        for k, v in coefs.items():
            if v:
                self._ri.append(r)
                self._ci.append(int(k))
                self._v.append(float(v))
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))
        self._csr = None
        return r

    def add_rows(self, matrix: Any, lo: ArrayLike, hi: ArrayLike,
                 columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Add a block of rows ``lo <= matrix @ x[columns] <= hi`` (``matrix``
        a scipy sparse matrix or dense array; ``columns`` maps its columns to
        variables, default the first ones).  Returns the row indices."""
        from scipy import sparse
        A = sparse.coo_matrix(matrix)
        first = len(self.row_lo)
        cols = A.col if columns is None else np.asarray(columns, dtype=np.int64)[A.col]
        keep = A.data != 0
        self._chunks.append((A.row[keep].astype(np.int64) + first, cols[keep].astype(np.int64),
                             A.data[keep].astype(float)))
        nr = A.shape[0]
        self.row_lo.extend(np.broadcast_to(np.asarray(lo, dtype=float), (nr,)).tolist())
        self.row_hi.extend(np.broadcast_to(np.asarray(hi, dtype=float), (nr,)).tolist())
        self._csr = None
        return np.arange(first, first + nr)

    def set_row_bounds(self, row: int, lo: float | None = None, hi: float | None = None) -> None:
        """Change a row's bounds (None keeps one)."""
        if lo is not None:
            self.row_lo[row] = float(lo)
        if hi is not None:
            self.row_hi[row] = float(hi)

    def matrix(self) -> Any:
        """The coefficient matrix as a scipy CSR matrix (``m x n``)."""
        if self._csr is not None and self._csr.shape == (self.m, self.n):
            return self._csr
        from scipy import sparse
        ri = [np.asarray(self._ri, dtype=np.int64)] + [c[0] for c in self._chunks]
        ci = [np.asarray(self._ci, dtype=np.int64)] + [c[1] for c in self._chunks]
        vv = [np.asarray(self._v, dtype=float)] + [c[2] for c in self._chunks]
        A = sparse.csr_matrix((np.concatenate(vv), (np.concatenate(ri), np.concatenate(ci))),
                              shape=(self.m, self.n))
        A.sum_duplicates()
        self._csr = A
        return A

    def rows(self) -> Iterable[tuple[dict[int, float], float, float]]:
        """Each row as ``(coefs, lo, hi)`` (for engines built row by row)."""
        A = self.matrix()
        for r in range(self.m):
            a, b = A.indptr[r], A.indptr[r + 1]
            yield (dict(zip(A.indices[a:b].tolist(), A.data[a:b].tolist())),
                   self.row_lo[r], self.row_hi[r])

    # ------------------------------------------------------------------ values
    def objective_vector(self) -> np.ndarray:
        """The objective coefficients as a dense vector."""
        c = np.zeros(self.n)
        for k, v in self.obj.items():
            c[k] = v
        return c

    def value(self, x: Sequence[float] | np.ndarray) -> float:
        """Objective value of an assignment."""
        return self.obj_const + sum(v * float(x[k]) for k, v in self.obj.items())

    def feasible(self, x: Sequence[float] | np.ndarray, tol: float = 1e-6) -> bool:
        """True when ``x`` meets every bound, row and integrality."""
        xa = np.asarray(x, dtype=float)
        if xa.shape != (self.n,):
            return False
        lb, ub = np.asarray(self.lb), np.asarray(self.ub)
        if (xa < lb - tol).any() or (xa > ub + tol).any():
            return False
        ints = np.asarray(self.integer, dtype=bool)
        if ints.any() and (np.abs(xa[ints] - np.round(xa[ints])) > tol).any():
            return False
        if self.m:
            ax = self.matrix() @ xa
            lo, hi = np.asarray(self.row_lo), np.asarray(self.row_hi)
            scale = tol * np.maximum(1.0, np.abs(ax))
            if (ax < lo - scale).any() or (ax > hi + scale).any():
                return False
        return True

    def copy(self) -> "LinearModel":
        """An independent copy (rows, bounds, objective, hint)."""
        out = LinearModel(self.name, self.maximize)
        out.lb, out.ub = list(self.lb), list(self.ub)
        out.integer, out.names = list(self.integer), list(self.names)
        out.obj, out.obj_const, out.hint = dict(self.obj), self.obj_const, dict(self.hint)
        out.row_lo, out.row_hi = list(self.row_lo), list(self.row_hi)
        out._ri, out._ci, out._v = list(self._ri), list(self._ci), list(self._v)
        out._chunks = list(self._chunks)
        return out

    def __repr__(self) -> str:
        kind = "MIP" if any(self.integer) else "LP"
        return f"<LinearModel {self.name!r} {kind}: {self.n} variables, {self.m} rows>"


__all__ = ["INF", "LinearModel"]
