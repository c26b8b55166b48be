r"""Themis' partial-allocation auction (Mahajan et al., NSDI'20, after Cole,
Gkatzelis and Goel's Partial Allocation mechanism, EC'13).

The goods are the offered GPUs, grouped into *classes* of interchangeable
GPUs (every bidder values each GPU of a class the same; `classes`); a class
$s$ has supply $g_s$ GPUs.  A bidder's valuation is additive over the GPUs
it receives and placement-sensitive: $w_{is} \ge 0$ is the throughput one
GPU of class $s$ adds to app $i$ (`alloc.sched.themis.policy` derives it
from whether the GPU's server can hold the app's gang), so with $x_{is}$
GPUs of class $s$ its utility is $u_i(x) = \sum_s w_{is} x_{is}$.

1. **Proportional fairness.**  The auction's allocation $x^*$ maximises
   the Nash welfare $\sum_i \log u_i(x)$ subject to
   $\sum_i x_{is} \le g_s$, $x \ge 0$ (the Eisenberg-Gale program).  For
   additive valuations it is the competitive equilibrium from equal
   incomes: with prices $p_s$ every bidder spends its unit budget only on
   classes of maximal $w_{is}/p_s$ and every class with a bidder who values
   it is sold.  Hence $x^*$ is **Pareto-efficient** (first welfare
   theorem) and **envy-free** ($u_i(x^*_i) \ge u_i(x^*_j)$: each bidder can
   afford every other's bundle).  Proportional response dynamics (Wu and
   Zhang, STOC'07: bids $b_{is} \leftarrow u_i^{-1} w_{is} x_{is}$, prices
   $p_s = \sum_i b_{is}$, $x_{is} = g_s b_{is}/p_s$) find who buys what;
   the equilibrium on that support is then solved exactly
   (`proportionally_fair`).
2. **Hidden payments.**  Bidder $i$ keeps the fraction
   $$f_i = \frac{\prod_{j \ne i} u_j(x^*_j)}{\prod_{j \ne i} u_j(x^{*,-i}_j)} \le 1$$
   of $x^*_i$, where $x^{*,-i}$ is the proportionally fair allocation
   without $i$: the loss $i$'s presence causes the others.  This makes
   truthful bidding a dominant strategy (the PA mechanism's guarantee).
3. **Leftovers.**  What the payments withhold, $\sum_i (1 - f_i) x^*_i$,
   and the GPUs no bidder values are returned as ``leftover`` for the apps
   outside the auction (Themis allocates them in a work-conserving way).

The auction's properties are the tests' (`tests/test_themis.py`): Pareto
efficiency of $x^*$ (checked by a linear program: no allocation raises
every utility by more than the tolerance and one strictly), envy-freeness
of $x^*$, $0 \le f_i \le 1$, and supplies respected after payments.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Tolerance of the last-resort solver (SLSQP's ftol is its square).
TOL = 1e-7


@dataclass(frozen=True)
class Auction:
    """One auction's outcome.

    Attributes
    ----------
    pf : numpy.ndarray
        $x^*$, GPUs of each class to each bidder (bidders x classes).
    kept : numpy.ndarray
        What each bidder keeps after its hidden payment, $f_i x^*_i$.
    fraction : numpy.ndarray
        $f_i$ per bidder.
    prices : numpy.ndarray
        The equilibrium prices of the classes (unit budgets).
    leftover : numpy.ndarray
        GPUs of each class the bidders do not keep.
    utility : numpy.ndarray
        $u_i(x^*_i)$ per bidder.
    """
    pf: np.ndarray
    kept: np.ndarray
    fraction: np.ndarray
    prices: np.ndarray
    leftover: np.ndarray
    utility: np.ndarray


_CACHE: dict = {}
#: Markets whose answer is kept (a scheduler asks again while nothing changes).
CACHE_SIZE = 4096


def proportionally_fair(w: np.ndarray, supply: np.ndarray, tol: float = TOL
                        ) -> tuple[np.ndarray, np.ndarray]:
    """`_proportionally_fair`, remembered for the last `CACHE_SIZE` markets."""
    w = np.ascontiguousarray(w, dtype=float)
    g = np.ascontiguousarray(supply, dtype=float)
    key = (w.shape, w.tobytes(), g.tobytes(), tol)
    hit = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        hit = _CACHE[key] = _proportionally_fair(w, g, tol)
    return hit[0].copy(), hit[1].copy()


def _proportionally_fair(w: np.ndarray, supply: np.ndarray, tol: float = TOL
                         ) -> tuple[np.ndarray, np.ndarray]:
    r"""$x^*$ and the prices for valuations ``w`` (bidders x classes,
    >= 0) and ``supply`` (GPUs per class).

    Proportional response dynamics approach the equilibrium; its *support*
    (who buys what) is then read off and the equilibrium on it solved
    exactly: on each connected component of the support the prices follow
    $p_s = w_{is} / \alpha_i$ from one bidder's bang per buck
    $\alpha_i$, scaled so that the component's GPUs cost its bidders'
    budgets, and the spending is the flow that meets every budget and every
    class's revenue (`_support_equilibrium`).  The result is accepted only
    when it is an equilibrium (nobody prefers a class outside its support,
    nothing negative, supplies met); otherwise the dynamics run longer, and
    scipy's SLSQP on the Eisenberg-Gale program is the last resort.  A
    bidder that values nothing available gets nothing (its utility is 0
    whatever it gets); a class no bidder values stays unsold (price 0).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.themis.auction import proportionally_fair
    >>> x, p = proportionally_fair(np.array([[1.0, 1.0], [1.0, 0.0]]), np.array([2.0, 2.0]))
    >>> np.round(x, 9).tolist(), np.round(p, 9).tolist()  # bidder 2 values only class 0
    ([[0.0, 2.0], [2.0, 0.0]], [0.5, 0.5])
    """
    w = np.asarray(w, dtype=float)
    g = np.asarray(supply, dtype=float)
    n, m = w.shape
    x = np.zeros((n, m))
    prices = np.zeros(m)
    avail = g > 0
    live = (w[:, avail] > 0).any(axis=1) if avail.any() else np.zeros(n, bool)
    if not live.any():
        return x, prices
    sold = avail & (w[live] > 0).any(axis=0)
    W = w[np.ix_(live, sold)]
    G = g[sold]
    if W.shape[1] == 1:             # one class: equal budgets buy equal shares
        k = W.shape[0]
        x[np.ix_(live, sold)] = G[0] / k
        prices[sold] = k / G[0]
        return x, prices
    b = W * G
    b /= b.sum(axis=1, keepdims=True)
    out = None
    for rounds in (0, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120):
        for _ in range(rounds):
            p = b.sum(axis=0)
            xx = b / p * G
            u = (W * xx).sum(axis=1)
            b = W * xx / u[:, None]
        for cut in (1e-3, 1e-6):
            out = _support_equilibrium(W, G, b, cut)
            if out is not None:
                break
        if out is not None:
            break
    if out is None:
        out = _slsqp(W, G, b, tol)
    xx, pp = out
    x[np.ix_(live, sold)] = xx
    prices[sold] = pp
    return x, prices


def _support_equilibrium(W, G, b, cut):
    """`_on_support` on the whole support, else on a spanning forest of it."""
    return _on_support(W, G, b, cut, False) or _on_support(W, G, b, cut, True)


def _on_support(W, G, b, cut, forest):
    """The exact equilibrium on the support of the spending ``b`` (the edges
    carrying more than ``cut`` of a budget or of a class's revenue; see
    `proportionally_fair`), or None when it is not one."""
    k, c = W.shape
    spend = b / b.sum(axis=0)[None, :]          # share of each class's revenue
    cand = (b > cut) | (spend > cut)
    if not forest:
        return _propagate(W, G, cand)
    # a spanning forest of the support, heaviest spending first: an
    # equilibrium with a forest support always exists
    parent = list(range(k + c))

    def root(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v
    edge = np.zeros((k, c), dtype=bool)
    for i, sv in sorted(zip(*np.nonzero(cand)), key=lambda e: -b[e[0], e[1]]):
        ri, rs = root(int(i)), root(k + int(sv))
        if ri != rs:
            parent[ri] = rs
            edge[i, sv] = True
    return _propagate(W, G, edge)


def _propagate(W, G, edge):
    """Prices from the bang per buck along the support ``edge``, scaled to
    the budgets per component, and the spending flow; None when that is not
    an equilibrium."""
    k, c = W.shape
    alpha = np.full(k, np.nan)
    price = np.full(c, np.nan)
    comps = []
    for i0 in range(k):
        if not np.isnan(alpha[i0]):
            continue
        alpha[i0] = 1.0
        bid, cls, stack = [i0], [], [("b", i0)]
        while stack:
            kind, v = stack.pop()
            if kind == "b":
                for sv in np.flatnonzero(edge[v]):
                    pv = W[v, sv] / alpha[v]
                    if np.isnan(price[sv]):
                        price[sv] = pv
                        cls.append(sv)
                        stack.append(("c", sv))
                    elif abs(price[sv] - pv) > 1e-7 * max(pv, price[sv]):
                        return None
            else:
                for iv in np.flatnonzero(edge[:, v]):
                    av = W[iv, v] / price[v]
                    if np.isnan(alpha[iv]):
                        alpha[iv] = av
                        bid.append(iv)
                        stack.append(("b", iv))
                    elif abs(alpha[iv] - av) > 1e-7 * max(av, alpha[iv]):
                        return None
        scale = len(bid) / float(sum(G[s] * price[s] for s in cls)) if cls else 0.0
        if not cls:
            return None
        for s in cls:
            price[s] *= scale
        for i in bid:
            alpha[i] /= scale
        comps.append((bid, cls))
    if np.isnan(price).any():
        return None
    if (W / price[None, :] > alpha[:, None] * (1 + 1e-7)).any():
        return None                              # someone prefers a class it does not buy
    flow = np.zeros((k, c))
    for bid, cls in comps:
        f = _flow(edge, bid, cls, G * price)
        if f is None:
            return None
        flow += f
    x = flow / price[None, :]
    return x, price


def _flow(edge, bid, cls, revenue):
    """Spending on the support's edges meeting unit budgets and the revenues:
    leaf by leaf on a forest, by a linear program otherwise."""
    pairs = [(i, s) for i in bid for s in cls if edge[i, s]]
    if len(pairs) == len(bid) + len(cls) - 1:       # a tree: peel the leaves
        need = {("b", i): 1.0 for i in bid}
        need.update({("c", s): float(revenue[s]) for s in cls})
        adj: dict = {v: set() for v in need}
        for i, s in pairs:
            adj[("b", i)].add(("c", s))
            adj[("c", s)].add(("b", i))
        out = np.zeros(edge.shape)
        leaves = [v for v, a in adj.items() if len(a) == 1]
        while leaves:
            v = leaves.pop()
            if not adj[v]:
                continue
            u = adj[v].pop()
            adj[u].discard(v)
            amt = need[v]
            need[u] -= amt
            need[v] = 0.0
            i, s = (v[1], u[1]) if v[0] == "b" else (u[1], v[1])
            out[i, s] = amt
            if len(adj[u]) == 1:
                leaves.append(u)
        scale = max(1.0, float(revenue[cls].sum()))
        if min(out[i, s] for i, s in pairs) < -1e-9 * scale or \
                max(abs(x) for x in need.values()) > 1e-7 * scale:
            return None
        return np.maximum(out, 0.0)
    from scipy.optimize import linprog
    A, rhs = [], []
    for i in bid:
        A.append([1.0 if a == i else 0.0 for a, _ in pairs])
        rhs.append(1.0)
    for s in cls:
        A.append([1.0 if t == s else 0.0 for _, t in pairs])
        rhs.append(revenue[s])
    res = linprog(np.zeros(len(pairs)), A_eq=np.array(A), b_eq=np.array(rhs), bounds=(0, None),
                  method="highs")
    if res.status != 0:
        return None
    out = np.zeros(edge.shape)
    for (i, s), v in zip(pairs, res.x):
        out[i, s] = max(v, 0.0)
    return out


def _slsqp(W, G, b, tol):
    from scipy.optimize import minimize
    k, c = W.shape
    x0 = np.maximum((b / b.sum(axis=0) * G).ravel(), 1e-12)

    def f(z):
        return -float(np.log(np.maximum((W * z.reshape(k, c)).sum(axis=1), 1e-300)).sum())

    def grad(z):
        u = (W * z.reshape(k, c)).sum(axis=1)
        return (-W / np.maximum(u, 1e-300)[:, None]).ravel()

    A = np.zeros((c, k * c))
    for j in range(c):
        A[j, j::c] = 1.0
    cons = {"type": "ineq", "fun": lambda z: G - A @ z, "jac": lambda z: -A}
    res = minimize(f, x0, jac=grad, bounds=[(0.0, None)] * (k * c), constraints=[cons],
                   method="SLSQP", options={"ftol": tol * tol, "maxiter": 1000})
    xx = np.maximum(res.x.reshape(k, c), 0.0)
    xx /= np.maximum(xx.sum(axis=0) / G, 1.0)[None, :]
    u = (W * xx).sum(axis=1)
    return xx, (W / u[:, None]).max(axis=0)


def partial_allocation(w, supply, tol: float = TOL) -> Auction:
    r"""The partial-allocation auction (module notes) for valuations ``w``
    (bidders x classes) and ``supply`` (GPUs per class).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.themis.auction import partial_allocation
    >>> a = partial_allocation(np.array([[1.0], [1.0]]), np.array([4.0]))
    >>> a.pf.ravel().round(6).tolist(), a.fraction.round(6).tolist()
    ([2.0, 2.0], [0.5, 0.5])
    >>> float(a.leftover.sum().round(6))     # the hidden payments
    2.0
    """
    w = np.asarray(w, dtype=float)
    g = np.asarray(supply, dtype=float)
    if w.ndim != 2 or g.ndim != 1 or w.shape[1] != g.shape[0]:
        raise ValueError(f"auction: expected valuations (bidders x classes) and one supply per "
                         f"class, got {w.shape} and {g.shape}")
    if (w < 0).any() or (g < 0).any() or not np.isfinite(w).all() or not np.isfinite(g).all():
        raise ValueError("auction: expected finite valuations and supplies >= 0")
    n = w.shape[0]
    x, prices = proportionally_fair(w, g, tol)
    u = (w * x).sum(axis=1)
    frac = np.zeros(n)
    for i in range(n):
        if u[i] <= 0:
            continue
        others = np.arange(n) != i
        xi, _ = proportionally_fair(w[others], g, tol)
        ui = (w[others] * xi).sum(axis=1)
        with_i = u[others]
        pos = ui > 0
        # prod_j with_i / prod_j without_i, in logs; bidders nobody serves count as 1
        frac[i] = min(1.0, float(np.exp(np.sum(np.log(np.where(pos, with_i, 1.0)))
                                        - np.sum(np.log(np.where(pos, ui, 1.0))))))
    kept = x * frac[:, None]
    leftover = np.maximum(g - kept.sum(axis=0), 0.0)
    return Auction(x, kept, frac, prices, leftover, u)


def envy(w, x) -> float:
    r"""The largest envy $\max_{i,j} (u_i(x_j) - u_i(x_i)) / u_i(x_i)$ (<= 0:
    envy-free); bidders with zero utility and zero valuation are skipped.

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.themis.auction import envy
    >>> envy(np.array([[1.0], [1.0]]), np.array([[1.0], [3.0]]))   # bidder 0 envies 1
    2.0
    """
    w, x = np.asarray(w, float), np.asarray(x, float)
    U = w @ x.T                   # U[i, j] = u_i(x_j)
    own = np.diag(U)
    worst = -np.inf
    for i in range(len(own)):
        if w[i].sum() <= 0:
            continue
        worst = max(worst, float(((U[i] - own[i]) / max(own[i], 1e-300)).max()))
    return worst


def pareto_gain(w, x, supply) -> float:
    r"""The most total utility any allocation can add while lowering no
    bidder's utility (a linear program; 0: $x$ is Pareto-efficient).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.themis.auction import pareto_gain
    >>> w = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(pareto_gain(w, np.array([[0.0, 1.0], [1.0, 0.0]]), [1.0, 1.0]), 9)  # swap
    2.0
    """
    from scipy.optimize import linprog
    w, x, g = np.asarray(w, float), np.asarray(x, float), np.asarray(supply, float)
    n, m = w.shape
    u = (w * x).sum(axis=1)
    c = -np.tile(w, 1).ravel()               # maximise sum_i sum_s w_is y_is
    A, b = [], []
    for s in range(m):                       # supply
        row = np.zeros(n * m)
        row[s::m] = 1.0
        A.append(row)
        b.append(g[s])
    for i in range(n):                       # u_i(y) >= u_i(x)
        row = np.zeros(n * m)
        row[i * m:(i + 1) * m] = -w[i]
        A.append(row)
        b.append(-u[i])
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=(0, None), method="highs")
    if res.status != 0:
        return 0.0
    return float(-res.fun - u.sum())


__all__ = ["Auction", "envy", "pareto_gain", "partial_allocation", "proportionally_fair"]
